package floor

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
)

const ms = time.Millisecond

// 10 Mbit/s: 1250 bytes a millisecond.
var (
	exp   = Path{Name: "exp", Rate: 1.25e6, RTT: 20 * ms, Setup: 2}
	cheap = Path{Name: "cheap", Rate: 1.25e6, RTT: 80 * ms, Setup: 2}
)

// graph builds a page: a document of docSize bytes with one computation
// (compMs long) and children of the given sizes; each child's download
// depends on the computation's completion, or on its start with onStart.
func graph(t *testing.T, docSize int64, compMs int, onStart bool, children ...int64) *page.Page {
	t.Helper()
	depTime := -1
	if onStart {
		depTime = 0
	}
	objs := []string{fmt.Sprintf(`{"id": "d", "path": "/d.html", "size": %d, "download": {"id": "d_d", "type": "text/html"},
	 "comps": [{"id": "d_c", "type": "evalhtml", "time": %d}]}`, docSize, compMs)}
	var deps []string
	for i, size := range children {
		objs = append(objs, fmt.Sprintf(`{"id": "c%d", "path": "/c%d.js", "size": %d, "download": {"id": "c%d_d", "type": "text/javascript"}, "comps": []}`, i, i, size, i))
		deps = append(deps, fmt.Sprintf(`{"id": "dep%d", "a1": "d_c", "a2": "c%d_d", "time": %d}`, i, i, depTime))
	}
	js := fmt.Sprintf(`{"name": "g", "start_activity": "d_d", "objs": [%s], "deps": [%s]}`, strings.Join(objs, ","), strings.Join(deps, ","))
	p, err := page.ReadGraph("g.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// slack is how far below the exact value Links may come out: the bisection
// stops within 1 µs, and each slot's capacity is rounded up to the byte.
const slack = 5 * time.Microsecond

// near checks a bound against the value worked out by hand: never above it,
// at most slack below.
func near(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got > want || got < want-slack {
		t.Errorf("%s = %v, want %v (up to %v below)", what, got, want, slack)
	}
}

func bound(t *testing.T, p *page.Page, c Config) Result {
	t.Helper()
	r, err := Bound(p, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// One 125000-byte document on exp: two round trips of handshakes (40 ms),
// one for the request (20 ms), 100 ms of bytes.
func TestOneObjectOnePath(t *testing.T) {
	r := bound(t, graph(t, 125000, 0, false), Config{Paths: []Path{exp}})
	near(t, "critical", r.Critical, 160*ms)
	near(t, "PLT", r.PLT, 160*ms)
	cleartext := exp
	cleartext.Setup = 1
	near(t, "PLT, h2c", bound(t, graph(t, 125000, 0, false), Config{Paths: []Path{cleartext}}).PLT, 140*ms)
}

// A 12500-byte document and a 125000-byte child over exp and cheap. The
// document arrives on exp at 60 ms + 10 ms (cheap's first byte could come at
// 240 ms); the child is asked for at 70 ms, exp delivers it from 90 ms, done
// at 190 ms before cheap could start. With at most 25 % of the 137500 bytes
// (34375) on exp, cheap must carry 103125 bytes from 240 ms: 322.5 ms.
func TestTwoPathsCap(t *testing.T) {
	p := graph(t, 12500, 0, false, 125000)
	both := []Path{exp, cheap}
	r := bound(t, p, Config{Paths: both})
	if r.Ready[1] != 70*ms {
		t.Errorf("child ready at %v, want 70ms", r.Ready[1])
	}
	near(t, "critical", r.Critical, 190*ms)
	near(t, "PLT, no cap", r.PLT, 190*ms)
	r = bound(t, p, Config{Paths: both, MaxShare: []float64{0.25}})
	near(t, "critical, cap", r.Critical, 190*ms)
	near(t, "PLT, 25 % on exp", r.PLT, 322500*time.Microsecond)
	// Nothing on exp is cheap alone: the document at 240 + 10 ms, the
	// child asked for then, its bytes from 330 ms to 430 ms.
	near(t, "PLT, nothing on exp", bound(t, p, Config{Paths: both, MaxShare: []float64{0}}).PLT, 430*ms)
	near(t, "PLT, cheap alone", bound(t, p, Config{Paths: []Path{cheap}}).PLT, 430*ms)
}

// Until ends the load with some objects: the document alone is done at
// 70 ms. The child alone, with at most 5 % of the page's 137500 bytes (6875)
// on exp: cheap carries at least 118125 bytes from 240 ms, done at 334.5 ms
// (the document's bytes, not counted, do not use the cap).
func TestUntil(t *testing.T) {
	p := graph(t, 12500, 0, false, 125000)
	both := []Path{exp, cheap}
	near(t, "document", bound(t, p, Config{Paths: both, Until: []int{0}}).PLT, 70*ms)
	near(t, "document, 25 % cap", bound(t, p, Config{Paths: both, Until: []int{0}, MaxShare: []float64{0.25}}).PLT, 70*ms)
	r := bound(t, p, Config{Paths: both, Until: []int{1}, MaxShare: []float64{0.05}})
	near(t, "child, critical", r.Critical, 190*ms)
	near(t, "child, 5 % cap", r.PLT, 334500*time.Microsecond)
	if _, err := Bound(p, Config{Paths: both, Until: []int{2}}); err == nil || !strings.Contains(err.Error(), "object 2 out of range") {
		t.Errorf("object out of range: error %v", err)
	}
}

// Pinned placements of the document and child of TestTwoPathsCap. Document
// on exp, child on cheap: the child is asked for at 70 ms, cheap's first
// byte comes at 240 ms, its 100 ms of bytes end at 340 ms. Document on
// cheap, child on exp: the document at 250 ms, the child's bytes from 270 ms
// to 370 ms. Both on cheap: cheap alone, 430 ms.
func TestPin(t *testing.T) {
	p := graph(t, 12500, 0, false, 125000)
	both := []Path{exp, cheap}
	near(t, "document on exp, child on cheap", bound(t, p, Config{Paths: both, Pin: []int{0, 1}}).PLT, 340*ms)
	near(t, "document on cheap, child on exp", bound(t, p, Config{Paths: both, Pin: []int{1, 0}}).PLT, 370*ms)
	near(t, "both on cheap", bound(t, p, Config{Paths: both, Pin: []int{1, 1}}).PLT, 430*ms)
	near(t, "child on cheap, document free", bound(t, p, Config{Paths: both, Pin: []int{-1, 1}}).PLT, 340*ms)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Paths: both, Pin: []int{0, 0}, MaxShare: []float64{0.25}}, "pinned objects' bytes exceed a path's cap"},
		{Config{Paths: both, Pin: []int{2}}, "object 0 pinned to path 2"},
		{Config{Paths: both, Pin: []int{0}, MaxShare: []float64{0}}, "object 0 pinned to path 0, which does not exist or may carry nothing"},
		{Config{Paths: both, Pin: []int{0, 0, 0}}, "3 pins for page g's 2 objects"},
	} {
		if _, err := Bound(p, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

// A big object split: 500000 bytes asked for at 0 over both paths. exp
// alone would take 60 + 400 ms; with cheap joining at 240 ms both finish
// together at t where 1250*(t-60) + 1250*(t-240) = 500000: t = 350 ms.
func TestSplitFinishesTogether(t *testing.T) {
	r := bound(t, graph(t, 500000, 0, false), Config{Paths: []Path{exp, cheap}})
	near(t, "critical", r.Critical, 350*ms)
	near(t, "PLT", r.PLT, 350*ms)
}

// Two children of 125000 bytes on one path, both asked for at 70 ms: each
// alone would be done at 190 ms, but the path carries both from 90 ms: 290.
func TestContention(t *testing.T) {
	r := bound(t, graph(t, 12500, 0, false, 125000, 125000), Config{Paths: []Path{exp}})
	near(t, "critical", r.Critical, 190*ms)
	near(t, "links", r.Links, 290*ms)
	near(t, "PLT", r.PLT, 290*ms)
}

// The walker's rules: a computation of 10 ms counts with Compute, and a
// dependency on its start frees the child when the computation starts.
func TestComputeAndOnStart(t *testing.T) {
	one := []Path{exp}
	cases := []struct {
		compute, onStart bool
		ready            time.Duration
	}{
		{false, false, 70 * ms},
		{true, false, 80 * ms},
		{true, true, 70 * ms},
	}
	for _, c := range cases {
		r := bound(t, graph(t, 12500, 10, c.onStart, 125000), Config{Paths: one, Compute: c.compute})
		if r.Ready[1] != c.ready {
			t.Errorf("compute %v, on start %v: child ready at %v, want %v", c.compute, c.onStart, r.Ready[1], c.ready)
		}
		near(t, fmt.Sprintf("compute %v, on start %v: PLT", c.compute, c.onStart), r.PLT, c.ready+120*ms)
	}
}

func TestConfigErrors(t *testing.T) {
	p := graph(t, 1000, 0, false)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no path"},
		{Config{Paths: []Path{{Name: "x", RTT: ms}}}, "path x: want a finite rate"},
		{Config{Paths: []Path{exp, cheap}, MaxShare: []float64{0.2, 0.3}}, "shares add up to 0.5"},
		{Config{Paths: []Path{exp}, MaxShare: []float64{1.5}}, "share 1.5 out of [0, 1]"},
		{Config{Paths: []Path{exp}, MaxShare: []float64{1, 1}}, "2 shares for 1 paths"},
	} {
		if _, err := Bound(p, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

// On the Table IV pages: a cap can only raise the bound, a path more can
// only lower it, and a page's bound is at least its bytes over all paths'
// rates after the first handshake.
func TestTableIVPagesOrdered(t *testing.T) {
	for _, tv := range page.TableIV {
		p := testpages.Load(t, tv.Graph+".json")
		free := bound(t, p, Config{Paths: []Path{exp, cheap}}).PLT
		first := bound(t, p, Config{Paths: []Path{exp, cheap}, Until: []int{0}}).PLT
		if first > free || first < 60*ms {
			t.Errorf("%s: the first object's bound %v: want at least exp's first byte (60ms), at most the page's %v", tv.Name, first, free)
		}
		capped := bound(t, p, Config{Paths: []Path{exp, cheap}, MaxShare: []float64{0.25}}).PLT
		expAlone := bound(t, p, Config{Paths: []Path{exp}}).PLT
		cheapAlone := bound(t, p, Config{Paths: []Path{cheap}}).PLT
		le := func(a, b time.Duration) bool { return a <= b+slack }
		if !le(free, capped) || !le(capped, cheapAlone) || !le(free, expAlone) || !le(expAlone, cheapAlone) {
			t.Errorf("%s: free %v, 25 %% cap %v, exp alone %v, cheap alone %v: want free <= cap <= cheap alone, free <= exp alone <= cheap alone",
				tv.Name, free, capped, expAlone, cheapAlone)
		}
		floor := 60*ms + time.Duration(float64(p.TotalSize())/2.5e6*1e9)
		if free < floor {
			t.Errorf("%s: bound %v below %v (its bytes at both rates after exp's first byte)", tv.Name, free, floor)
		}
	}
}

// fifo is one schedule the model allows: each object whole on one path,
// each path sending its responses one after another in the order they were
// asked for, every byte at the path's rate. Its load time can never be below
// the bound, for any placement.
func fifo(t *testing.T, p *page.Page, paths []Path, place []int) time.Duration {
	t.Helper()
	free := make([]time.Duration, len(paths))
	w, err := walk(p, false, func(a replay.Action, at time.Duration) time.Duration {
		i := place[a.Object]
		free[i] = max(paths[i].arrival(at), free[i]) + time.Duration(float64(p.Objects[a.Object].Size)/paths[i].Rate*1e9)
		return free[i]
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.PLT()
}

// Random placements of the Table IV pages never load faster than the bound,
// nor than the bound of their own placement, nor, when they keep at most
// 25 % of the bytes on exp, than the capped bound, with or without the
// chain.
func TestRandomPlacementsAboveBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	both := []Path{exp, cheap}
	for _, tv := range page.TableIV {
		p := testpages.Load(t, tv.Graph+".json")
		free := bound(t, p, Config{Paths: both}).PLT
		capped := bound(t, p, Config{Paths: both, MaxShare: []float64{0.25}}).PLT
		chained := bound(t, p, Config{Paths: both, MaxShare: []float64{0.25}, Chain: true}).PLT
		for i := range 30 {
			place := make([]int, len(p.Objects))
			var onExp int64
			for o := range place {
				if rng.IntN(4) == 0 || i == 0 { // i == 0: everything on exp
					onExp += p.Objects[o].Size
				} else {
					place[o] = 1
				}
			}
			got := fifo(t, p, both, place)
			own := bound(t, p, Config{Paths: both, Pin: place}).PLT
			if got < free || got < own {
				t.Errorf("%s, placement %d: load %v below the bound %v or its placement's %v", tv.Name, i, got, free, own)
			}
			if float64(onExp) <= 0.25*float64(p.TotalSize()) && (got < capped || got < chained) {
				t.Errorf("%s, placement %d (%.1f %% on exp): load %v below the capped bound %v or its chain bound %v", tv.Name, i, 100*float64(onExp)/float64(p.TotalSize()), got, capped, chained)
			}
		}
	}
}

// Slow start (Path.Window): 10 packets of 1000 bytes in the first round
// trip. One 125000-byte document on cheap: its first byte at 240 ms, at
// most 10000 bytes by 320 ms, 30000 by 400, 70000 by 480, then the rate
// (1250 bytes a ms): 125000 at 524 ms, where the rate alone gave 340 ms.
// By 700 ms: 150000 by 560 (the fourth round trip's 80 packets are fewer
// than the rate's 100), then the rate: 325000.
func TestWindowOnePath(t *testing.T) {
	slow := cheap
	slow.Window, slow.Segment = 10, 1000
	p := graph(t, 125000, 0, false)
	near(t, "PLT, no window", bound(t, p, Config{Paths: []Path{cheap}}).PLT, 340*ms)
	r := bound(t, p, Config{Paths: []Path{slow}})
	near(t, "critical", r.Critical, 340*ms)
	near(t, "PLT, slow start", r.PLT, 524*ms)
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{{240 * ms, 0}, {244 * ms, 5000}, {300 * ms, 10000}, {320 * ms, 10000}, {400 * ms, 30000}, {481 * ms, 71250}, {700 * ms, 325000}} {
		if got := slow.upTo(tc.at); got < tc.want-1e-6 || got > tc.want+1e-6 {
			t.Errorf("upTo(%v) = %v, want %v", tc.at, got, tc.want)
		}
	}
	// A window as large as a round trip at the rate changes nothing.
	wide := cheap
	wide.Window, wide.Segment = 100, 1000
	near(t, "PLT, window of 100000 bytes", bound(t, p, Config{Paths: []Path{wide}}).PLT, 340*ms)
	if _, err := Bound(p, Config{Paths: []Path{{Name: "x", Rate: 1, RTT: ms, Window: 10}}}); err == nil {
		t.Error("a window without a segment size: no error")
	}
}

// TestTwoPathsCap's page with both paths in slow start: with at most 25 %
// of the 137500 bytes on exp, cheap carries at least 103125 bytes; by
// 480 ms at most 70000 (as TestWindowOnePath), the rest at the rate:
// 506.5 ms, where the rate alone gave 322.5 ms. exp's 34375 fit its window
// by 104 ms.
func TestWindowTwoPathsCap(t *testing.T) {
	p := graph(t, 12500, 0, false, 125000)
	e, c := exp, cheap
	e.Window, e.Segment, c.Window, c.Segment = 10, 1000, 10, 1000
	near(t, "PLT, 25 % on exp, slow start", bound(t, p, Config{Paths: []Path{e, c}, MaxShare: []float64{0.25}}).PLT, 506500*time.Microsecond)
}

// The chain bound (Config.Chain) on a 12500-byte document and a
// 12500-byte child with at most 25 % of the 25000 bytes (6250) on exp. The
// document cannot be whole on exp, so at least 12500 - b of its bytes come
// over cheap from 240 ms, where b is what it takes of the cap, and the child,
// asked for no sooner, has 6250 - b left for exp: cheap carries at least
// 6250 + b of it from 80 ms after the document, done at 240 + (12500 - b) /
// 1.25 + 80 + (6250 + b) / 1.25 ms = 335 ms whatever b (the best loads:
// the document half on each path, done at 245 ms, the child on cheap, or
// the document on cheap and the child half on each). Without the chain the
// child is asked for at 70 ms, as if the document had exp to itself: 255 ms.
// The grid of b (stageSteps) gives up at most one step, 6250 / 16 bytes at
// cheap's rate: 334.6875 ms.
func TestChainChargesTheCap(t *testing.T) {
	p := graph(t, 12500, 0, false, 12500)
	c := Config{Paths: []Path{exp, cheap}, MaxShare: []float64{0.25}}
	near(t, "PLT, no chain", bound(t, p, c).PLT, 255*ms)
	c.Chain = true
	r := bound(t, p, c)
	// The document alone within the cap: 6250 bytes on exp, 6250 on cheap
	// from 240 ms.
	near(t, "child ready", r.Ready[1], 245*ms)
	near(t, "chain", r.Chain, 334687500*time.Nanosecond)
	near(t, "PLT, chain", r.PLT, 334687500*time.Nanosecond)
	if r.Chain > 335*ms {
		t.Errorf("chain %v above the best load's 335ms", r.Chain)
	}
	// Where the cap holds the document, the chain costs nothing more:
	// TestTwoPathsCap's 322.5 ms.
	near(t, "PLT, chain, cap over the document", bound(t, graph(t, 12500, 0, false, 125000), c).PLT, 322500*time.Microsecond)
	// Without a cap the chain bound is the links' bound: 190 ms.
	near(t, "PLT, chain, no cap", bound(t, graph(t, 12500, 0, false, 125000), Config{Paths: []Path{exp, cheap}, Chain: true}).PLT, 190*ms)
}

// brute is the best load of p over every placement of whole objects that
// keeps at most cap bytes on paths[0], each path sending its responses one
// after another (fifo).
func brute(t *testing.T, p *page.Page, paths []Path, cap int64) time.Duration {
	t.Helper()
	best := time.Duration(-1)
	place := make([]int, len(p.Objects))
	for mask := 0; mask < 1<<len(p.Objects); mask++ {
		var onFirst int64
		for o := range place {
			place[o] = 1
			if mask&(1<<o) != 0 {
				place[o] = 0
				onFirst += p.Objects[o].Size
			}
		}
		if onFirst > cap {
			continue
		}
		if got := fifo(t, p, paths, place); best < 0 || got < best {
			best = got
		}
	}
	return best
}

// On small pages, the best placement of whole objects within the cap (by
// search over all of them) never loads faster than the chain bound, which
// lies between the bound without it and that best load.
func TestChainBelowBestPlacement(t *testing.T) {
	both := []Path{exp, cheap}
	for _, sizes := range [][]int64{{12500, 12500}, {12500, 12500, 6000, 30000}, {30000, 5000, 5000, 5000, 5000, 60000}, {2000, 40000, 1000}} {
		p := graph(t, sizes[0], 0, false, sizes[1:]...)
		for _, share := range []float64{0.1, 0.25, 0.5} {
			c := Config{Paths: both, MaxShare: []float64{share}}
			plain := bound(t, p, c).PLT
			c.Chain = true
			chained := bound(t, p, c).PLT
			best := brute(t, p, both, int64(share*float64(p.TotalSize())))
			if chained < plain || chained > best {
				t.Errorf("sizes %v, share %v: chain bound %v, want between the bound without it (%v) and the best placement's load (%v)", sizes, share, chained, plain, best)
			}
		}
	}
}
