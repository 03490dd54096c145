package hints

import (
	"math"
	"slices"
	"time"
)

// PathState is what the client knows of one path when it decides.
type PathState struct {
	Name string
	// Up: the path's connection is established. A path still connecting
	// may be chosen (its requests wait for the handshake); its RTT is then
	// at least the time since DialStart.
	Up        bool
	DialStart time.Time
	RTT       time.Duration // smoothed PING (or handshake) RTT; 0 unknown
	// RTTVar is the RTT samples' mean deviation (as TCP's RTTVAR): how far
	// a response's first byte may lag the RTT before it counts as late.
	RTTVar time.Duration
	// MinRTT is the lowest RTT seen (0 unknown): the path's latency without
	// the queue its own transfers build, which "fast" compares, so a fast
	// path that just carried a burst is not taken for a slow one.
	MinRTT    time.Duration
	Bandwidth float64 // bytes/s; 0 unknown
	Loss      float64 // fraction of packets lost (0..1)
	Cost      float64 // cost per byte (any unit: only the order matters)
	// Sent is the body bytes already put on the path in this load
	// (requested, counting known sizes), for budgets.
	Sent int64
	// Queued is the body bytes requested on the path and not yet received,
	// for finish-time estimates.
	Queued int64
}

// rtt is the path's RTT or, while it connects, the lower bound now gives.
func (p PathState) rtt(now time.Time) time.Duration {
	if !p.Up && !p.DialStart.IsZero() {
		return max(p.RTT, now.Sub(p.DialStart))
	}
	return p.RTT
}

// finish estimates when size more bytes would be done on the path: one RTT
// plus what is queued ahead and the object at its bandwidth (the RTT alone
// when the bandwidth is unknown).
func (p PathState) finish(size int64, now time.Time) time.Duration {
	d := p.rtt(now)
	if p.Bandwidth > 0 && size > 0 {
		d += time.Duration(float64(p.Queued+size) / p.Bandwidth * float64(time.Second))
	}
	return d
}

// Decision is where one request goes.
type Decision struct {
	Path int // index into the path states
	// Second, if >= 0, is the path of a redundant copy: the first response
	// to complete wins and the other is cancelled.
	Second int
	// Tail, if > 0, is the re-request threshold: once at most Tail bytes
	// remain and the other path would deliver them sooner (ShouldTail), they
	// are requested again by Range on it.
	Tail int64
	// Hedge: the response's rest is asked for on another path once it is
	// late (ShouldHedge), and the copy clearly behind is cancelled (Behind).
	Hedge bool
	// CopyPct, if > 0, bounds the tails' and hedges' bytes to this share of
	// the bytes placed, or of the load's when known (CopyFits).
	CopyPct float64
	// Split, if > 0, is the object's first Split bytes, asked for on Path
	// (by Range) while the rest is asked for on path Rest at once: what a
	// cap leaves Path of an object larger than that (a split rule).
	Split int64
	Rest  int
	// Join: the response, asked for whole on Path while another path
	// still connects, may have its rest taken by that path once it is up
	// and idle (Policy.Join).
	Join bool
	Rule int // the rule's line in its file (0: no rule matched)
}

// Redundant reports whether the request goes on two paths.
func (d Decision) Redundant() bool { return d.Second >= 0 }

// Decide places one request. No path: Decision{Path: -1}.
func (p *Policy) Decide(h Hint, paths []PathState, now time.Time) Decision {
	return p.DecideLoad(h, paths, now, 0)
}

