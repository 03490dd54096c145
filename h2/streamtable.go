package h2

// streamTable holds a connection's open streams by ID: open addressing
// with linear probing in a power-of-two array, a stream's first slot its
// ID over two. A peer's streams take consecutive odd (or even) IDs, so
// the open ones rarely share a slot and a lookup compares one ID. The Go
// map it replaces cost ~510 instructions a request (assign, two lookups,
// delete: hashing and its groups' control words) of BenchmarkInlineBurst's
// ~12,000 at 1 KB; this table ~150. Guarded by Conn.mu.
type streamTable struct {
	slots []*stream // nil: empty, never used since the last rehash; len a power of two, or 0
	n     int       // streams
	dead  int       // slots holding tombstone
	spare []*stream // the array before the last rehash, cleared, for the next one of its size
}

const minStreamSlots = 16

// tombstone fills a closed stream's slot, which lookups probe past.
var tombstone = new(stream)

func (t *streamTable) home(id uint32) int { return int(id>>1) & (len(t.slots) - 1) }

func (t *streamTable) next(i int) int { return (i + 1) & (len(t.slots) - 1) }

// get returns the open stream id, or nil.
func (t *streamTable) get(id uint32) *stream {
	if t.n == 0 {
		return nil
	}
	for i := t.home(id); ; i = t.next(i) {
		st := t.slots[i]
		if st == nil {
			return nil
		}
		if st.id == id && st != tombstone {
			return st
		}
	}
}

// put adds st, whose ID is not in the table. Streams and tombstones fill
// at most half the slots, so that probes stay short and end at a nil.
func (t *streamTable) put(st *stream) {
	if 2*(t.n+t.dead+1) > len(t.slots) {
		t.rehash()
	}
	i := t.home(st.id)
	for t.slots[i] != nil && t.slots[i] != tombstone {
		i = t.next(i)
	}
	if t.slots[i] == tombstone {
		t.dead--
	}
	t.slots[i] = st
	t.n++
}

// rehash puts the streams in an array a quarter full, without
// tombstones. Closed streams' tombstones bring it on every few requests
// at a steady load, of the same size: the two arrays take turns, rather
// than one allocated each time (as much garbage as the rest of a request).
func (t *streamTable) rehash() {
	old := t.slots
	size := minStreamSlots
	for size < 4*(t.n+1) {
		size *= 2
	}
	if len(t.spare) == size {
		t.slots, t.spare = t.spare, nil
	} else {
		t.slots = make([]*stream, size)
	}
	t.n, t.dead = 0, 0
	for _, st := range old {
		if st != nil && st != tombstone {
			t.put(st)
		}
	}
	if len(old) == size {
		clear(old)
		t.spare = old
	}
}

// del removes the stream id, if it is there: a tombstone takes its slot,
// unless the next slot is empty (no probe goes on past it).
func (t *streamTable) del(id uint32) {
	if t.n == 0 {
		return
	}
	i := t.home(id)
	for st := t.slots[i]; st == tombstone || st != nil && st.id != id; st = t.slots[i] {
		i = t.next(i)
	}
	if t.slots[i] == nil {
		return
	}
	t.n--
	if t.slots[t.next(i)] != nil {
		t.slots[i] = tombstone
		t.dead++
		return
	}
	t.slots[i] = nil
}

// shrink lets the slots go if no stream is open: a quiet connection
// keeps no array sized for its busiest moment (100 streams: 4 KB).
func (t *streamTable) shrink() {
	if t.n == 0 {
		*t = streamTable{}
	}
}

// list returns the open streams in a slice of their own, which closing
// them (del) leaves as it is.
func (t *streamTable) list() []*stream {
	if t.n == 0 {
		return nil
	}
	out := make([]*stream, 0, t.n)
	for _, st := range t.slots {
		if st != nil && st != tombstone {
			out = append(out, st)
		}
	}
	return out
}
