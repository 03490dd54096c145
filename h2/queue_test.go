package h2

import (
	"bytes"
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
