package multipath

import (
	"fmt"
	"math"
	"time"
)

// A path's byte budget (Config.Budget) bounds the response body bytes the
// path may receive in the download, tail bytes included. The scheduler
// reserves, for every stream it opens on the path, everything the server
// could send on it: the whole requested range while the stream is open; once
// it is closed, what it received if it ended by itself or its connection
// died, else (a Reset: bytes already sent still arrive) its flow-control
// credit under FlowControl and its whole range under ResetStream. A request
// is sized to the room the reservations leave, so no order of events can
// make the path receive more than its budget.

// room is how many more bytes path p's requests may ask for; MaxInt64 if it
// has no budget.
func (s *Scheduler) room(p PathID) int64 {
	b := s.budget(p)
	if b <= 0 {
		return math.MaxInt64
	}
	return b - s.reserved(p)
}

func (s *Scheduler) budget(p PathID) int64 {
	if s.cfg.Budget == nil {
		return 0
	}
	return s.cfg.Budget[p]
}

// Reserved is what path p may have received or may still receive of its
// budget: Config.Spent, plus every byte its streams were sent or may still
// be sent. A client that shares a budget between downloads charges each
// download this, less its Spent, when it ends.
func (s *Scheduler) Reserved(p PathID) int64 { return s.reserved(p) }

// spentBefore is what path p had used of its budget before this download.
func (s *Scheduler) spentBefore(p PathID) int64 {
	if s.cfg.Spent == nil {
		return 0
	}
	return s.cfg.Spent[p]
}

// reserved is what path p may have received or still receive.
func (s *Scheduler) reserved(p PathID) int64 {
	n := s.paths[p].spent
	for _, st := range s.live {
		if st.path == p {
			n += s.respEnd(st) - st.start
		}
	}
	return n
}

// spend adds a closed stream's share to its path's reservation.
func (s *Scheduler) spend(st *stream, reset bool) {
	n := st.pos - st.start
	if reset {
		end := s.respEnd(st)
		if s.cfg.EndAdjust == FlowControl && st.granted >= 0 {
			end = min(end, max(st.granted, st.pos))
		}
		n = end - st.start
		if s.budget(st.path) > 0 && end > st.pos {
			s.resets = append(s.resets, resetHold{id: st.id, path: st.path, start: st.pos, end: end})
		}
	}
	s.paths[st.path].spent += n
}

// resetHold is the part of a reset stream's reservation that the caller
// may still release with OnResetBound: [start, end), from the bytes the
// scheduler had seen arrive to the end it reserved.
type resetHold struct {
	id         StreamID
	path       PathID
	start, end int64
}

// OnResetBound reports, for a stream the scheduler reset (a Reset action),
// the object offset the server cannot send past: the bytes the client's
// HTTP/2 stream received plus the flow-control credit it had left when
// RST_STREAM went out, after which it gives none. Under ResetStream the
// scheduler cannot know that credit (the connection's automatic
// WINDOW_UPDATEs give it), so a reset stream on a budgeted path reserves
// its whole range until this report gives the room past end back; under
// FlowControl it reserves its reported credit already. A caller that
// cannot bound the server (HTTP/1.1, whose reset closes a connection
// with bytes in its buffers) does not report, and the reservation stays.
func (s *Scheduler) OnResetBound(id StreamID, end int64) {
	for i, h := range s.resets {
		if h.id != id {
			continue
		}
		s.resets = append(s.resets[:i], s.resets[i+1:]...)
		if end = max(end, h.start); end < h.end {
			s.paths[h.path].spent -= h.end - end
		}
		return
	}
}

// fit trims the range [a, b) to what path p may still ask for; b-a if it
// has no budget.
func (s *Scheduler) fit(p PathID, a, b int64) int64 {
	return min(b-a, s.room(p))
}

// noteFull records when path p's budget stopped it from taking work.
func (s *Scheduler) noteFull(now time.Time, p PathID) {
	ps := s.paths[p]
	if s.budget(p) > 0 && s.room(p) < s.cfg.MinChunk && ps.stats.BudgetFull.IsZero() {
		ps.stats.BudgetFull = now
	}
}

// checkBudgets refuses a download the budgets cannot carry: every path has
// one and together they hold less than the object, or (size unknown)
// nothing at all.
func (s *Scheduler) checkBudgets() error {
	if s.cfg.Budget == nil {
		return nil
	}
	var total int64
	for i := range s.paths {
		if s.budget(PathID(i)) <= 0 {
			return nil
		}
		total += s.budget(PathID(i)) - s.spentBefore(PathID(i))
	}
	if total <= 0 {
		return fmt.Errorf("multipath: every path's budget is spent")
	}
	if total < s.size {
		return fmt.Errorf("multipath: the paths' budgets have %d bytes left, the object has %d", total, s.size)
	}
	return nil
}

// Blocked reports that bytes are missing that no path may fetch: no stream
// is open, and every path that is up (or may come back) has spent its
// budget. The download cannot finish.
func (s *Scheduler) Blocked() bool {
	if s.done || len(s.live) > 0 || s.size < 0 || s.noRanges {
		return false
	}
	for i, p := range s.paths {
		if (p.up || p.suspended) && s.room(PathID(i)) > 0 {
			return false
		}
	}
	return true
}
