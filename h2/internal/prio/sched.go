package prio

// Scheduler picks which ready stream sends the next DATA frame (RFC 9218 10):
// the lowest urgency first; within an urgency, non-incremental streams one at
// a time in stream-ID order, then incremental streams round-robin, one frame
// each. Serving non-incremental streams first lets them complete early, which
// is what non-incremental responses (scripts, styles) need.
//
// It holds only ready streams; the caller adds a stream when it has something
// to send and removes it when it has nothing or is blocked by flow control.
type Scheduler struct {
	buckets *[8]bucket // made by the first Add; Reset drops it
	prio    map[uint32]Priority
}

type bucket struct {
	seq  []uint32 // non-incremental, ascending stream ID
	rr   []uint32 // incremental, in arrival order
	next int      // rr index served next
}

// Len returns the number of ready streams.
func (s *Scheduler) Len() int { return len(s.prio) }

// Has reports whether id is ready.
func (s *Scheduler) Has(id uint32) bool {
	_, ok := s.prio[id]
	return ok
}

// Add marks stream id ready with priority p; re-adding a ready stream changes
// nothing (use Update to change its priority).
func (s *Scheduler) Add(id uint32, p Priority) {
	if s.prio == nil {
		s.prio = make(map[uint32]Priority)
		s.buckets = new([8]bucket)
	}
	if _, ok := s.prio[id]; ok {
		return
	}
	if p.Urgency > 7 {
		p.Urgency = 7
	}
	s.prio[id] = p
	b := &s.buckets[p.Urgency]
	if p.Incremental {
		// Insert just before the next to serve, so the newcomer waits one round.
		b.rr = insertAt(b.rr, b.next, id)
		b.next++
		if b.next >= len(b.rr) {
			b.next = 0
		}
		return
	}
	i := len(b.seq)
	for i > 0 && b.seq[i-1] > id {
		i--
	}
	b.seq = insertAt(b.seq, i, id)
}

// Remove drops stream id from the ready set, if present.
func (s *Scheduler) Remove(id uint32) {
	p, ok := s.prio[id]
	if !ok {
		return
	}
	delete(s.prio, id)
	b := &s.buckets[p.Urgency]
	if !p.Incremental {
		b.seq = removeID(b.seq, id)
		return
	}
	for i, v := range b.rr {
		if v == id {
			b.rr = append(b.rr[:i], b.rr[i+1:]...)
			if i < b.next {
				b.next--
			}
			if b.next >= len(b.rr) {
				b.next = 0
			}
			return
		}
	}
}

// Reset frees an empty scheduler's memory (an idle connection's); it
// reports whether the scheduler was empty.
func (s *Scheduler) Reset() bool {
	if len(s.prio) > 0 {
		return false
	}
	s.buckets, s.prio = nil, nil
	return true
}

// Update changes the priority of a ready stream (a PRIORITY_UPDATE frame).
func (s *Scheduler) Update(id uint32, p Priority) {
	if _, ok := s.prio[id]; !ok {
		return
	}
	s.Remove(id)
	s.Add(id, p)
}

// Next returns the stream to send the next frame, or false if none is ready.
// Calling Next advances the round-robin of incremental streams.
func (s *Scheduler) Next() (uint32, bool) {
	if s.buckets == nil {
		return 0, false
	}
	for u := range s.buckets {
		b := &s.buckets[u]
		if len(b.seq) > 0 {
			return b.seq[0], true
		}
		if len(b.rr) > 0 {
			id := b.rr[b.next]
			b.next = (b.next + 1) % len(b.rr)
			return id, true
		}
	}
	return 0, false
}

func insertAt(s []uint32, i int, v uint32) []uint32 {
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func removeID(s []uint32, id uint32) []uint32 {
	for i, v := range s {
		if v == id {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
