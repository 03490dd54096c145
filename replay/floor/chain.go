package floor

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shunt-net/shunt/page"
)

// The chain bound (Config.Chain). Critical and Links give every object its
// earliest request as if its ancestors had every path to themselves, so
// within a cap they do not charge the round trips a capped placement
// costs: an ancestor kept off the capped (fast) path delays its children by
// the other path's RTT. The exact bound, the best placement of whole
// objects and byte ranges with a shared cap along chains, is a discrete
// time-cost trade-off (NP-hard in general); this is a lower bound on it,
// from two facts every load obeys:
//
//  1. An object is asked for only once every object it needs (needs: its
//     download waits for their downloads to complete, through the graph's
//     dependencies) has all its bytes, and those bytes, within the caps,
//     cannot all have arrived before the links' bound of that set alone.
//     So that bound is a later earliest request (ready) for the object,
//     which the links' bound of the page then uses.
//  2. With one capped path, the capped bytes a set U of needed objects
//     takes are not there for the objects W that need all of U: if U
//     carries b capped bytes, W's bytes arrive no sooner than the links'
//     bound of W asked for at the earliest at U's bound with a cap of b,
//     with a cap of B - b. Over a grid of b, the least of these is a bound
//     (stage).
//
// Each is a bound for every placement, so their maximum with Critical and
// Links is one too.

// needs returns, per object, the objects whose downloads must be complete
// before its download may start.
func needs(p *page.Page) [][]bool {
	n := len(p.Activities)
	in := make([][]page.Dep, n)
	for _, d := range p.Deps {
		in[d.To] = append(in[d.To], d)
	}
	// done[a]: activities that must complete before a starts.
	done := make([][]bool, n)
	var visit func(a int) []bool
	visit = func(a int) []bool {
		if done[a] != nil {
			return done[a]
		}
		set := make([]bool, n)
		done[a] = set // the graph is acyclic (the walker checks it)
		for _, d := range in[a] {
			for x, ok := range visit(d.From) {
				set[x] = set[x] || ok
			}
			// An on-start dependency needs only what its From needs.
			if !d.OnStart {
				set[d.From] = true
			}
		}
		return set
	}
	out := make([][]bool, len(p.Objects))
	for o, obj := range p.Objects {
		out[o] = make([]bool, len(p.Objects))
		for a, ok := range visit(obj.Download) {
			if ok && p.Activities[a].Kind == page.Download {
				out[o][p.Activities[a].Object] = true
			}
		}
	}
	return out
}

// setKey names a set of objects, for caching bounds by set.
func setKey(set []bool) string {
	var b strings.Builder
	for i, ok := range set {
		if ok {
			b.WriteString(strconv.Itoa(i))
			b.WriteByte(',')
		}
	}
	return b.String()
}

// stageSteps is the grid of the capped bytes a needed set may take (fact 2).
const stageSteps = 16

// chain tightens r (Critical and Ready from critical) by facts 1 and 2 and
// returns the bound on the counted objects: the later of the links' bound
// with the later ready times and the stages' bound.
func chain(p *page.Page, c Config, r *Result) (time.Duration, error) {
	need := needs(p)
	total := p.TotalSize()
	caps := c.caps(total)
	ready := slices.Clone(r.Ready)
	order := make([]int, len(p.Objects))
	size := make([]int, len(p.Objects))
	for o := range order {
		order[o] = o
		for _, ok := range need[o] {
			if ok {
				size[o]++
			}
		}
	}
	// An object needs a strict superset of what each object it needs needs.
	slices.SortStableFunc(order, func(a, b int) int { return size[a] - size[b] })
	done := map[string]time.Duration{}
	for _, o := range order {
		if size[o] == 0 {
			continue
		}
		k := setKey(need[o])
		t, ok := done[k]
		if !ok {
			var err error
			if t, err = links(p, c, ready, need[o], caps); err != nil {
				return 0, err
			}
			done[k] = t
		}
		r.Ready[o] = max(r.Ready[o], t)
		ready[o] = r.Ready[o]
	}
	in := c.counted(p)
	bound, err := links(p, c, ready, in, caps)
	if err != nil {
		return 0, err
	}
	capped := -1
	for i := range c.Paths {
		if c.share(i) < 1 {
			if capped >= 0 {
				return bound, nil // fact 2 with one capped path only
			}
			capped = i
		}
	}
	if capped < 0 {
		return bound, nil
	}
	seen := map[string]bool{}
	for o := range p.Objects {
		k := setKey(need[o])
		if size[o] == 0 || seen[k] {
			continue
		}
		seen[k] = true
		s, err := stage(p, c, ready, need[o], need, in, caps, capped)
		if err != nil {
			return 0, err
		}
		bound = max(bound, s)
	}
	return bound, nil
}

// stage is fact 2's bound for the needed set u: the counted objects that
// need all of u (w) cannot have all arrived before it.
func stage(p *page.Page, c Config, ready []time.Duration, u []bool, need [][]bool, in []bool, caps []int64, capped int) (time.Duration, error) {
	w := make([]bool, len(p.Objects))
	some := false
	for o := range p.Objects {
		if !in[o] || p.Objects[o].Size <= 0 {
			continue
		}
		w[o] = true
		for x, ok := range u {
			if ok && !need[o][x] {
				w[o] = false
				break
			}
		}
		some = some || w[o]
	}
	if !some {
		return 0, nil
	}
	budget := caps[capped]
	at := func(k int) int64 { return budget * int64(k) / stageSteps }
	// U taking b in [at(k), at(k+1)]: U is done no sooner than its bound
	// with at(k+1) (a larger cap can only help it), and W has at most
	// budget - at(k) left.
	best := time.Duration(-1)
	for k := 0; k < stageSteps; k++ {
		uc := slices.Clone(caps)
		uc[capped] = at(k + 1)
		tu, err := links(p, c, ready, u, uc)
		if err != nil {
			continue // u's pinned bytes do not fit this cap: no load takes so few
		}
		later := slices.Clone(ready)
		for o := range later {
			if w[o] {
				later[o] = max(later[o], tu)
			}
		}
		wc := slices.Clone(caps)
		wc[capped] = budget - at(k)
		tw, err := links(p, c, later, w, wc)
		if err != nil {
			continue
		}
		if best < 0 || tw < best {
			best = tw
		}
	}
	return max(best, 0), nil
}
