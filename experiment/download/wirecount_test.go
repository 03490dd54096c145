package download

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// TestReadTCPTotals sends a known payload over loopback and expects the
// receiver's TCP_INFO to count exactly it, and a closed socket to be an
// error rather than a smaller sum.
func TestReadTCPTotals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 300_000
	sent := make(chan error, 1)
	start, counted := make(chan struct{}), make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		<-start
		_, err = c.Write(make([]byte, n))
		sent <- err
		<-counted // a FIN would count one more byte of sequence space
	}()
	defer close(counted)
	startOnce := sync.OnceFunc(func() { close(start) })
	defer startOnce() // lets the server end if the test fails early
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, err := readTCPTotals([]net.Conn{c})
	if err != nil {
		t.Fatal(err)
	}
	startOnce()
	if _, err := io.ReadFull(c, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	after, err := readTCPTotals([]net.Conn{c})
	if err != nil {
		t.Fatal(err)
	}
	d := after.sub(before)
	if d.rxBytes != n || d.txBytes != 0 || d.rxSegs < 1 || d.txSegs < 1 {
		t.Errorf("after reading %d bytes: %+v", n, d)
	}
	if want := d.rxBytes + (d.rxSegs+d.txSegs)*tcpHeaderBytes; d.wireBytes() != want {
		t.Errorf("wire bytes %d, want %d", d.wireBytes(), want)
	}
	c.Close()
	if _, err := readTCPTotals([]net.Conn{c}); err == nil || !strings.Contains(err.Error(), "TCP_INFO") {
		t.Errorf("closed socket: error %v", err)
	}
}
