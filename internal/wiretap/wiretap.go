// Package wiretap counts the HTTP/2 DATA payload client connections read,
// by parsing a copy of their bytes with x/net's framer: what a path
// received on the wire, whatever the client under test thinks it did
// (byte budgets' tests).
package wiretap

import (
	"context"
	"io"
	"net"
	"sync"

	"golang.org/x/net/http2"
)

// Dial wraps dial so that every connection it opens counts the DATA it
// reads. The returned total, once those connections are closed, is their
// sum.
func Dial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (
	func(ctx context.Context, network, addr string) (net.Conn, error), func() int64) {
	var mu sync.Mutex
	var conns []*conn
	wrapped := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dc := count(c)
		mu.Lock()
		conns = append(conns, dc)
		mu.Unlock()
		return dc, nil
	}
	return wrapped, func() int64 {
		mu.Lock()
		defer mu.Unlock()
		var n int64
		for _, dc := range conns {
			n += dc.total()
		}
		return n
	}
}

// conn passes its reads to a framer through a pipe.
type conn struct {
	net.Conn
	w    *io.PipeWriter
	mu   sync.Mutex
	n    int64
	done chan struct{}
}

func count(c net.Conn) *conn {
	r, w := io.Pipe()
	d := &conn{Conn: c, w: w, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		fr := http2.NewFramer(nil, r)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				r.CloseWithError(err)
				return
			}
			if df, ok := f.(*http2.DataFrame); ok {
				d.mu.Lock()
				d.n += int64(len(df.Data()))
				d.mu.Unlock()
			}
		}
	}()
	return d
}

func (d *conn) Read(p []byte) (int, error) {
	n, err := d.Conn.Read(p)
	if n > 0 {
		d.w.Write(p[:n])
	}
	if err != nil {
		d.w.CloseWithError(err)
	}
	return n, err
}

func (d *conn) Close() error {
	err := d.Conn.Close()
	d.w.Close()
	return err
}

// total waits for the framer to reach the end of the connection's bytes.
func (d *conn) total() int64 {
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}