// DecideLoad is Decide in a load whose bytes the client knows (load > 0,
// e.g. a page's): the caps are shares of them.
func (p *Policy) DecideLoad(h Hint, paths []PathState, now time.Time, load int64) Decision {
	d := Decision{Path: -1, Second: -1}
	if len(paths) == 0 {
		return d
	}
	size := max(h.Size, 0)
	capped := func(i int) bool { return !p.CapFits(i, size, paths, now, load) }
	r, ok := p.match(h, paths)
	if !ok {
		d.Path = pick(Finish, h, paths, now, -1, capped)
		if d.Path < 0 {
			d.Path = pick(Finish, h, paths, now, -1, nil)
		}
		return d
	}
	d.Rule, d.Tail, d.Hedge, d.CopyPct = r.Line, r.Tail, r.Hedge, r.CopyPct
	var total int64
	for _, ps := range paths {
		total += ps.Sent
	}
	over := func(i int) bool {
		if capped(i) || r.Budget > 0 && paths[i].Sent+size > r.Budget {
			return true
		}
		return r.BudgetPct > 0 && float64(paths[i].Sent+size)*100 > r.BudgetPct*float64(total+size)
	}
	if r.Split {
		if s := p.split(r, h, paths, now, load); s.Path >= 0 {
			return s
		}
	}
	d.Path = pick(r.Path, h, paths, now, -1, over)
	if d.Path < 0 {
		// Every path of the preference is over its budget: the rule's
		// fallback is the cheapest path the caps allow (any, when they
		// allow none: the request has to go somewhere).
		if d.Path = pick(Cheap, h, paths, now, -1, capped); d.Path < 0 {
			d.Path = pick(Cheap, h, paths, now, -1, nil)
		}
	}
	if r.Redundant && len(paths) > 1 {
		d.Second = pick(Fast, h, paths, now, d.Path, over)
		if d.Second == d.Path {
			d.Second = -1
		}
	}
	if len(paths) < 2 {
		d.Tail, d.Hedge = 0, false
	}
	// A join is for a path that comes up later: a response asked for while
	// every path is up is not held (its credit, sized before its path's
	// bandwidth is known, would slow it behind the path's other responses).
	for i, ps := range paths {
		d.Join = d.Join || r.Join && i != d.Path && !ps.Up
	}
	return d
}

// split places a split rule's request that its preferred path (the one
// the rule names, its caps aside) has room for in part only: its head, as
// many bytes as the caps leave that path (CapRoom), there,
// and the rest on the cheapest other path the caps allow, both at once, so
// the path's room is spent on the object instead of left unused. No split
// (Path -1) when the size is unknown, nothing is left, the whole fits, or
// no other path may take the rest.
func (p *Policy) split(r *Rule, h Hint, paths []PathState, now time.Time, load int64) Decision {
	no := Decision{Path: -1, Second: -1}
	j := pick(r.Path, h, paths, now, -1, nil)
	if h.Size <= 0 || j < 0 {
		return no
	}
	room := p.CapRoom(j, h.Size, paths, now, load)
	if room <= 0 || room >= h.Size {
		return no
	}
	rest := pick(Cheap, h, paths, now, j, func(i int) bool { return !p.CapFits(i, h.Size-room, paths, now, load) })
	if rest < 0 {
		return no
	}
	return Decision{Path: j, Second: -1, Split: room, Rest: rest, Rule: r.Line}
}

// CapFits reports whether path i may carry n more bytes under the
// policy's caps (a cap line naming it): its bytes so far (Sent) and n
// within the cap's share of load when known (> 0), else of the bytes placed
// so far and n. A known load is the base even once more bytes have been
// placed: those are copies (tails, redundant requests) of its bytes.
func (p *Policy) CapFits(i int, n int64, paths []PathState, now time.Time, load int64) bool {
	return n <= p.CapRoom(i, n, paths, now, load)
}

// CapRoom is how many bytes path i may still carry under the policy's caps
// when n bytes are placed over the paths (CapFits' base): MaxInt64 when no
// cap names it, else at least 0.
func (p *Policy) CapRoom(i int, n int64, paths []PathState, now time.Time, load int64) int64 {
	room := int64(math.MaxInt64)
	if len(p.Caps) == 0 { // Decide asks for every path of every request
		return room
	}
	total := load
	if load <= 0 {
		total = n
		for _, ps := range paths {
			total += ps.Sent
		}
	}
	for _, c := range p.Caps {
		var j int
		if c.Path == Fast || c.Path == Cheap {
			j = pick(c.Path, Hint{}, paths, now, -1, nil)
		} else {
			j = slices.IndexFunc(paths, func(ps PathState) bool { return ps.Name == c.Path })
		}
		if j == i {
			// n fits while (Sent + n) * 100 <= Pct * total.
			left := math.Floor((c.Pct*float64(total) - float64(paths[i].Sent)*100) / 100)
			room = min(room, int64(max(left, 0)))
		}
	}
	return room
}

