package hints

import "time"

// Hedging (the rule action "hedge"): a response is watched from its request
// on and its rest asked for on another path only once it is late against
// what its own path's measured delay and bandwidth promised; the copy goes
// to the path that would deliver the rest soonest, by its recent (smoothed)
// RTT, and whichever of the two copies is then clearly behind is cancelled,
// so a copy costs what it received before that, not its whole size. On two
// equal paths a copy made at the request races the original neck and neck
// and costs about its whole size (docs/results.md, issue 19); a hedge made
// late and cut early pays for the stalls only.

// eta is how long the rest of t takes on its own path from now: at the rate
// it has shown since its first byte, once that spans at least window (the
// path's bandwidth before), a silence longer than the path's RTT counted
// again as a stall that may last as long (loss recovery). Before the first
// byte, a wait longer than the path's RTT and twice its deviation is
// counted again, as a silence is, and the body at the path's bandwidth
// follows. ok is false while there is nothing to judge by: no first byte
// and not yet late, or no rate.
func (t Transfer) eta(own PathState, now time.Time, window time.Duration) (time.Duration, bool) {
	rest := t.Size - t.Received
	if t.FirstByte.IsZero() {
		wait := now.Sub(t.Start)
		if t.Start.IsZero() || wait <= own.rtt(now)+2*own.RTTVar {
			return 0, false
		}
		if own.Bandwidth > 0 {
			wait += time.Duration(float64(rest) / own.Bandwidth * float64(time.Second))
		}
		return wait, true
	}
	rate := own.Bandwidth
	if el := t.LastByte.Sub(t.FirstByte); el > 0 && el >= window && t.Received > t.From {
		rate = float64(t.Received-t.From) / el.Seconds()
	}
	if rate <= 0 {
		return 0, false
	}
	eta := time.Duration(float64(rest) / rate * float64(time.Second))
	if silent := now.Sub(t.LastByte); silent > own.rtt(now) {
		eta += silent
	}
	return eta, true
}

// expected is when t would end if its path kept what it measured at the
// request: its RTT and twice the RTT's deviation, then the body at the
// path's bandwidth (unknown: no time for the body).
func (t Transfer) expected(own PathState, now time.Time) time.Time {
	end := t.Start.Add(own.rtt(now) + 2*own.RTTVar)
	if own.Bandwidth > 0 && t.Size > 0 {
		end = end.Add(time.Duration(float64(t.Size) / own.Bandwidth * float64(time.Second)))
	}
	return end
}

// ShouldHedge decides whether the rest of t, from offset Received, is asked
// for again on another path, and which (-1: no): when d hedges, t is late
// (it would end after expected) and another live path would deliver the
// rest sooner by more than that path's own RTT, so the copies do not race
// neck and neck; of those paths, the one that would deliver it first.
func ShouldHedge(d Decision, t Transfer, paths []PathState, now time.Time) int {
	rest := t.Size - t.Received
	if !d.Hedge || t.Size <= 0 || rest <= 0 || t.Path < 0 || t.Path >= len(paths) {
		return -1
	}
	own := paths[t.Path]
	eta, ok := t.eta(own, now, own.rtt(now))
	if !ok || !now.Add(eta).After(t.expected(own, now)) {
		return -1
	}
	return soonest(paths, t.Path, rest, eta, now, true)
}

// Behind decides which of two copies of one object, both running, is
// cancelled: the one whose rest would take more than twice as long as the
// other's, each at the rate it has shown over at least its path's RTT (0:
// a, 1: b, -1: neither, or no rate yet to judge by). A copy's first round
// trip of bytes comes as a burst (slow start, a jittery path's clumps),
// whose rate says nothing of the next.
func Behind(a, b Transfer, paths []PathState, now time.Time) int {
	if a.Path < 0 || a.Path >= len(paths) || b.Path < 0 || b.Path >= len(paths) || a.FirstByte.IsZero() || b.FirstByte.IsZero() {
		return -1
	}
	pa, pb := paths[a.Path], paths[b.Path]
	ea, oka := a.eta(pa, now, pa.rtt(now))
	eb, okb := b.eta(pb, now, pb.rtt(now))
	switch {
	case !oka || !okb:
		return -1
	case ea > 2*eb:
		return 0
	case eb > 2*ea:
		return 1
	}
	return -1
}

// CopyFits reports whether a copy of rest bytes stays within a budget of
// pct per cent of the bytes placed so far (placed), with charged bytes
// already spent on copies; pct <= 0: no budget. Each copy is charged all
// the bytes it may bring, so the copies never cost more than the budget,
// however the races end.
func CopyFits(pct float64, charged, placed, rest int64) bool {
	return pct <= 0 || float64(charged+rest)*100 <= pct*float64(placed)
}
