// Package syncio holds the writers that several goroutines share: a
// command's stderr that an engine's tracer and the command both write, a
// child process's output that exec's copy goroutines write while a test
// reads it.
package syncio

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Writer serialises writes to W.
type Writer struct {
	mu     sync.Mutex
	W      io.Writer
	closed bool
}

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.W.Write(p)
}

// Close makes later writes vanish: a command's background goroutines (an
// SMig pool still dialing) must not write to its stderr once it returned.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

// Buffer is a bytes.Buffer that may be written and read concurrently.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// CountingConn counts the bytes read from its connection into N, which
// the caller may read while the connection is in use (per-path byte
// counts of a load).
type CountingConn struct {
	net.Conn
	N *atomic.Int64
}

func (c CountingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.N.Add(int64(n))
	return n, err
}