// First reports whether a is placed before b when they are gathered
// (Policy.Gather): urgent classes first, then the lower RFC 9218 urgency
// (unknown last), then the smaller (unknown last).
func First(a, b Hint) bool {
	if a.Urgent() != b.Urgent() {
		return a.Urgent()
	}
	if ua, ub := unknownLast(int64(a.Urgency)), unknownLast(int64(b.Urgency)); ua != ub {
		return ua < ub
	}
	return unknownLast(a.Size) < unknownLast(b.Size)
}

func unknownLast(v int64) int64 {
	if v < 0 {
		return math.MaxInt64
	}
	return v
}

// pick returns the path the preference names among those not excluded
// (skip, or over its budget), or -1.
func pick(pref string, h Hint, paths []PathState, now time.Time, skip int, over func(int) bool) int {
	best, bestKey := -1, math.Inf(1)
	for i, ps := range paths {
		if i == skip || (over != nil && over(i)) {
			continue
		}
		var key float64
		switch pref {
		case Fast:
			key = float64(ps.rtt(now))
			if ps.MinRTT > 0 {
				key = float64(ps.MinRTT)
			}
		case Cheap:
			// Cost first; among equal costs the faster path.
			key = ps.Cost*1e12 + float64(ps.rtt(now))/1e3
		case Finish:
			key = float64(ps.finish(max(h.Size, 0), now))
		default:
			if ps.Name != pref {
				continue
			}
		}
		if key < bestKey {
			best, bestKey = i, key
		}
	}
	return best
}

// Transfer is one request's response in flight, for ShouldTail,
// ShouldHedge and Behind.
type Transfer struct {
	Path      int
	Size      int64     // body bytes; <= 0 unknown (no tail)
	From      int64     // the offset the request asked from (a tail's or a hedge's)
	Received  int64     // the offset reached
	Start     time.Time // the request was sent (zero: unknown)
	FirstByte time.Time // zero: no byte yet
	LastByte  time.Time
	// Held is the offset up to which the client has let the server send
	// (flow control); 0: not held, the response cannot be stopped at a
	// byte (Join).
	Held int64
}

// ShouldTail decides whether the rest of t, from offset Received, is asked
// for again on another path, and which: when at most d.Tail bytes remain
// and that path's RTT plus the rest at its bandwidth ends before the
// transfer's own path delivers them at the rate it has shown so far. A
// transfer silent for longer than its path's RTT counts the silence again,
// as a stall that may last as long (loss recovery). -1: no tail.
func ShouldTail(d Decision, t Transfer, paths []PathState, now time.Time) int {
	rest := t.Size - t.Received
	if d.Tail <= 0 || t.Size <= 0 || rest <= 0 || rest > d.Tail || t.FirstByte.IsZero() || t.Path < 0 || t.Path >= len(paths) {
		return -1
	}
	eta, ok := t.eta(paths[t.Path], now, 0)
	if !ok {
		return -1
	}
	return soonest(paths, t.Path, rest, eta, now, false)
}

// soonest is the live path other than skip that would deliver rest bytes
// first, and before eta (clear: before eta by more than its own RTT), or -1.
func soonest(paths []PathState, skip int, rest int64, eta time.Duration, now time.Time, clear bool) int {
	best, bestETA := -1, eta
	for i, ps := range paths {
		if i == skip || !ps.Up {
			continue
		}
		e := ps.finish(rest, now)
		if clear && e+ps.rtt(now) >= eta {
			continue
		}
		if e < bestETA {
			best, bestETA = i, e
		}
	}
	return best
}
