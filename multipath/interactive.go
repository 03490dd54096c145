package multipath

import (
	"math"
	"time"
)

// Interactive mode's choice of path: each download whole on the path with
// the lowest expected completion time, response delay plus size over
// bandwidth. With every path's bandwidth known (Config.Prior: estimates
// carried across downloads) that is decided at the start. A path never
// measured cannot be ranked, and ranking by response delay alone rides the
// slow path whenever the low-delay path is the slow one (Figure 8's (5,10)
// on the testbed: 1.9x the best single path). So the download starts on
// the path expected to finish first (the least RTT when nothing else is
// known), and every unmeasured path gets a probe: a small range of the
// object's tail, fetched in parallel and delivered like any other bytes.
// Once every path with work has an estimate, the scheduler compares
// finishing as things stand with one path taking over every byte not yet
// committed to another; it moves the rest once, if that ends more than δ
// sooner (the path in use credited with the rate it has held) at every
// look for ProbeConfirm, and stops choosing when it has moved or the
// probes are in. While a move waits for that confirmation, the probed
// path it would go to gets the next bytes of the range in use once its
// own run out (keepBusy), so it does not idle until the move. Near its
// end the path in use takes back what another path would bring later
// (rebalance). No range is split beyond that.

const (
	// ProbeMinRemaining is the least remainder worth a probe: below it an
	// object is mostly slow start and response delay, where the path of
	// least RTT is as good a bet as any.
	ProbeMinRemaining = 256 << 10
	// ProbeMax bounds a probe. A quarter of the object, so that a probe on
	// a path up to three times slower than the first ends no later than
	// the first path's range; 512 KB at most, which from TCP's initial
	// window of 10 segments is five round trips of slow start, enough for
	// the last ones to arrive at the path's rate.
	ProbeMax = 512 << 10
	// ProbeConfirm is how long the rest of an object must have looked
	// better off elsewhere before it moves: two PING ticks, beyond the
	// stall of a loss recovered by fast retransmit on the paths of the
	// paper (a round trip plus a queue of 100 KB).
	ProbeConfirm = 200 * time.Millisecond
	// ProbeStale is the age from which a path's cached bandwidth is probed
	// again. A path not chosen carries nothing, so its estimate is never
	// refreshed: one taken low (in a probe's slow start, or while the
	// client was short of CPU) kept the next downloads on the slower path
	// for as long as the cache kept it (shunt proxy on Figure 8's (5,10),
	// 1 MB: 7 of 9 responses from the cache on the 5 Mbit/s path, 1.55x
	// curl on the 10 Mbit/s one). The download still starts where the
	// cache says; the probe may move it.
	ProbeStale = 10 * time.Second
)

// probes returns the paths Interactive probes for a remainder of rem
// bytes, and each probe's size: the paths that may take work whose
// bandwidth is not known (or known from a prior older than ProbeStale),
// other than the path in use.
func (s *Scheduler) probes(now time.Time, rem int64) ([]PathID, int64) {
	if s.cfg.Mode != Interactive || s.active < 0 || rem < ProbeMinRemaining {
		return nil, 0
	}
	n := min(rem/4, ProbeMax)
	var qs []PathID
	for i, p := range s.paths {
		q := PathID(i)
		if q == s.active || s.measured(now, q) || !p.up || !p.stalledAt.IsZero() || s.room(q) < n {
			continue
		}
		qs = append(qs, q)
	}
	if int64(len(qs)+1)*n > rem {
		return nil, 0
	}
	return qs, n
}

// measured: path p's bandwidth is known from this download or from a prior
// younger than ProbeStale.
func (s *Scheduler) measured(now time.Time, p PathID) bool {
	if _, ok := s.paths[p].bw.Estimate(now); ok {
		return true
	}
	ps := s.paths[p]
	return ps.prior.Bandwidth > 0 && (ps.priorAt.IsZero() || now.Sub(ps.priorAt) <= ProbeStale)
}

// requestProbes asks each of qs for n bytes of the object's range
// [end, ...), one after another from end.
func (s *Scheduler) requestProbes(now time.Time, qs []PathID, end, n int64) {
	for _, q := range qs {
		s.request(now, q, end, end+n)
		end += n
	}
	s.probing = len(qs) > 0
}

