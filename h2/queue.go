package h2

import "sync"

// chunkSize is the unit of body buffering: one DATA frame's worth.
const chunkSize = 16 << 10

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// byteQueue is a FIFO of bytes, the body bytes of one direction of a stream.
// It is a list of pooled fixed-size chunks, so it never copies to grow and
// its memory goes back to the pool as it drains.
type byteQueue struct {
	chunks []*[chunkSize]byte
	head   int // read offset in chunks[0]
	tail   int // write offset in the last chunk
	n      int
}

func (q *byteQueue) Len() int { return q.n }

// Write appends p.
func (q *byteQueue) Write(p []byte) {
	for len(p) > 0 {
		if len(q.chunks) == 0 || q.tail == chunkSize {
			q.chunks = append(q.chunks, chunkPool.Get().(*[chunkSize]byte))
			q.tail = 0
		}
		k := copy(q.chunks[len(q.chunks)-1][q.tail:], p)
		q.tail += k
		q.n += k
		p = p[k:]
	}
}

// Head copies the first bytes into p without consuming them.
func (q *byteQueue) Head(p []byte) int {
	total, head := 0, q.head
	for i := 0; i < len(q.chunks) && len(p) > 0; i++ {
		end := chunkSize
		if i == len(q.chunks)-1 {
			end = q.tail
		}
		k := copy(p, q.chunks[i][head:end])
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
		end := chunkSize
		if len(q.chunks) == 1 {
			end = q.tail
		}
		k := copy(p, q.chunks[0][q.head:end])
		q.head += k
		q.n -= k
		total += k
		p = p[k:]
		if q.head == end {
			q.popChunk()
		}
	}
	return total
}

func (q *byteQueue) popChunk() {
	if len(q.chunks) == 1 {
		q.head, q.tail = 0, 0 // keep the last chunk for the next Write
		return
	}
	chunkPool.Put(q.chunks[0])
	copy(q.chunks, q.chunks[1:])
	q.chunks[len(q.chunks)-1] = nil
	q.chunks = q.chunks[:len(q.chunks)-1]
	q.head = 0
}

// Release returns all chunks to the pool; the queue becomes empty.
func (q *byteQueue) Release() {
	for i, c := range q.chunks {
		chunkPool.Put(c)
		q.chunks[i] = nil
	}
	q.chunks = q.chunks[:0]
	q.head, q.tail, q.n = 0, 0, 0
}
