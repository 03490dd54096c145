package multipath

import (
	"math"
	"sort"
	"testing"
	"time"

	"github.com/shunt-net/shunt/estimate"
)

// Figure 8's paths: WiFi and LTE at 28 and 65 ms.
func fig8Paths(wifi, lte float64, sendBuf int64) []simPath {
	return []simPath{
		{Rate: steady(mbit(wifi)), RTT: 28 * time.Millisecond, SendBuf: sendBuf},
		{Rate: steady(mbit(lte)), RTT: 65 * time.Millisecond, SendBuf: sendBuf},
	}
}

func exactPrior(paths []simPath) []estimate.Path {
	var p []estimate.Path
	for _, sp := range paths {
		p = append(p, estimate.Path{Bandwidth: sp.Rate[0].Bps, RTT: sp.RTT})
	}
	return p
}

func conds(paths []simPath) []Cond {
	var c []Cond
	for _, sp := range paths {
		c = append(c, Cond{Bandwidth: sp.Rate[0].Bps, Delay: sp.RTT})
	}
	return c
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestSimConvergesToIdeal: on Figure 8's (5,10) Mbit/s paths the split ends
// within a few percent of Equation 1's ideal, in time and in bytes per path,
// and both paths finish within δ of each other.
func TestSimConvergesToIdeal(t *testing.T) {
	for _, size := range []int64{1 << 20, 2 << 20, 4 << 20} {
		for _, buf := range []int64{16 << 10, 64 << 10, 256 << 10} {
			paths := fig8Paths(5, 10, buf)
			ideal := IdealTime(size, conds(paths))
			shares, _ := Split(size, conds(paths))
			for _, v := range []struct {
				name       string
				cfg        Config
				time, byts float64 // tolerances, fractions
			}{
				// MP-H2 loses one WiFi RTT on the secondary's request.
				{"MP-H2", Config{Size: -1}, 0.04, 0.05},
				{"MP-H2+FS", Config{Size: size}, 0.01, 0.03},
				{"MP-H2+FS+BW/L", Config{Size: size, Prior: exactPrior(paths)}, 0.01, 0.01},
			} {
				r, err := runSim(simConfig{Size: size, Paths: paths, Sched: v.cfg}, true)
				if err != nil {
					t.Fatalf("%s %d B buf %d: %v", v.name, size, buf, err)
				}
				over := float64(r.Done)/float64(ideal) - 1
				t.Logf("%-13s %4d KiB buf %3d KiB: %v, ideal %v (+%.1f%%), bytes %v (Eq.1 %v), finish gap %v, requests %v",
					v.name, size>>10, buf>>10, r.Done.Round(time.Millisecond), ideal.Round(time.Millisecond), 100*over,
					r.Delivered, shares, absDur(r.Last[0]-r.Last[1]).Round(time.Millisecond), r.Requests)
				if over > v.time {
					t.Errorf("%s %d B buf %d: %v is %.1f%% over the ideal %v, want <= %.0f%%", v.name, size, buf, r.Done, 100*over, ideal, 100*v.time)
				}
				for i := range shares {
					if d := math.Abs(float64(r.Delivered[i]-shares[i])) / float64(size); d > v.byts {
						t.Errorf("%s %d B buf %d: path %d delivered %d, Eq.1 says %d", v.name, size, buf, i, r.Delivered[i], shares[i])
					}
				}
				if gap := absDur(r.Last[0] - r.Last[1]); gap > DefaultDelta {
					t.Errorf("%s %d B buf %d: paths finish %v apart, want <= δ", v.name, size, buf, gap)
				}
			}
		}
	}
}

// TestSimBandwidths covers Figure 8's other bandwidth pairs, including the
// primary being the faster path (the lazy midpoint cut).
func TestSimBandwidths(t *testing.T) {
	for _, bw := range [][2]float64{{5, 5}, {10, 5}} {
		for _, v := range []Config{{Size: -1}, {Size: 2 << 20}} {
			paths := fig8Paths(bw[0], bw[1], 64<<10)
			ideal := IdealTime(2<<20, conds(paths))
			r, err := runSim(simConfig{Size: 2 << 20, Paths: paths, Sched: v}, true)
			if err != nil {
				t.Fatal(err)
			}
			over := float64(r.Done)/float64(ideal) - 1
			t.Logf("(%v,%v) Mbit/s size %d: %v, ideal %v (+%.1f%%), wasted %v, requests %v", bw[0], bw[1], v.Size,
				r.Done.Round(time.Millisecond), ideal.Round(time.Millisecond), 100*over, r.Wasted, r.Requests)
			if over > 0.04 {
				t.Errorf("(%v,%v) size %d: %.1f%% over the ideal", bw[0], bw[1], v.Size, 100*over)
			}
			if r.Wasted[0]+r.Wasted[1] != 0 {
				t.Errorf("(%v,%v) size %d: %v tail bytes under flow control on steady paths", bw[0], bw[1], v.Size, r.Wasted)
			}
		}
	}
}

// TestSimPipelining: requesting the next chunk one RTT early leaves no idle
// gap on the path that takes it; requesting it after the chunk leaves one
// RTT idle and finishes later.
func TestSimPipelining(t *testing.T) {
	paths := fig8Paths(5, 10, 64<<10)
	var done [2]time.Duration
	for k, off := range []bool{false, true} {
		r, err := runSim(simConfig{Size: 2 << 20, Paths: paths, Sched: Config{Size: 2 << 20, NoPipelining: off}}, true)
		if err != nil {
			t.Fatal(err)
		}
		done[k] = r.Done
		t.Logf("NoPipelining=%v: %v, idle %v, requests %v", off, r.Done.Round(time.Millisecond), r.Idle, r.Requests)
		idle := r.Idle[0] + r.Idle[1]
		if !off && idle != 0 {
			t.Errorf("pipelining: %v idle", r.Idle)
		}
		if off && idle < paths[1].RTT {
			t.Errorf("no pipelining: idle %v, want at least one LTE RTT", r.Idle)
		}
	}
	if done[0] >= done[1] {
		t.Errorf("pipelining %v, without %v: want faster", done[0], done[1])
	}
}

// randomTrace is a bandwidth trace changing every 200 ms around mean.
func randomTrace(rng *simRand, mean float64, n int) []rateStep {
	var tr []rateStep
	for i := 0; i < n; i++ {
		tr = append(tr, rateStep{At: time.Duration(i) * 200 * time.Millisecond, Bps: mean * (0.3 + 1.4*rng.float())})
	}
	return tr
}

// TestSimPipeliningVariable is Figure 14's setup on synthetic traces: a 2 MB
// download over variable bandwidth, pipelining on and off, medians of 30.
func TestSimPipeliningVariable(t *testing.T) {
	var on, off []time.Duration
	rng := newSimRand(14)
	for run := 0; run < 30; run++ {
		paths := []simPath{
			{Rate: randomTrace(rng, mbit(5.5), 50), RTT: 28 * time.Millisecond, SendBuf: 64 << 10},
			{Rate: randomTrace(rng, mbit(4.5), 50), RTT: 65 * time.Millisecond, SendBuf: 64 << 10},
		}
		for _, noPipe := range []bool{false, true} {
			r, err := runSim(simConfig{Size: 2 << 20, Paths: paths, Sched: Config{Size: -1, NoPipelining: noPipe}}, true)
			if err != nil {
				t.Fatalf("run %d NoPipelining=%v: %v", run, noPipe, err)
			}
			if noPipe {
				off = append(off, r.Done)
			} else {
				on = append(on, r.Done)
			}
		}
	}
	mOn, mOff := median(on), median(off)
	t.Logf("median with pipelining %v, without %v: %.0f%% faster", mOn.Round(time.Millisecond), mOff.Round(time.Millisecond), 100*(1-float64(mOn)/float64(mOff)))
	if mOn >= mOff {
		t.Errorf("median with pipelining %v, without %v: want faster", mOn, mOff)
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestSimPathDown: a path lost mid-download leaves the rest to the others,
// every byte delivered once (runSim checks each Deliver).
func TestSimPathDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		down [2]time.Duration
		size int64
		n    int
	}{
		{"LTE down mid-download", [2]time.Duration{0, 400 * time.Millisecond}, 2 << 20, 2},
		{"WiFi down mid-download", [2]time.Duration{400 * time.Millisecond, 0}, 2 << 20, 2},
		{"primary down before the size is known", [2]time.Duration{10 * time.Millisecond, 0}, -1, 2},
		{"primary down after the split", [2]time.Duration{100 * time.Millisecond, 0}, -1, 2},
		{"two of three down", [2]time.Duration{300 * time.Millisecond, 500 * time.Millisecond}, 2 << 20, 3},
	} {
		for _, mode := range []EndAdjust{FlowControl, ResetStream} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				paths := fig8Paths(5, 10, 64<<10)
				if tc.n == 3 {
					paths = append(paths, simPath{Rate: steady(mbit(3)), RTT: 40 * time.Millisecond, SendBuf: 64 << 10})
				}
				paths[0].DownAt, paths[1].DownAt = tc.down[0], tc.down[1]
				r, err := runSim(simConfig{Size: 2 << 20, Paths: paths, Sched: Config{Size: tc.size, EndAdjust: mode}}, true)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%v: delivered %v, requests %v", r.Done.Round(time.Millisecond), r.Delivered, r.Requests)
				var sum int64
				for _, d := range r.Delivered {
					sum += d
				}
				if sum != 2<<20 {
					t.Errorf("delivered %v in all, want %d", r.Delivered, 2<<20)
				}
			})
		}
	}
}

