package hints

import (
	"slices"
	"time"
)

// Joining (the rule action "join"): a response in flight on its path,
// asked for whole when no other path was up, has its rest shared with a
// path that comes up idle later, when that finishes it sooner. The
// response's stream is held by flow control (the client grants its window
// only so far ahead of what has arrived: Transfer.Held), so it can be
// stopped at a byte chosen then; the other path asks for the bytes from
// there by Range. On hints-latency's pinterest the 344 KB document comes
// over exp while cheap, up at 160 ms, idles until the document is done and
// then starts the style sheet and script from a cold window (h75, issue 19).

// Joins reports whether a rule of p joins (the client must hold its
// streams' credit for it).
func (p *Policy) Joins() bool {
	return slices.ContainsFunc(p.Rules, func(r Rule) bool { return r.Join })
}

// joinWindow is what a path that has sent nothing yet delivers in its
// first round trip: Linux's initial window of 10 segments (RFC 6928) of
// 1448 bytes (IPv4, TCP timestamps). Each round trip after delivers
// joinGrowth times as much (slow start) up to the path's bandwidth-delay
// product: half as much again, not twice, as with an ACK for every second
// segment (RFC 5681's delayed ACKs); hints-latency's cheap path carried 10
// then 17 packets in its first two response round trips (h79's link log),
// and a doubling model gave it a part that needed a third.
const (
	joinWindow = 10 * 1448
	joinGrowth = 1.5
)

// Join decides whether the rest of t, a whole response on its path under a
// join rule whose stream the client holds (t.Held > 0), is split now: the
// response stops at offset at and path j asks for the bytes from there (-1:
// no). j is an idle path that is up (nothing queued on it, its RTT known);
// at is where both would finish together, the response's path going on at
// the rate it has shown, j starting one RTT from now in slow start from
// joinWindow (joinGrowth) at its bandwidth (the response's rate when it has
// none yet),
// and never below t.Held (credit given cannot be taken back). No join when
// j's part would be under joinWindow, when it would not end the object
// sooner, or when the caps leave j no room for it.
func (p *Policy) Join(d Decision, t Transfer, paths []PathState, now time.Time, load int64) (j int, at int64) {
	rest := t.Size - t.Received
	if !d.Join || d.Split > 0 || d.Redundant() || t.Size <= 0 || t.From != 0 || t.Held <= 0 || rest <= joinWindow ||
		t.FirstByte.IsZero() || t.Path < 0 || t.Path >= len(paths) {
		return -1, 0
	}
	own := paths[t.Path]
	rate := own.Bandwidth
	if el := t.LastByte.Sub(t.FirstByte); el > 0 && el >= own.rtt(now) && t.Received > 0 {
		rate = float64(t.Received) / el.Seconds()
	}
	if rate <= 0 {
		return -1, 0
	}
	alone := seconds(float64(rest) / rate)
	best, bestEnd := -1, alone
	for i, ps := range paths {
		if i == t.Path || !ps.Up || ps.Queued > 0 || ps.RTT <= 0 {
			continue
		}
		bw := ps.Bandwidth
		if bw <= 0 {
			bw = rate
		}
		s := slowStart{rtt: ps.RTT, rate: bw}
		// The earliest time from now by which both deliver the rest.
		lo, hi := time.Duration(0), alone
		for hi-lo > time.Microsecond {
			mid := (lo + hi) / 2
			if rate*mid.Seconds()+float64(s.by(mid-ps.RTT)) >= float64(rest) {
				hi = mid
			} else {
				lo = mid
			}
		}
		cut := max(t.Received+int64(rate*hi.Seconds()), t.Held)
		part := t.Size - cut
		if part < joinWindow || !p.CapFits(i, part, paths, now, load) {
			continue
		}
		end := max(seconds(float64(cut-t.Received)/rate), ps.RTT+s.until(part))
		if end < bestEnd {
			best, bestEnd, at = i, end, cut
		}
	}
	if best < 0 {
		return -1, 0
	}
	return best, at
}

// slowStart is a path that starts sending now: joinWindow in its first
// round trip, joinGrowth times as much in each next, at most a
// bandwidth-delay product a round trip, each round's bytes at the path's
// rate.
type slowStart struct {
	rtt  time.Duration
	rate float64 // bytes/s
}

// by is the bytes delivered within d of the first byte.
func (s slowStart) by(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	bdp := s.rate * s.rtt.Seconds()
	var n float64
	w := float64(joinWindow)
	for start := time.Duration(0); start < d; start += s.rtt {
		n += min(min(w, bdp), s.rate*(d-start).Seconds())
		w *= joinGrowth
	}
	return int64(n)
}

// until is how long after the first byte n bytes have been delivered.
func (s slowStart) until(n int64) time.Duration {
	lo, hi := time.Duration(0), s.rtt
	for s.by(hi) < n {
		lo, hi = hi, 2*hi
	}
	for hi-lo > time.Microsecond {
		mid := (lo + hi) / 2
		if s.by(mid) >= n {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
