package multipath

import (
	"fmt"
	"time"
)

// Mode says how a download uses its paths, as the operating systems' multipath
// modes do (Apple's MPTCP service types, Android's multipath preference).
type Mode uint8

const (
	// Aggregate spreads the object over every path so that all finish
	// together (MP-H2 as the paper evaluates it).
	Aggregate Mode = iota
	// Handover uses one path at a time: the first path that is up, has not
	// stalled and has budget left. When the path in use stalls (no byte for
	// HandoverAfter while it has work) or goes silent or down, its
	// outstanding ranges move to the next; once the earlier path answers a
	// PING sent after its stall, the work goes back to it.
	Handover
	// Interactive sends each download whole on the path with the lowest
	// expected completion time from the estimates: response delay plus size
	// over bandwidth. A path with no estimate younger than ProbeStale is
	// sent a probe, a range of the object's tail of at most ProbeMax, and
	// while a move to it is confirmed one extension of at most ProbeMax
	// (keepBusy); the rest of the object moves at most once, to the path
	// that would finish it first (interactive.go). So without a move or a
	// silence another path receives at most 2 x ProbeMax of the object.
	// Another path takes over only if that one goes silent (checkSilent)
	// or down, or its budget runs out; such a forced move is not the one
	// move, and a path back from silence is probed again (reprobe).
	Interactive
)

func (m Mode) String() string {
	switch m {
	case Aggregate:
		return "aggregate"
	case Handover:
		return "handover"
	case Interactive:
		return "interactive"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Aggregate, Handover, Interactive} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("mode %q: want aggregate, handover or interactive", s)
}

// Defaults of the modes.
const (
	// DefaultHandoverAfter is how long the path in use may deliver nothing
	// while it has work before Handover moves to the next path: well above
	// a response delay on the paths of the paper (28..65 ms RTT, a queue of
	// 160 ms), well below the seconds of a cellular outage.
	DefaultHandoverAfter = time.Second
	// DefaultExpectedSize stands in for the size of an object whose size is
	// not known when Interactive picks its path.
	DefaultExpectedSize = 1 << 20
)

// Switch is one change of the path in use (Handover and Interactive).
type Switch struct {
	At       time.Time
	From, To PathID // From is -1 for the first choice
	Why      string // "start", "stall", "silent", "down", "budget", "back", "probe"
}

// usable reports whether path p may be given new work in the mode.
func (s *Scheduler) usable(p PathID) bool {
	ps := s.paths[p]
	if !ps.up || s.room(p) <= 0 {
		return false
	}
	if s.cfg.Mode == Aggregate {
		return ps.stalledAt.IsZero()
	}
	return p == s.active
}

// workPaths are the paths that may be given new work.
func (s *Scheduler) workPaths() []PathID {
	var ps []PathID
	for i := range s.paths {
		if s.usable(PathID(i)) {
			ps = append(ps, PathID(i))
		}
	}
	return ps
}

// choose sets the path in use of Handover and Interactive, and moves the
// work of the path it replaces. why names the event that asked.
func (s *Scheduler) choose(now time.Time, why string) {
	if s.cfg.Mode == Aggregate || s.done {
		return
	}
	next, ok := s.pick(now)
	if !ok || next == s.active {
		return
	}
	old := s.active
	s.active = next
	switch {
	case old < 0: // the first choice
	case why == "back":
		s.cutAtCommitted(now, old)
	case why == "stall":
		// A stalled path's credited bytes will not come soon: all of its
		// outstanding range moves, and what still arrives is tail bytes.
		s.moveStreams(old, true)
	}
	// Otherwise the old path is down or silent (its streams already moved)
	// or out of budget (it finishes the ranges its budget holds).
	s.handovers = append(s.handovers, Switch{At: now, From: old, To: next, Why: why})
}

// back re-admits path p after a silence: a PING answer after its stall
// (OnRTT), or OnPathResume.
func (s *Scheduler) back(now time.Time, p PathID) {
	s.choose(now, "back")
	s.reprobe(now, p)
}

// pick is the path the mode wants in use now.
func (s *Scheduler) pick(now time.Time) (PathID, bool) {
	ok := func(p PathID) bool { return s.paths[p].up && s.room(p) > 0 }
	if s.cfg.Mode == Handover {
		// The first path that is up and has not stalled, in order; if every
		// one has stalled, the current one stays.
		for i, ps := range s.paths {
			if ok(PathID(i)) && ps.stalledAt.IsZero() {
				return PathID(i), true
			}
		}
		if s.active >= 0 && ok(s.active) {
			return s.active, true
		}
		for i := range s.paths {
			if ok(PathID(i)) {
				return PathID(i), true
			}
		}
		return 0, false
	}
	// Interactive keeps its path while it can work and has not gone silent
	// (checkSilent); a silent one only if no other path can take over.
	live := func(p PathID) bool { return ok(p) && s.paths[p].stalledAt.IsZero() }
	if s.active >= 0 && live(s.active) {
		return s.active, true
	}
	if p, found := s.fastest(now, live); found {
		return p, true
	}
	if s.active >= 0 && ok(s.active) {
		return s.active, true
	}
	return s.fastest(now, ok)
}