// TestSimNoRanges: a server that answers 200 with the whole body to a range
// request gets a single-stream download, not an error.
func TestSimNoRanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		noRanges [2]bool
	}{
		{"MP-H2, neither server", Config{Size: -1}, [2]bool{true, true}},
		{"+FS, neither server", Config{Size: 2 << 20}, [2]bool{true, true}},
		{"+FS+BW/L, neither server", Config{Size: 2 << 20, Prior: exactPrior(fig8Paths(5, 10, 0))}, [2]bool{true, true}},
		{"MP-H2, secondary's server only", Config{Size: -1}, [2]bool{false, true}},
		{"+FS, primary's server only", Config{Size: 2 << 20}, [2]bool{true, false}},
		{"+FS, rst-stream", Config{Size: 2 << 20, EndAdjust: ResetStream}, [2]bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := fig8Paths(5, 10, 64<<10)
			paths[0].NoRanges, paths[1].NoRanges = tc.noRanges[0], tc.noRanges[1]
			r, err := runSim(simConfig{Size: 2 << 20, Paths: paths, Sched: tc.cfg}, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v: delivered %v, wasted %v, requests %v", r.Done.Round(time.Millisecond), r.Delivered, r.Wasted, r.Requests)
			if tc.noRanges == [2]bool{true, true} && r.Delivered[0] != 2<<20 && r.Delivered[1] != 2<<20 {
				t.Errorf("delivered %v: want one path to carry the whole body when no server takes ranges", r.Delivered)
			}
		})
	}
}

