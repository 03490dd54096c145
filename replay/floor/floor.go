// Package floor computes a lower bound on a page load's time over one or
// more paths from the page's dependency graph and each path's rate and
// round-trip time: what no placement of the page's objects on the paths can
// beat, optionally with a cap on the share of the page's bytes a path may
// carry (issue 19: at most 25 % on the expensive path), or what one given
// placement (Config.Pin) cannot beat.
//
// The model is optimistic at every step, so its answer is a bound, not a
// prediction:
//   - a path delivers its Rate of body bytes from its first byte on (no
//     slow start, no queueing, no loss; what headers take is the caller's
//     to leave out of Rate);
//   - every path starts its handshakes when the load starts and carries its
//     first request Setup round trips later; a response's first byte comes
//     one RTT after its request, the server answering at once;
//   - an object may be split over the paths in any proportion (ranges) and
//     every part is asked for as soon as the graph lets the object start;
//   - computations take no time, or their recorded time with Compute, as
//     the replay walks them (package replay's Walker, on a fake clock).
//
// The bound is the later of two: the critical path, every download as fast
// as all paths together could deliver it with nothing else on them; and the
// links' capacity, every byte arriving no sooner than its object's earliest
// request plus its path's RTT, each path at its rate, within the caps (a
// flow over the paths' time slots). Each is a lower bound on any real load's
// time, so their maximum is one too.
package floor

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
)

// Path is one path of the model.
type Path struct {
	Name string
	Rate float64 // bytes per second the path delivers to the client
	RTT  time.Duration
	// Setup is the round trips before the path carries a request: 2 for TCP
	// and a full TLS 1.3 handshake, 1 for cleartext HTTP/2.
	Setup int
	// Window, if > 0, adds TCP's slow start: the packets the path's sender
	// may have delivered in the round trip from its first response byte
	// (arrival(0)) on, at most its initial window plus the handshake's
	// packets acknowledged by then; each later round trip at most twice
	// the one before (upTo). Segment is the body bytes a packet carries at
	// most. 0: the rate from the first byte on, as without slow start.
	Window  int
	Segment int
}

// upTo is the most body bytes the path can have delivered by t. Without a
// window, any number (the rate binds in the flow). With one: the sender's
// window grows by at most one packet per packet acknowledged (slow start),
// and a packet's acknowledgement comes a round trip after it was sent, so
// the packets sent by t are at most the initial window plus twice those
// sent by t - RTT; its first request's bytes leave no sooner than the
// request arrives, so by the end of the k-th round trip from arrival(0)
// the path has delivered at most Window * (2^(k+1) - 1) packets, and from
// the start of any round trip on at most Rate more a second.
func (p Path) upTo(t time.Duration) float64 {
	if p.Window <= 0 {
		return math.Inf(1)
	}
	x := (t - p.arrival(0)).Seconds()
	if x <= 0 {
		return 0
	}
	rtt, seg := p.RTT.Seconds(), float64(p.Window)*float64(p.Segment)
	k := math.Floor(x / rtt)
	most := seg * (math.Exp2(k+1) - 1)
	for j := 0.0; j <= k; j++ {
		before := seg * (math.Exp2(j) - 1) // by the start of round trip j
		if before >= most {
			break // later round trips start above what is already bound
		}
		most = min(most, before+p.Rate*(x-j*rtt))
	}
	return most
}

// arrival is the earliest a byte of a response asked for at ready can reach
// the client over p.
func (p Path) arrival(ready time.Duration) time.Duration {
	return max(ready, time.Duration(p.Setup)*p.RTT) + p.RTT
}

// Config is the network and the rules of a bound.
type Config struct {
	Paths []Path
	// MaxShare caps the share of the page's bytes path i may carry, a
	// fraction in [0, 1]; paths past the end of MaxShare are not capped.
	MaxShare []float64
	Compute  bool // computations take their recorded time
	// Until lists the objects (indices in the page) whose download and
	// computations end the load, e.g. the urgent ones for the
	// DOMContentLoaded analogue; nil: every object (the page load time).
	// Only their bytes count in Links; the caps stay shares of the whole
	// page's bytes.
	Until []int
	// Pin holds, by object index, the one path (index in Paths) the object
	// may use, or -1 for any; objects past its end may use any path. It
	// bounds a given placement, e.g. a policy's, instead of every one.
	Pin []int
	// Chain adds the chain bound (chain.go): the cap charged along the
	// graph's chains, each object asked for no sooner than the objects it
	// needs can all have arrived within the caps.
	Chain bool
}