// cutAtCommitted ends path p's streams where their credited bytes end, and
// gives the rest of their ranges to the schedule: the path handed back from
// delivers what is on its way, nothing more.
func (s *Scheduler) cutAtCommitted(now time.Time, p PathID) { s.cutPath(now, p, true) }

// cutPath ends path p's streams where their credited bytes end (keepCredit),
// or where their received bytes end, and gives the rest of their ranges to
// the schedule. It returns the credited bytes given up: the server may
// still send them on p, so they may come twice.
func (s *Scheduler) cutPath(now time.Time, p PathID, keepCredit bool) int64 {
	var retaken int64
	for _, st := range append([]*stream(nil), s.live...) {
		if st.path != p || st.end < 0 {
			continue
		}
		c := min(max(s.committed(now, st), st.pos), st.end)
		if !keepCredit {
			retaken += c - st.pos
			c = st.pos
		}
		if c >= st.end {
			continue
		}
		s.delivered.gaps(c, st.end, func(a, b int64) { s.orphans.add(a, b) })
		s.setEnd(st, c)
	}
	return retaken
}

// checkStall marks the path in use stalled when it has had work and
// delivered nothing for HandoverAfter (Handover; the other modes:
// checkSilent).
func (s *Scheduler) checkStall(now time.Time) {
	if s.cfg.Mode != Handover {
		s.checkSilent(now)
		return
	}
	if s.active < 0 {
		return
	}
	ps := s.paths[s.active]
	if ps.stalledAt.IsZero() && s.streams(s.active) > 0 && now.Sub(ps.progress) >= s.cfg.HandoverAfter {
		ps.stalledAt = now
		s.choose(now, "stall")
	}
}

// checkSilent (Aggregate, Interactive) moves the ranges of a path that has
// work and has been silent, no DATA and no PING answer, for
// max(HandoverAfter, 2 x its RTT), while another path that can take them
// has been heard from (DATA or PING answers) over at least the second half
// of that silence and still is. The caller's silence rule (mph2's 3 s
// floor) must not mistake a slow path for a dead one when no path can take
// over; here one evidently can: the server and the client work, so the
// silence is the path's. In Interactive the other paths are idle, so their
// PING answers are the evidence, and a silent path in use is replaced at
// once (h65's outage cells: the rest waited 3 s for the silence rule at
// every gap of the path in use). A live path answers a PING within its RTT (one is
// always outstanding) and starts a response within a response delay, so
// twice its RTT, and at least the 1 s that is well above the paper's
// response delays, is no working path; a path too slow to deliver a DATA
// frame within that (under some 130 kbit/s) gives its range up too, its
// credited bytes arriving as tail bytes. The partner's delivery must span
// the silence, not arrive in one burst, so that a stall of the client's
// own event loop (every path's events handled late at once) moves nothing.
// The path gets work again once it answers a PING sent after the stall
// (OnRTT), as a stalled path in Handover does.
func (s *Scheduler) checkSilent(now time.Time) {
	for k, ps := range s.paths {
		p := PathID(k)
		if !ps.up || !ps.stalledAt.IsZero() || s.streams(p) == 0 || !s.canTakeOver(p) {
			continue
		}
		after := max(s.cfg.HandoverAfter, 2*s.rttOf(p))
		heard := ps.heard()
		if now.Sub(heard) < after || !ps.partnerFrom.After(heard) ||
			now.Sub(ps.partnerFrom) < after/2 || now.Sub(ps.partnerLast) >= after/2 {
			continue
		}
		ps.stalledAt = now
		if ps.stats.Stalls == 0 {
			ps.stats.FirstStall = now
		}
		ps.stats.Stalls++
		s.moveStreams(p, true)
		if p == s.active {
			s.choose(now, "silent")
		}
	}
}

// canTakeOver: a path other than p is up, has room and has not stalled.
func (s *Scheduler) canTakeOver(p PathID) bool {
	for i, q := range s.paths {
		if PathID(i) != p && q.up && q.stalledAt.IsZero() && s.room(PathID(i)) > 0 {
			return true
		}
	}
	return false
}

// partnersHeard notes, for every path but p, that another path was heard
// from at now (checkSilent's evidence).
func (s *Scheduler) partnersHeard(p *path, now time.Time) {
	for _, q := range s.paths {
		if q != p {
			if !q.partnerFrom.After(q.heard()) {
				q.partnerFrom = now
			}
			q.partnerLast = now
		}
	}
}

// heard is when path p last gave a sign of life: DATA, a PING answer, or
// (the clock's start) the request that gave it work.
func (p *path) heard() time.Time {
	if p.pong.After(p.progress) {
		return p.pong
	}
	return p.progress
}

// Switches returns the changes of the path in use so far, the first
// choice included.
func (s *Scheduler) Switches() []Switch { return s.handovers }

// Active returns the path in use (Handover and Interactive); false in
// Aggregate mode or before the start.
func (s *Scheduler) Active() (PathID, bool) {
	return s.active, s.cfg.Mode != Aggregate && s.active >= 0
}