// TestSimTailBytes is Figure 15's experiment: a 2 MB download over one path
// cut at 1 MB. Flow control stops the server at the cut; RST_STREAM lets the
// server's send buffer and the bytes in flight arrive as tail bytes.
func TestSimTailBytes(t *testing.T) {
	for _, p := range []simPath{
		{Rate: steady(mbit(5)), RTT: 28 * time.Millisecond, SendBuf: 256 << 10},
		{Rate: steady(mbit(10)), RTT: 65 * time.Millisecond, SendBuf: 256 << 10},
		{Rate: steady(mbit(10)), RTT: 65 * time.Millisecond, SendBuf: 64 << 10},
	} {
		var tail [2]int64
		for k, mode := range []EndAdjust{FlowControl, ResetStream} {
			r, err := runSim(simConfig{Size: 2 << 20, Paths: []simPath{p}, Sched: Config{Size: 2 << 20, EndAdjust: mode}, Cut: 1 << 20}, true)
			if err != nil {
				t.Fatal(err)
			}
			tail[k] = r.Wasted[0]
		}
		t.Logf("%.0f Mbit/s %v send buffer %d KiB: tail bytes flow control %d, rst-stream %d",
			p.Rate[0].Bps*8/1e6, p.RTT, p.SendBuf>>10, tail[0], tail[1])
		if tail[0] > 16<<10 {
			t.Errorf("flow control: %d tail bytes, want <= 16 KiB", tail[0])
		}
		if tail[1] < p.SendBuf {
			t.Errorf("rst-stream: %d tail bytes, want at least the send buffer %d", tail[1], p.SendBuf)
		}
	}
}