// paths returns the paths object o may use: its pinned one, or every path
// that may carry bytes at all (a share of 0 leaves one out).
func (c Config) paths(o int) []Path {
	if o < len(c.Pin) && c.Pin[o] >= 0 {
		return c.Paths[c.Pin[o] : c.Pin[o]+1]
	}
	var ps []Path
	for i, p := range c.Paths {
		if c.share(i) > 0 {
			ps = append(ps, p)
		}
	}
	return ps
}

// may reports whether object o may use path i.
func (c Config) may(o, i int) bool {
	if o < len(c.Pin) && c.Pin[o] >= 0 {
		return c.Pin[o] == i
	}
	return true
}

func (c Config) share(i int) float64 {
	if i < len(c.MaxShare) {
		return c.MaxShare[i]
	}
	return 1
}

func (c Config) validate() error {
	if len(c.Paths) == 0 {
		return errors.New("floor: no path")
	}
	if len(c.MaxShare) > len(c.Paths) {
		return fmt.Errorf("floor: %d shares for %d paths", len(c.MaxShare), len(c.Paths))
	}
	var shares float64
	for i, p := range c.Paths {
		if !(p.Rate > 0) || math.IsInf(p.Rate, 0) || p.RTT < 0 || p.Setup < 0 {
			return fmt.Errorf("floor: path %s: want a finite rate above 0, an RTT and setup round trips of at least 0", p.Name)
		}
		if p.Window < 0 || p.Window > 0 && (p.Segment <= 0 || p.RTT <= 0) {
			return fmt.Errorf("floor: path %s: a window wants a segment size and an RTT above 0", p.Name)
		}
		s := c.share(i)
		if !(s >= 0 && s <= 1) {
			return fmt.Errorf("floor: path %s: share %v out of [0, 1]", p.Name, s)
		}
		shares += s
	}
	if shares < 1 {
		return fmt.Errorf("floor: the paths' shares add up to %v: the page's bytes do not fit", shares)
	}
	return nil
}

// Result is a page's bound and its two parts.
type Result struct {
	// Critical: the longest chain of the graph, each download done as soon
	// as all paths together could deliver it with nothing else on them.
	Critical time.Duration
	// Links: the earliest the paths can have delivered every byte of the
	// page, each no sooner than its object's earliest request (as in
	// Critical) plus the path's RTT, within the caps; rounded down, a few
	// µs at most (the bisection's 1 µs, each slot's capacity rounded up to
	// the byte).
	Links time.Duration
	// Chain: with Config.Chain, the chain bound (chain.go); else 0.
	Chain time.Duration
	PLT   time.Duration // the bound: the latest of the three
	// Ready is the earliest each object's download can start (its
	// dependencies done, as in Critical, and with Config.Chain the objects
	// it needs arrived within the caps), by object index.
	Ready []time.Duration
}

// Bound computes the lower bound on p's load time under c.
func Bound(p *page.Page, c Config) (Result, error) {
	if err := c.validate(); err != nil {
		return Result{}, err
	}
	for _, o := range c.Until {
		if o < 0 || o >= len(p.Objects) {
			return Result{}, fmt.Errorf("floor: object %d out of range (page %s has %d)", o, p.Name, len(p.Objects))
		}
	}
	if len(c.Pin) > len(p.Objects) {
		return Result{}, fmt.Errorf("floor: %d pins for page %s's %d objects", len(c.Pin), p.Name, len(p.Objects))
	}
	for o, i := range c.Pin {
		if i >= len(c.Paths) || i >= 0 && c.share(i) == 0 {
			return Result{}, fmt.Errorf("floor: object %d pinned to path %d, which does not exist or may carry nothing", o, i)
		}
	}
	r, err := critical(p, c)
	if err != nil {
		return r, err
	}
	if r.Links, err = links(p, c, r.Ready, c.counted(p), c.caps(p.TotalSize())); err != nil {
		return r, err
	}
	r.PLT = max(r.Critical, r.Links)
	if c.Chain {
		if r.Chain, err = chain(p, c, &r); err != nil {
			return r, err
		}
		r.PLT = max(r.PLT, r.Chain)
	}
	return r, nil
}

