package h2

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestByteQueue(t *testing.T) {
	var q byteQueue
	var want bytes.Buffer
	chunk := make([]byte, 50000)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	var got []byte
	buf := make([]byte, 100000)
	for i := 0; i < 50; i++ {
		k := i * 997 % len(chunk)
		q.Write(chunk[:k])
		want.Write(chunk[:k])
		n := q.Len() / 2
		head := make([]byte, 600)
		h := q.Head(head)
		r := q.Read(buf[:n])
		if m := min(h, r); r != n || !bytes.Equal(head[:m], buf[:m]) {
			t.Fatalf("round %d: Read %d of %d, Head disagrees", i, r, n)
		}
		got = append(got, buf[:r]...)
	}
	for q.Len() > 0 {
		n := q.Read(buf[:1000])
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("queue returned %d bytes differing from the %d written", len(got), want.Len())
	}
	q.Write([]byte("x"))
	q.Release()
	if q.Len() != 0 || q.Read(buf) != 0 {
		t.Fatal("released queue not empty")
	}
}

// TestByteQueueSegments drives the queue with random Writes, WriteShareds,
// Reads and takes (as the writer does) against a plain buffer: the bytes
// come out in order whichever way they go in or leave.
func TestByteQueueSegments(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, seed))
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	var q byteQueue
	var want, got []byte
	off, chunkTakes, sharedTakes := 0, 0, 0
	buf := make([]byte, 3*chunkSize)
	for step := 0; step < 5000; step++ {
		switch op := rng.IntN(5); {
		case op == 0 && off < len(src):
			n := min(rng.IntN(2*chunkSize), len(src)-off)
			q.Write(src[off : off+n])
			want, off = append(want, src[off:off+n]...), off+n
		case op == 1 && off < len(src):
			n := min(rng.IntN(4*chunkSize), len(src)-off)
			q.WriteShared(src[off : off+n])
			want, off = append(want, src[off:off+n]...), off+n
		case op == 2:
			n := q.Read(buf[:rng.IntN(len(buf))])
			got = append(got, buf[:n]...)
		default:
			n := min(q.Len(), chunkSize)
			if rng.IntN(2) == 0 {
				n = rng.IntN(n + 1)
			}
			before := q.Len()
			data, chunk, ok := q.take(n)
			switch {
			case !ok && q.Len() != before:
				t.Fatalf("step %d: failed take(%d) consumed %d bytes", step, n, before-q.Len())
			case ok && len(data) != n:
				t.Fatalf("step %d: take(%d) returned %d bytes", step, n, len(data))
			case ok:
				got = append(got, data...)
				if chunk != nil {
					chunkTakes++
					chunkPool.Put(chunk)
				} else {
					sharedTakes++
				}
			}
		}
		head := make([]byte, 100)
		h := q.Head(head)
		if q.Len() != len(want)-len(got) || !bytes.Equal(head[:h], want[len(got):len(got)+h]) {
			t.Fatalf("step %d: queue holds %d bytes, want %d, or its head differs", step, q.Len(), len(want)-len(got))
		}
	}
	for q.Len() > 0 {
		got = append(got, buf[:q.Read(buf)]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("queue returned %d bytes differing from the %d written", len(got), len(want))
	}
	if sharedTakes == 0 {
		t.Fatal("no take of shared bytes succeeded: that path went untested")
	}
	t.Logf("%d takes of whole chunks, %d of shared bytes", chunkTakes, sharedTakes)

	// Whole chunks, as a response written in one go fills them.
	q.Write(src[:chunkSize+100])
	if _, _, ok := q.take(50); ok {
		t.Fatal("take of part of a chunk succeeded")
	}
	for _, n := range []int{chunkSize, 100} {
		data, chunk, ok := q.take(n)
		if !ok || chunk == nil || !bytes.Equal(data, src[chunkSize+100-q.Len()-n:][:n]) {
			t.Fatalf("take(%d) of a whole chunk: ok %v, chunk %v, or wrong bytes", n, ok, chunk != nil)
		}
		chunkPool.Put(chunk)
	}
	if q.Len() != 0 {
		t.Fatalf("%d bytes left after taking every chunk", q.Len())
	}
	q.WriteShared([]byte("x"))
	q.Write([]byte("y"))
	q.Release()
	if q.Len() != 0 || q.Read(buf) != 0 {
		t.Fatal("released queue not empty")
	}
}