// dropIdeal is when a fluid scheduler (MPTCP at its best) would finish size
// bytes over WiFi at w and LTE at l dropping to l2 at drop.
func dropIdeal(size int64, w, l, l2 float64, rttW, rttL, drop time.Duration) time.Duration {
	lo, hi := 0.0, 100.0
	for i := 0; i < 100; i++ {
		T := (lo + hi) / 2
		got := math.Max(0, T-rttW.Seconds())*w + math.Max(0, math.Min(T, drop.Seconds())-rttL.Seconds())*l +
			math.Max(0, T-drop.Seconds())*l2
		if got >= float64(size) {
			hi = T
		} else {
			lo = T
		}
	}
	return time.Duration(hi * 1e9)
}

// TestSimBandwidthDrop is Figure 16's case: both paths at 5 Mbit/s, LTE drops
// to 1 Mbit/s at 1050 ms during a 2 MB download.
func TestSimBandwidthDrop(t *testing.T) {
	ideal := dropIdeal(2<<20, mbit(5), mbit(5), mbit(1), 28*time.Millisecond, 65*time.Millisecond, 1050*time.Millisecond)
	for _, buf := range []int64{16 << 10, 64 << 10, 256 << 10} {
		for _, size := range []int64{-1, 2 << 20} {
			paths := fig8Paths(5, 5, buf)
			paths[1].Rate = append(paths[1].Rate, rateStep{1050 * time.Millisecond, mbit(1)})
			r, err := runSim(simConfig{Size: 2 << 20, Paths: paths, Sched: Config{Size: size}}, true)
			if err != nil {
				t.Fatal(err)
			}
			over := float64(r.Done)/float64(ideal) - 1
			t.Logf("buf %3d KiB size %8d: %v, fluid ideal %v (+%.1f%%), finish gap %v, requests %v", buf>>10, size,
				r.Done.Round(time.Millisecond), ideal.Round(time.Millisecond), 100*over, absDur(r.Last[0]-r.Last[1]).Round(time.Millisecond), r.Requests)
			// Big send buffers hold bytes the slow path cannot take back.
			limit := 0.05
			if buf > 64<<10 {
				limit = 0.12
			}
			if over > limit {
				t.Errorf("buf %d size %d: %.1f%% over the fluid ideal, want <= %.0f%%", buf, size, 100*over, 100*limit)
			}
		}
	}
}

