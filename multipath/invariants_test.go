package multipath

import "fmt"

// check verifies the byte map: open streams, delivered bytes and orphans
// partition [0, size), and no path has more streams than allowed.
func (s *Scheduler) check() error {
	perPath := map[PathID]int{}
	for _, st := range s.live {
		perPath[st.path]++
		if !s.paths[st.path].up {
			return fmt.Errorf("stream %d open on down path %d", st.id, st.path)
		}
		if st.pos < st.start || (st.end >= 0 && st.pos > st.end) {
			return fmt.Errorf("stream %d: start %d pos %d end %d", st.id, st.start, st.pos, st.end)
		}
		if s.cfg.EndAdjust == FlowControl && st.end >= 0 && s.beyond(st) < st.end {
			return fmt.Errorf("stream %d: wire end %d below wanted end %d", st.id, s.beyond(st), st.end)
		}
	}
	for i := range s.paths {
		if b := s.budget(PathID(i)); b > 0 && s.reserved(PathID(i)) > b {
			return fmt.Errorf("path %d reserves %d bytes, over its budget %d", i, s.reserved(PathID(i)), b)
		}
	}
	for p, n := range perPath {
		if n > s.cfg.MaxStreamsPerPath {
			return fmt.Errorf("path %d has %d streams, max %d", p, n, s.cfg.MaxStreamsPerPath)
		}
	}
	if s.done {
		if !s.complete() || len(s.live) > 0 {
			return fmt.Errorf("done with %d open streams, %d of %d bytes delivered", len(s.live), s.delivered.total(), s.size)
		}
		return nil
	}
	if s.size < 0 || s.noRanges {
		if len(s.live) > 1 {
			return fmt.Errorf("%d streams open while the body cannot be split", len(s.live))
		}
		return nil
	}
	var all spanSet
	add := func(what string, a, b int64) error {
		if a < 0 || b > s.size {
			return fmt.Errorf("%s [%d,%d) outside [0,%d)", what, a, b, s.size)
		}
		var fresh int64
		all.gaps(a, b, func(x, y int64) { fresh += y - x })
		if fresh != b-a {
			return fmt.Errorf("%s [%d,%d) overlaps other bytes of the map %v", what, a, b, all)
		}
		all.add(a, b)
		return nil
	}
	for _, x := range s.delivered {
		if err := add("delivered", x.a, x.b); err != nil {
			return err
		}
	}
	for _, x := range s.orphans {
		if err := add("orphan", x.a, x.b); err != nil {
			return err
		}
	}
	for _, st := range s.live {
		if err := add(fmt.Sprintf("stream %d remainder", st.id), st.pos, st.end); err != nil {
			return err
		}
	}
	if !all.covers(0, s.size) {
		return fmt.Errorf("bytes of [0,%d) in no part of the map: map %v", s.size, all)
	}
	return nil
}