// reprobe gives the response its one move back when path p returns from a
// silence (Interactive). The move that took the rest off a silent path was
// forced, not chosen, so it does not count: p, with a fresh estimate, gets
// a probe of the tail of the range in use, and reconsider may move the
// rest to it once, as at the start. Without it the rest rode the path it
// was forced onto until that one went silent too (h65, tmo-att at 16 MB:
// AT&T's lte from wifi's gap at 8 s to its own at 14 s, then silent, while
// T-Mobile's wifi was back from about 12.5 s: 1.175x wifi alone).
func (s *Scheduler) reprobe(now time.Time, p PathID) {
	if s.cfg.Mode != Interactive || s.probing || s.active < 0 || p == s.active || s.size < 0 || s.noRanges ||
		!s.paths[p].up || !s.paths[p].stalledAt.IsZero() || s.streams(p) >= s.cfg.MaxStreamsPerPath {
		return
	}
	// The range in use with the most bytes not yet credited gives the tail.
	var x *stream
	var from int64
	for _, st := range s.live {
		if st.path != s.active || st.end < 0 {
			continue
		}
		if c := min(max(s.committed(now, st), st.pos), st.end); x == nil || st.end-c > x.end-from {
			x, from = st, c
		}
	}
	if x == nil {
		return
	}
	rem := x.end - from
	n := min(rem/4, ProbeMax)
	if rem < ProbeMinRemaining || s.room(p) < n {
		return
	}
	s.forgetBandwidth(p)
	b := x.end
	s.setEnd(x, b-n)
	s.request(now, p, b-n, b)
	s.probing, s.movable, s.extended = true, time.Time{}, false
}

// reconsider is Interactive's second look, made at every event while
// probes are out: it moves the rest of the object to the path that would
// end the download first, once, if that is more than δ sooner than as
// things stand.
func (s *Scheduler) reconsider(now time.Time) {
	if !s.probing {
		return
	}
	busy := false // another path than the one in use has work
	for _, st := range s.live {
		busy = busy || st.path != s.active
	}
	if !busy && s.movable.IsZero() || s.active < 0 || !s.paths[s.active].up {
		s.probing = false // the probes are in, or a failover chose
		return
	}
	stay, known := s.ends(now, s.heldRate)
	if !known && s.streams(s.active) > 0 {
		return // an estimate is still missing
	}
	// Otherwise the path in use is idle beside a probe that has not given
	// an estimate: too slow to rank, so any path that is does better.
	best, found, retake := PathID(0), false, false
	var bestT time.Time
	for i, p := range s.paths {
		w := PathID(i)
		if !p.up || !p.stalledAt.IsZero() {
			continue
		}
		for _, keep := range []bool{true, false} {
			if t, ok := s.takeover(now, w, keep, s.heldRate); ok && (!found || t.Before(bestT)) {
				best, bestT, found, retake = w, t, true, !keep
			}
		}
	}
	if !found || known && !bestT.Add(s.cfg.Delta).Before(stay) {
		s.movable = time.Time{}
		s.probing = busy
		return
	}
	// The estimates of a slow start's first rounds move fast: the move
	// must have paid at every look for ProbeConfirm, the probes in or not.
	if s.movable.IsZero() {
		s.movable = now
	}
	if now.Sub(s.movable) < ProbeConfirm {
		if best != s.active {
			s.keepBusy(now, best)
		}
		return
	}
	for i := range s.paths {
		if PathID(i) != best {
			s.paths[best].stats.Retaken += s.cutPath(now, PathID(i), !retake)
		}
	}
	if best != s.active {
		s.handovers = append(s.handovers, Switch{At: now, From: s.active, To: best, Why: "probe"})
		s.active = best
	}
	s.probing = false
}

// heldRate is the rate reconsider credits path p with: its estimate, and
// for the path in use at least its mean rate since its first byte. The
// move is made once, on estimates taken early, and the estimate of the
// path in use drops while TCP recovers a loss of its slow start (no byte
// for a round trip or two, then all at once): on Figure 8's (10,5) a
// 100 ms stall of wifi 0.3 s in made lte look faster, and 64 MB went over
// lte (107 s against wifi's 53 s). A path is left only for one faster
// than it has been so far.
func (s *Scheduler) heldRate(now time.Time, p PathID) (float64, bool) {
	bw, ok := s.bandwidth(now, p)
	st := s.paths[p].stats
	if d := now.Sub(st.FirstData).Seconds(); p == s.active && st.Received > 0 && d > 0 {
		bw, ok = max(bw, float64(st.Received)/d), true
	}
	return bw, ok
}

// ends is when every path's wanted bytes are in as things stand, each at
// the rate rate gives it; false if a path with work has none.
func (s *Scheduler) ends(now time.Time, rate func(time.Time, PathID) (float64, bool)) (time.Time, bool) {
	end := now
	for i, p := range s.paths {
		if !p.up || s.streams(PathID(i)) == 0 {
			continue
		}
		bw, bwOK := rate(now, PathID(i))
		_, want, ok := s.finishAt(now, PathID(i), bw, bwOK)
		if !ok {
			return end, false
		}
		if want.After(end) {
			end = want
		}
	}
	return end, true
}