// caps is each path's most bytes of a page of total bytes (its share).
func (c Config) caps(total int64) []int64 {
	caps := make([]int64, len(c.Paths))
	for i := range caps {
		caps[i] = int64(math.Ceil(c.share(i) * float64(total)))
	}
	return caps
}

// counted reports, per object, whether it ends the load (Config.Until).
func (c Config) counted(p *page.Page) []bool {
	in := make([]bool, len(p.Objects))
	for i := range in {
		in[i] = c.Until == nil
	}
	for _, o := range c.Until {
		in[o] = true
	}
	return in
}

// critical walks p on a fake clock, each download taking its time alone on
// the paths it may use.
func critical(p *page.Page, c Config) (Result, error) {
	r := Result{Ready: make([]time.Duration, len(p.Objects))}
	w, err := walk(p, c.Compute, func(a replay.Action, at time.Duration) time.Duration {
		if a.Kind != replay.StartDownload {
			return at + a.Duration
		}
		r.Ready[a.Object] = at
		return alone(c.paths(a.Object), at, p.Objects[a.Object].Size)
	})
	if err != nil {
		return r, err
	}
	in := c.counted(p)
	for i, a := range p.Activities {
		if _, end, _ := w.Timing(i); in[a.Object] {
			r.Critical = max(r.Critical, end)
		}
	}
	return r, nil
}

// walk drives a Walker over p on a fake clock to the end of the load: end
// says when each action the walker asks for at time at completes, in the
// order the walker asks (ties complete in that order).
func walk(p *page.Page, compute bool, end func(a replay.Action, at time.Duration) time.Duration) (*replay.Walker, error) {
	type event struct {
		at       time.Duration
		activity int
	}
	w := replay.NewWalker(p, replay.Options{Compute: compute})
	t0 := time.Unix(0, 0)
	var pending []event
	add := func(acts []replay.Action, at time.Duration) {
		for _, a := range acts {
			pending = append(pending, event{end(a, at), a.Activity})
		}
	}
	add(w.Start(t0), 0)
	for len(pending) > 0 {
		next := 0
		for i, e := range pending {
			if e.at < pending[next].at {
				next = i
			}
		}
		e := pending[next]
		pending = slices.Delete(pending, next, next+1)
		acts, err := w.Complete(e.activity, t0.Add(e.at))
		if err != nil {
			return w, err
		}
		add(acts, e.at)
	}
	if !w.Done() {
		return w, fmt.Errorf("floor: page %s: the walk ended with activities left", p.Name)
	}
	return w, nil
}

// alone is when size bytes asked for at ready have all arrived, split over
// the paths so that all finish together: the fluid optimum with nothing else
// on the paths. Rounded down to the nanosecond.
func alone(paths []Path, ready time.Duration, size int64) time.Duration {
	type start struct {
		at   float64 // seconds
		rate float64
	}
	starts := make([]start, len(paths))
	for i, p := range paths {
		starts[i] = start{p.arrival(ready).Seconds(), p.Rate}
	}
	slices.SortFunc(starts, func(a, b start) int { return cmp.Compare(a.at, b.at) })
	// With the first k paths delivering, the bytes are in at
	// (size + sum rate*at) / sum rate, if that is before path k+1 starts.
	var rate, weighted float64
	for k, s := range starts {
		rate += s.rate
		weighted += s.rate * s.at
		t := (float64(size) + weighted) / rate
		if k == len(starts)-1 || t <= starts[k+1].at {
			return time.Duration(math.Max(t, starts[0].at) * 1e9)
		}
	}
	panic("unreachable")
}

// capacity rounds a bound in bytes up to an edge's capacity.
func capacity(b float64) int64 {
	if b >= math.MaxInt64/2 {
		return math.MaxInt64
	}
	return int64(math.Ceil(b))
}

