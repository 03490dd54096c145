package h2

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
)

// headConn is a sniffing server's wrapper: head first, then the socket.
type headConn struct {
	net.Conn
	head []byte
}

func (c *headConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
func (c *headConn) NetConn() net.Conn { return c.Conn }
func (c *headConn) Buffered() int     { return len(c.head) }

// TestConnReader reads a sniffed connection's head and then its socket
// directly, peeks, and reports the end once, in order.
func TestConnReader(t *testing.T) {
	client, server := tcpPair(t)
	cr := newConnReader(&headConn{Conn: server, head: []byte("PRI ")})
	if cr.rc == nil || cr.pre == nil {
		t.Fatalf("reader of a sniffed TCP connection: raw %v, prefix %v", cr.rc != nil, cr.pre != nil)
	}
	if _, err := client.Write([]byte("hello, world")); err != nil {
		t.Fatal(err)
	}
	cr.prefill()
	if b, err := cr.Peek(6); err != nil || string(b) != "PRI he" {
		t.Fatalf("Peek(6) = %q, %v", b, err)
	}
	got, err := io.ReadAll(io.LimitReader(cr, 16))
	if err != nil || string(got) != "PRI hello, world" {
		t.Fatalf("read %q, %v", got, err)
	}
	client.Close()
	cr.prefill()
	if cr.buf != nil {
		t.Error("a reader at EOF still holds its buffer")
	}
	if n, err := cr.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the peer closed: %d, %v; want EOF", n, err)
	}
}

// TestConnReaderReset: a reset seen by prefill is what the next Read says,
// not the EOF the socket says afterwards.
func TestConnReaderReset(t *testing.T) {
	client, server := tcpPair(t)
	cr := newConnReader(server)
	server.Write([]byte("unread by the client"))
	client.(*net.TCPConn).SetLinger(0)
	client.Close() // with unread data: RST
	cr.prefill()
	if _, err := cr.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Read after a reset: %v, want ECONNRESET", err)
	}
}
