package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// sniff reads from c until the bytes either are the HTTP/2 client preface
// (h2c with prior knowledge) or an HTTP/1.x request line, and returns them so
// they can be replayed to whichever protocol takes the connection. Anything
// else is an invalid preface (RFC 9113 §3.4): an error, and the caller closes
// the connection without a reply, as h2spec's 3.5/2 expects; net/http would
// answer 400 in HTTP/1.1, which an HTTP/2 peer reads as a garbled frame.
func sniff(c net.Conn, deadline time.Time) (isH2 bool, head []byte, err error) {
	if err := c.SetReadDeadline(deadline); err != nil {
		return false, nil, err
	}
	// Small at first: an h2c connection reads just the preface, and every
	// byte allocated here is garbage once the engine has read it.
	buf := make([]byte, len(http2.ClientPreface), 256)
	n := 0
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if !strings.HasPrefix(http2.ClientPreface, string(buf[:n])) {
			break
		}
		if err != nil {
			return false, nil, fmt.Errorf("sniff %s: %d bytes then %w", c.RemoteAddr(), n, err)
		}
	}
	buf = buf[:n]
	if string(buf) != http2.ClientPreface {
		for !bytes.Contains(buf, []byte("\r\n")) && len(buf) < maxRequestLine {
			if len(buf) == cap(buf) {
				buf = slices.Grow(buf, min(cap(buf), maxRequestLine-cap(buf)))
			}
			m, err := c.Read(buf[len(buf):min(cap(buf), maxRequestLine)])
			buf = buf[:len(buf)+m]
			if err != nil && !bytes.Contains(buf, []byte("\r\n")) {
				return false, nil, fmt.Errorf("sniff %s: %d bytes without a request line, then %w", c.RemoteAddr(), len(buf), err)
			}
		}
		line, _, ok := bytes.Cut(buf, []byte("\r\n"))
		if !ok && len(buf) == maxRequestLine && startsHTTP1RequestLine(buf) {
			return false, nil, errRequestLineTooLong
		}
		if !ok || !isHTTP1RequestLine(line) {
			return false, nil, fmt.Errorf("sniff %s: neither the HTTP/2 preface nor an HTTP/1.x request line: %.40q", c.RemoteAddr(), buf)
		}
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return false, nil, err
	}
	return string(buf) == http2.ClientPreface, buf, nil
}

// maxRequestLine bounds what sniff reads looking for an HTTP/1.x request line.
const maxRequestLine = 8 << 10

// errRequestLineTooLong: an HTTP/1.x request whose line does not end
// within maxRequestLine bytes; the server answers 414.
var errRequestLineTooLong = errors.New("HTTP/1.x request line longer than 8 KiB")

// startsHTTP1RequestLine reports whether b starts like an HTTP/1.x request
// line: a method token, a space, then a target starting with "/" or a
// scheme, so a garbled HTTP/2 preface is not mistaken for one.
func startsHTTP1RequestLine(b []byte) bool {
	method, rest, ok := bytes.Cut(b, []byte(" "))
	if !ok || len(method) == 0 || len(method) > 16 {
		return false
	}
	for _, c := range method {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return bytes.HasPrefix(rest, []byte("/")) || bytes.HasPrefix(rest, []byte("http"))
}

// isHTTP1RequestLine reports whether line is "METHOD TARGET HTTP/1.x".
func isHTTP1RequestLine(line []byte) bool {
	f := strings.Fields(string(line))
	return len(f) == 3 && (f[2] == "HTTP/1.1" || f[2] == "HTTP/1.0")
}

// prefixConn is a conn whose first reads return bytes already read from it.
type prefixConn struct {
	net.Conn
	head []byte
}

// NewPrefixConn is c, whose first reads return head (bytes already read
// from it, e.g. by a bufio.Reader).
func NewPrefixConn(c net.Conn, head []byte) net.Conn {
	if len(head) == 0 {
		return c
	}
	return &prefixConn{Conn: c, head: head}
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		if len(c.head) == 0 {
			c.head = nil // the sniff buffer (8 KB) goes with it
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// Buffered is how many of the sniffed bytes are still to be read; once
// none is, reading the connection under it is the same (h2's reader then
// reads the socket itself).
func (c *prefixConn) Buffered() int { return len(c.head) }

// ReadFrom keeps the underlying socket's ReadFrom reachable, so net/http still
// uses sendfile for files on sniffed cleartext connections.
func (c *prefixConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// NetConn returns the wrapped connection, as tls.Conn does.
func (c *prefixConn) NetConn() net.Conn { return c.Conn }

// ConnListener is a net.Listener that accepts connections handed to it by
// Push: the dispatcher's way of passing HTTP/1.1 connections to net/http's
// server, and a proxy's of serving connections it terminates itself.
type ConnListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewConnListener makes a ConnListener whose Addr is addr.
func NewConnListener(addr net.Addr) *ConnListener {
	return &ConnListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *ConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Push hands c to the listener's Accept; false if the listener is closed.
func (l *ConnListener) Push(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *ConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *ConnListener) Addr() net.Addr { return l.addr }