// links finds, by bisection to 1 µs, the earliest time by which the paths
// can have delivered every byte of the objects in, each path at most its
// caps bytes (fits), and returns the latest time found not to fit, so that
// the answer stays a lower bound. Pins can ask a path for more than its
// cap allows: no time fits then.
func links(p *page.Page, c Config, ready []time.Duration, in []bool, caps []int64) (time.Duration, error) {
	var total, counted int64
	for i, o := range p.Objects {
		total += max(o.Size, 0)
		if in[i] {
			counted += max(o.Size, 0)
		}
	}
	if counted == 0 {
		return 0, nil
	}
	// Every path carrying its capped share from the last release on fits,
	// unless pins ask a path for more.
	var hi time.Duration
	for _, path := range c.Paths {
		for o, r := range ready {
			if in[o] {
				hi = max(hi, path.arrival(r))
			}
		}
	}
	slowest := slices.MinFunc(c.Paths, func(a, b Path) int { return cmp.Compare(a.Rate, b.Rate) })
	hi += time.Duration(math.Ceil(float64(total)/slowest.Rate*1e9)) + time.Microsecond
	for _, path := range c.Paths {
		// A window below the rate's round trip of bytes doubles to it
		// within that many round trips; each such round trip loses at most
		// one round trip at the rate.
		if path.Window > 0 {
			grow := math.Log2(max(1, path.Rate*path.RTT.Seconds()/(float64(path.Window)*float64(path.Segment))))
			hi += time.Duration(math.Ceil(grow)+2) * path.RTT
		}
	}
	if !fits(p, c, ready, in, caps, counted, hi) {
		return 0, fmt.Errorf("floor: page %s: the pinned objects' bytes exceed a path's cap", p.Name)
	}
	lo := time.Duration(0)
	for hi-lo > time.Microsecond {
		mid := lo + (hi-lo)/2
		if fits(p, c, ready, in, caps, counted, mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, nil
}

// fits reports whether every byte of the objects in can have arrived by t:
// a flow from each object (its size) to the paths' time slots it may use
// (those from its arrival on that path), each slot carrying the path's rate
// times its length, each path at most its caps bytes. Capacities are
// rounded up, which can only make a shorter time fit: the bound stays a
// bound.
func fits(p *page.Page, c Config, ready []time.Duration, in []bool, caps []int64, counted int64, t time.Duration) bool {
	const src, sink = 0, 1
	g := newFlow(2 + len(p.Objects))
	for o, obj := range p.Objects {
		if in[o] && obj.Size > 0 {
			g.edge(src, 2+o, obj.Size)
		}
	}
	for i, path := range c.Paths {
		node := g.node()
		g.edge(node, sink, caps[i])
		var releases []time.Duration
		for _, r := range ready {
			if a := path.arrival(r); a < t {
				releases = append(releases, a)
			}
		}
		slices.Sort(releases)
		releases = slices.Compact(releases)
		slot := make(map[time.Duration]int, len(releases))
		// With a window, the bytes of the slots up to each end pass
		// through a chain whose links carry at most what the path can
		// have delivered by then (upTo).
		chain := -1
		for j, a := range releases {
			slot[a] = g.node()
			end := t
			if j+1 < len(releases) {
				end = releases[j+1]
			}
			out := node
			if path.Window > 0 {
				link := g.node()
				if chain >= 0 {
					g.edge(chain, link, math.MaxInt64)
				}
				chain = g.node()
				g.edge(link, chain, capacity(path.upTo(end)))
				out = link
			}
			g.edge(slot[a], out, int64(math.Ceil(path.Rate*(end-a).Seconds())))
			if j > 0 {
				g.edge(slot[releases[j-1]], slot[a], math.MaxInt64)
			}
		}
		if chain >= 0 {
			g.edge(chain, node, math.MaxInt64)
		}
		for o, r := range ready {
			if s, ok := slot[path.arrival(r)]; ok && in[o] && p.Objects[o].Size > 0 && c.may(o, i) {
				g.edge(2+o, s, math.MaxInt64)
			}
		}
	}
	return g.maxFlow(src, sink) >= counted
}
