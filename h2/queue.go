package h2

import "sync"

// chunkSize is the unit of body buffering: one DATA frame's worth.
const chunkSize = 16 << 10

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// byteQueue is a FIFO of bytes, the body bytes of one direction of a stream.
// It is a list of segments: pooled fixed-size chunks that written bytes are
// copied into, so it never copies to grow and its memory goes back to the
// pool as it drains, and borrowed slices queued by reference (WriteShared).
type byteQueue struct {
	segs  []segment
	head  int // read offset in segs[0].b
	n     int
	first [1]segment // segs' first array: most bodies are one segment (not copied: segs may point here)
}

// segment is one run of queued bytes: b is chunk[:k] for a pooled chunk
// (more bytes may be appended while it is the last), or a borrowed slice
// when chunk is nil.
type segment struct {
	b     []byte
	chunk *[chunkSize]byte
}

func (q *byteQueue) Len() int { return q.n }

// Write appends a copy of p.
func (q *byteQueue) Write(p []byte) {
	for len(p) > 0 {
		last := len(q.segs) - 1
		if last < 0 || q.segs[last].chunk == nil || len(q.segs[last].b) == chunkSize {
			c := chunkPool.Get().(*[chunkSize]byte)
			q.push(segment{b: c[:0], chunk: c})
			last++
		}
		s := &q.segs[last]
		k := copy(s.chunk[len(s.b):], p)
		s.b = s.chunk[:len(s.b)+k]
		q.n += k
		p = p[k:]
	}
}

// WriteShared appends p itself: the caller never modifies it afterwards.
func (q *byteQueue) WriteShared(p []byte) {
	if len(p) == 0 {
		return
	}
	if last := len(q.segs) - 1; last >= 0 && q.segs[last].chunk != nil && len(q.segs[last].b) == 0 {
		// A drained chunk kept for Writes would stand before p.
		chunkPool.Put(q.segs[last].chunk)
		q.segs = q.segs[:last]
		q.head = 0
	}
	q.push(segment{b: p})
	q.n += len(p)
}

// push appends s to segs, starting in first: a response queued as one
// segment (a cached file's body) costs no allocation.
func (q *byteQueue) push(s segment) {
	if q.segs == nil {
		q.segs = q.first[:0]
	}
	q.segs = append(q.segs, s)
}

// Head copies the first bytes into p without consuming them.
func (q *byteQueue) Head(p []byte) int {
	total, head := 0, q.head
	for i := 0; i < len(q.segs) && len(p) > 0; i++ {
		k := copy(p, q.segs[i].b[head:])
		total += k
		p = p[k:]
		head = 0
	}
	return total
}

// Read consumes up to len(p) bytes into p.
func (q *byteQueue) Read(p []byte) int {
	total := 0
	for len(p) > 0 && q.n > 0 {
		k := copy(p, q.segs[0].b[q.head:])
		q.head += k
		q.n -= k
		total += k
		p = p[k:]
		if q.head == len(q.segs[0].b) {
			q.popSeg()
		}
	}
	return total
}

// take consumes the next n bytes and returns them without copying, when
// they lie in one segment and are either borrowed or a whole chunk; chunk
// is then non-nil and the caller puts it back in chunkPool once done with
// data. ok is false, and nothing consumed, when the bytes do not line up.
func (q *byteQueue) take(n int) (data []byte, chunk *[chunkSize]byte, ok bool) {
	if n == 0 || len(q.segs) == 0 {
		return nil, nil, false
	}
	s := q.segs[0]
	if s.chunk == nil {
		if len(s.b)-q.head < n {
			return nil, nil, false
		}
		data = s.b[q.head : q.head+n]
		q.head += n
		q.n -= n
		if q.head == len(s.b) {
			q.popSeg()
		}
		return data, nil, true
	}
	if q.head != 0 || len(s.b) != n {
		return nil, nil, false
	}
	q.segs[0].chunk = nil // popSeg must not pool it: it is the caller's now
	q.head = n
	q.n -= n
	q.popSeg()
	return s.b, s.chunk, true
}

// popSeg drops the fully read first segment.
func (q *byteQueue) popSeg() {
	s := &q.segs[0]
	if len(q.segs) == 1 && s.chunk != nil && len(s.b) < chunkSize {
		s.b, q.head = s.chunk[:0], 0 // keep the last chunk for the next Write
		return
	}
	if s.chunk != nil {
		chunkPool.Put(s.chunk)
	}
	copy(q.segs, q.segs[1:])
	q.segs[len(q.segs)-1] = segment{}
	q.segs = q.segs[:len(q.segs)-1]
	q.head = 0
}

// Release returns all chunks to the pool; the queue becomes empty.
func (q *byteQueue) Release() {
	for i, s := range q.segs {
		if s.chunk != nil {
			chunkPool.Put(s.chunk)
		}
		q.segs[i] = segment{}
	}
	q.segs = q.segs[:0]
	q.head, q.n = 0, 0
}