// TestSimFastPathStallIsUndone: with +FS+BW/L the paths start balanced, so a
// stall on the fast path (TCP recovering a lost segment: ~110 ms without a
// byte) halves its estimate while the slow path is about to pipeline, and
// the slow path takes the fast one's tail. Once the fast path delivers
// again it takes back what is not yet credited to the slow one, so the
// stall costs the download at most its own length and δ. A stream
// pipelined with Ahead of credit of its own (besides the Ahead of the
// stream before it) left the slow path finishing over 200 ms after the fast one.
func TestSimFastPathStallIsUndone(t *testing.T) {
	const size = 1000000
	const at, stall = 290 * time.Millisecond, 110 * time.Millisecond
	paths := fig8Paths(10, 5, 64<<10)
	// One frame takes the whole stall to leave the server.
	paths[0].Rate = []rateStep{{0, mbit(10)}, {at, float64(simFrame+9) / stall.Seconds()}, {at + stall, mbit(10)}}
	r, err := runSim(simConfig{Size: size, Paths: paths, Sched: Config{Size: size, Prior: exactPrior(paths)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	ideal := IdealTime(size, conds(paths))
	t.Logf("%v (ideal without the stall %v), last bytes %v, bytes %v, requests %v", r.Done.Round(time.Millisecond), ideal.Round(time.Millisecond), r.Last, r.Delivered, r.Requests)
	if r.Done > ideal+stall+DefaultDelta {
		t.Errorf("done after %v, want <= %v: ideal %v + the stall + δ", r.Done, ideal+stall+DefaultDelta, ideal)
	}
}

// TestSimSlowPathTailTakenOver is the mp-tools run where lte, slow but
// never silent long enough to be suspended, held the last 164 KB as
// flow-control credit while wifi idled 2.4 s: near the end lte drops from 5
// to 0.4 Mbit/s with its credit given. An idle wifi takes over the tail it
// would otherwise wait for, re-requesting credited bytes (Retaken), and the
// download ends near the fluid ideal instead of when lte has crawled
// through its credit.
func TestSimSlowPathTailTakenOver(t *testing.T) {
	const size = 4 << 20
	for _, drop := range []time.Duration{1800 * time.Millisecond, 2000 * time.Millisecond, 2100 * time.Millisecond} {
		for _, known := range []int64{-1, size} {
			paths := fig8Paths(10, 5, 64<<10)
			paths[1].Rate = append(paths[1].Rate, rateStep{drop, mbit(0.4)})
			var s *Scheduler
			r, err := runSimWith(simConfig{Size: size, Paths: paths, Sched: Config{Size: known}}, true, func(x *Scheduler) { s = x })
			if err != nil {
				t.Fatal(err)
			}
			retaken := s.Stats(0).Retaken + s.Stats(1).Retaken
			ideal := dropIdeal(size, mbit(10), mbit(5), mbit(0.4), 28*time.Millisecond, 65*time.Millisecond, drop)
			t.Logf("drop at %v size %d: %v, fluid ideal %v, last bytes %v, delivered %v, tail bytes %v, retaken %d, requests %v",
				drop, known, r.Done.Round(time.Millisecond), ideal.Round(time.Millisecond), r.Last, r.Delivered, r.Wasted, retaken, r.Requests)
			if limit := ideal + 300*time.Millisecond; r.Done > limit {
				t.Errorf("drop at %v size %d: done after %v, want <= %v (the fluid ideal + 300 ms)", drop, known, r.Done, limit)
			}
			// Slow, not silent: its range is taken over by the tail rule,
			// not moved as a silent path's (checkSilent).
			if n := s.Stats(1).Stalls; n != 0 {
				t.Errorf("drop at %v size %d: lte at 0.4 Mbit/s stalled %d times, want 0", drop, known, n)
			}
		}
	}
}

// TestSimSilentPathWhilePartnerDelivers is mp-tools' kill cell: on
// Figure 8's (10, 5) paths wifi loses every packet from some moment on, its
// connection left open, while lte delivers all the while. mph2's silence
// rule (PING unanswered and no frame for 3 s) alone moves wifi's range to
// lte 3 s after wifi's last byte: with wifi dead at 4 s, lte finished its
// own share at 5.4 s and idled until 7 s (done 7.17 s against the fluid
// ideal's 5.54). A path silent for HandoverAfter while another delivers
// gives its range up then (checkSilent): 5.55 s. At 2 s lte's own share
// outlasts the 3 s anyway (9.55 s both ways, ideal 9.54).
func TestSimSilentPathWhilePartnerDelivers(t *testing.T) {
	const size = 8 << 20
	for _, death := range []time.Duration{2 * time.Second, 4 * time.Second} {
		for _, known := range []int64{-1, size} {
			paths := fig8Paths(10, 5, 64<<10)
			paths[0].Rate = []rateStep{{0, mbit(10)}, {death, 0}}
			var s *Scheduler
			r, err := runSimWith(simConfig{Size: size, Paths: paths, Sched: Config{Size: known}, SilentAfter: 3 * time.Second}, true,
				func(x *Scheduler) { s = x })
			if err != nil {
				t.Fatal(err)
			}
			// Both full until the death, lte alone after (dropIdeal with
			// the paths' roles swapped: the "drop" takes wifi to 0).
			ideal := dropIdeal(size, mbit(5), mbit(10), 0, 65*time.Millisecond, 28*time.Millisecond, death)
			t.Logf("death %v size %d: %v, fluid ideal %v, wifi's last byte %v, stalls %d at %v, delivered %v, tail bytes %v, requests %v",
				death, known, r.Done.Round(time.Millisecond), ideal.Round(time.Millisecond), r.Last[0].Round(time.Millisecond),
				s.Stats(0).Stalls, s.Stats(0).FirstStall.Sub(epoch), r.Delivered, r.Wasted, r.Requests)
			if limit := ideal + 300*time.Millisecond; r.Done > limit {
				t.Errorf("death %v size %d: done after %v, want <= %v (the fluid ideal + 300 ms)", death, known, r.Done, limit)
			}
			// The range moves HandoverAfter after wifi's last byte, at the
			// next event (lte's DATA: within a frame time).
			stall := s.Stats(0).FirstStall.Sub(epoch)
			if s.Stats(0).Stalls != 1 || s.Stats(1).Stalls != 0 || stall < r.Last[0]+DefaultHandoverAfter || stall > r.Last[0]+DefaultHandoverAfter+50*time.Millisecond {
				t.Errorf("death %v size %d: stalls wifi %d (first at %v, its last byte %v), lte %d; want wifi's one HandoverAfter after its last byte, none on lte",
					death, known, s.Stats(0).Stalls, stall, r.Last[0], s.Stats(1).Stalls)
			}
		}
	}
}

// TestSimInOrderPrefix: a 6305 kbit/s DASH segment (4.73 MB) of unknown size
// over (5,5) Mbit/s paths at 28 and 65 ms, both paths' rates known from
// earlier segments (a proxy's estimate cache), read in order by the
// application. The old split gives the primary the first half, so the
// contiguous prefix grows at one path's rate until that half is in (dash.js,
// measuring from the first byte, saw 3.0-3.2 Mbit/s and abandoned such
// segments). In pieces, the prefix lags the bytes the paths delivered by
// about a piece per path, so it grows at both paths' rate, and the paths
// still finish together, as soon as with the old split.
func TestSimInOrderPrefix(t *testing.T) {
	const size = 4_729_809
	paths := fig8Paths(5, 5, 64<<10)
	sum := mbit(5) + mbit(5)
	var done [2]time.Duration
	for k, inOrder := range []bool{false, true} {
		r, err := runSim(simConfig{Size: size, Paths: paths, Sched: Config{Size: -1, Prior: exactPrior(paths), InOrder: inOrder}}, true)
		if err != nil {
			t.Fatal(err)
		}
		done[k] = r.Done
		var lag int64
		for _, p := range r.Prefix {
			lag = max(lag, p.Got-p.N)
		}
		first := r.Prefix[0].At
		at := first + 800*time.Millisecond // dash.js judged the segments 0.7-0.85 s in
		t.Logf("in order %v: %v, %v requests, paths end %v apart, most delivered out of order %d B, prefix at +0.8 s at %.0f%% of both paths' rate",
			inOrder, r.Done.Round(time.Millisecond), r.Requests, absDur(r.Last[0]-r.Last[1]).Round(time.Millisecond),
			lag, 100*float64(r.prefixBy(at))/0.8/sum)
		if !inOrder {
			continue
		}
		if most := int64(sum * PieceTime.Seconds()); lag > most {
			t.Errorf("in order: %d bytes delivered ahead of the prefix, want <= a piece per path (%d)", lag, most)
		}
		if gap := absDur(r.Last[0] - r.Last[1]); gap > DefaultDelta {
			t.Errorf("in order: paths finish %v apart, want <= δ", gap)
		}
	}
	if done[1] > done[0]+done[0]/100 {
		t.Errorf("in order took %v, the split %v: more than 1%% longer", done[1], done[0])
	}
}
