package h2

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Per-request costs of the server, cut where the general path is not needed.

// streamContext is a server stream's request context: cancelled with the
// stream, and carrying the stream and the Conn as values. It stands in for
// two context.WithValue layers, and is part of the stream's allocation.
type streamContext struct {
	context.Context // context.WithCancel(Conn.ctx)
	c               *Conn
	st              *stream
}

func (x *streamContext) Value(key any) any {
	switch key {
	case streamContextKey:
		return x.st
	case ConnContextKey:
		return x.c
	}
	return x.Context.Value(key)
}

// newStreamContext sets st's context and its cancel function. (An inline
// request's is the connection's, which nothing waits on: no context to
// make, nor to add to and remove from the connection context's children.)
func (c *Conn) newStreamContext(st *stream) context.Context {
	ctx, cancel := context.WithCancel(c.ctx)
	st.sctx = streamContext{Context: ctx, c: c, st: st}
	st.ctx, st.cancel = &st.sctx, cancel
	return st.ctx
}

func noCancel() {}

// remoteAddr is the peer's address as http.Request.RemoteAddr shows it. The
// caller holds c.mu.
func (c *Conn) remoteAddr() string {
	if c.raddr == "" {
		c.raddr = c.nc.RemoteAddr().String()
	}
	return c.raddr
}

// goHandler runs the handler for st on an idle handler goroutine, or a new
// one. Reuse matters for speed: a fresh goroutine's small stack is grown (and
// copied) by nearly every handler, once per request. The caller holds c.mu.
func (c *Conn) goHandler(st *stream, req *http.Request) {
	c.countHandlerLocked()
	c.handOff(st, req)
}

// countHandlerLocked counts a handler about to run.
func (c *Conn) countHandlerLocked() {
	c.handlers++
	c.addBusyLocked(1)
}

// handOff runs a counted handler on a handler goroutine.
func (c *Conn) handOff(st *stream, req *http.Request) {
	job := handlerJob{c, st, req} // not a closure: that would be an allocation
	idle := c.srv.idle()
	select {
	case idle <- job:
	default:
		go handlerWorker(job, idle)
	}
}

// handlerJob is one request for a handler goroutine.
type handlerJob struct {
	c   *Conn
	st  *stream
	req *http.Request
}

// handlerIdleTimeout is how long a handler goroutine waits for more work.
const handlerIdleTimeout = 2 * time.Second

func handlerWorker(job handlerJob, idle chan handlerJob) {
	t := time.NewTimer(handlerIdleTimeout)
	defer t.Stop()
	for {
		job.c.runHandler(job.st, job.req)
		job = handlerJob{} // let the request go while this goroutine waits
		t.Reset(handlerIdleTimeout)
		select {
		case job = <-idle:
		case <-t.C:
			return
		}
	}
}

// parseRequestPath parses a request's :path into u. Paths made only of
// unreserved characters and slashes, most of them, parse to a URL with just
// Path set, as url.ParseRequestURI would return, without an allocation;
// the rest go through it.
func parseRequestPath(p string, u *url.URL) error {
	if simplePath(p) {
		*u = url.URL{Path: p}
		return nil
	}
	v, err := url.ParseRequestURI(p)
	if err != nil {
		return err
	}
	*u = *v
	return nil
}

// simplePath reports whether the request path p is a slash followed by
// unreserved characters and slashes only: its URL is {Path: p}.
func simplePath(p string) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	for i := 1; i < len(p); i++ {
		if !pathByte[p[i]] {
			return false
		}
	}
	return true
}

// pathByte marks the bytes simplePath allows: a table, not a chain of
// comparisons per byte.
var pathByte = func() (t [256]bool) {
	for b := range t {
		t[b] = 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '/' || b == '-' || b == '.' || b == '_' || b == '~'
	}
	return t
}()