// takeover is when the download would end if path w took over every byte
// not committed to another path's stream (keepCredit), or not received on
// it: the other streams deliver their credited bytes (at their path's
// rate, where it is known) or are reset, and w fetches the rest after its
// own work, one unqueued round trip from now at the soonest. Giving up
// credited bytes pays where a probe's path is so slow that its first
// credit would arrive after w has fetched it afresh. Rates come from
// rate. False if w has no rate or lacks the budget.
func (s *Scheduler) takeover(now time.Time, w PathID, keepCredit bool, rate func(time.Time, PathID) (float64, bool)) (time.Time, bool) {
	bw, ok := rate(now, w)
	t, _, ok2 := s.finishAt(now, w, bw, ok)
	if !ok || !ok2 || bw <= 0 {
		return now, false
	}
	end := now
	var moved int64
	for _, st := range s.live {
		if st.path == w || st.end < 0 {
			continue
		}
		c := st.pos
		if keepCredit {
			c = min(max(s.committed(now, st), st.pos), st.end)
		}
		moved += st.end - c
		if bwX, ok := rate(now, st.path); ok && bwX > 0 {
			if f := now.Add(bytesTime(c-st.pos, bwX)); f.After(end) {
				end = f
			}
		}
	}
	if moved > s.room(w) {
		return now, false
	}
	start := now.Add(s.baseRTT(w))
	if t.After(start) {
		start = t
	}
	if f := start.Add(bytesTime(moved, bw)); f.After(end) {
		end = f
	}
	return end, true
}

// bytesTime is how long n bytes take at bw bytes per second.
func bytesTime(n int64, bw float64) time.Duration {
	return time.Duration(float64(n) / bw * 1e9)
}

// fastest is the path with the lowest expected completion time of the
// object (response delay + size / bandwidth) among those ok allows. A path
// whose bandwidth is not known yet is taken to be as fast as the fastest
// known one, so the response delay ranks it against those (and probes tell
// later); with no bandwidth known at all, the least response delay wins,
// then the order.
func (s *Scheduler) fastest(now time.Time, ok func(PathID) bool) (PathID, bool) {
	size := float64(s.size)
	if s.size < 0 {
		size = DefaultExpectedSize
	}
	size -= float64(s.delivered.total())
	var top float64
	for i := range s.paths {
		if bw, known := s.bandwidth(now, PathID(i)); known && ok(PathID(i)) {
			top = math.Max(top, bw)
		}
	}
	best, found := PathID(0), false
	var bestT float64
	for i := range s.paths {
		p := PathID(i)
		if !ok(p) {
			continue
		}
		t := s.baseRTT(p).Seconds()
		bw, known := s.bandwidth(now, p)
		if !known {
			bw = top
		}
		if bw > 0 {
			t += size / bw
		}
		if !found || t < bestT {
			best, found, bestT = p, true, t
		}
	}
	return best, found
}

// keepBusy gives path p, to which a move waits for ProbeConfirm, the tail
// of the range in use once p's own work ends within a round trip: what p
// delivers until the move is due and its request answered, at most
// ProbeMax, once per download. Left idle, the probe's path waited for the move (the testbed's
// att-tmo at 1 MB: lte idle 0.15-0.27 s, then sending again round trip by
// round trip), which cost more than the probe's bytes gained: 1.03x the
// best single path.
func (s *Scheduler) keepBusy(now time.Time, p PathID) {
	if s.extended || s.streams(p) >= s.cfg.MaxStreamsPerPath {
		return
	}
	bw, ok := s.bandwidth(now, p)
	t, _, ok2 := s.finish(now, p)
	if !ok || !ok2 || t.Sub(now) > s.baseRTT(p) {
		return
	}
	var x *stream
	for _, st := range s.live {
		if st.path == s.active && st.end >= 0 && (x == nil || st.end-st.pos > x.end-x.pos) {
			x = st
		}
	}
	if x == nil {
		return
	}
	// At most a probe's worth: the move is not confirmed yet, and a path
	// whose estimate is still a slow start's (or loopback's, unbounded)
	// would otherwise take the whole rest without a move.
	n := min(int64(bw*(ProbeConfirm-now.Sub(s.movable)+s.baseRTT(p)).Seconds()), ProbeMax)
	a := max(x.end-min(n, s.room(p)), min(max(s.committed(now, x), x.pos), x.end))
	if x.end-a < s.cfg.MinChunk {
		return
	}
	b := x.end
	s.setEnd(x, a)
	s.request(now, p, a, b)
	s.extended = true
}
