package h2

import (
	"bytes"
	"crypto/tls"
	"io"
	"math/rand"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the writes that reach it.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestTLSServerRecords: a write through the writer's sendClock of 60 KB
// (four records) and of 200 KB (through tls.Conn in one call: 13 records)
// reaches the socket as one write each, and the client reads every byte;
// writes outside the writer's (the handshake) pass through.
func TestTLSServerRecords(t *testing.T) {
	a, b := tcpPair(t)
	cc := &countingConn{Conn: a}
	ts := TLSServer(cc, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2"}})
	tc := tls.Client(b, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	done := make(chan error, 1)
	go func() { done <- tc.Handshake() }()
	if err := ts.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cc.writes.Load() == 0 {
		t.Fatal("the handshake wrote nothing through the record batcher")
	}
	w := sendClock{nc: ts, timeout: 5 * time.Second, records: recordsUnder(ts)}
	if w.records == nil {
		t.Fatal("no recordConn under TLSServer's connection")
	}
	for _, n := range []int{60 << 10, 200 << 10} {
		p := make([]byte, n)
		rand.New(rand.NewSource(int64(n))).Read(p)
		got := make(chan []byte, 1)
		go func() {
			q := make([]byte, n)
			io.ReadFull(tc, q)
			got <- q
		}()
		before := cc.writes.Load()
		if k, err := w.Write(p); k != n || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", n, k, err)
		}
		if writes := cc.writes.Load() - before; writes != 1 {
			t.Errorf("%d bytes took %d writes to the socket, want 1", n, writes)
		}
		if q := <-got; !bytes.Equal(q, p) {
			t.Fatalf("%d bytes: the client read other bytes", n)
		}
	}
	if r := recordsUnder(ts); r.buf != nil || r.hold {
		t.Error("the batcher holds a buffer or records after its writes")
	}
}
