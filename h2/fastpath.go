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

// newStreamContext sets st's context and its cancel function: a context of
// its own if cancellable, else the connection's (an inline handler's,
// which nothing waits on: no context to make, nor to add to and remove
// from the connection context's children).
func (c *Conn) newStreamContext(st *stream, cancellable bool) context.Context {
	st.sctx = streamContext{Context: c.ctx, c: c, st: st}
	st.ctx, st.cancel = &st.sctx, noCancel
	if cancellable {
		c.cancellableLocked(st)
	}
	return st.ctx
}

// cancellableLocked gives st's context a cancel of its own. A request made
// for an inline handler gets it before a handler goroutine takes it over.
func (c *Conn) cancellableLocked(st *stream) {
	st.sctx.Context, st.cancel = context.WithCancel(c.ctx)
	if st.state == stateClosed {
		st.cancel() // reset meanwhile: closeStreamLocked had nothing to cancel
	}
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
	c.busy.Add(1)
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

// parseRequestPath parses a request's :path. Paths made only of unreserved
// characters and slashes, most of them, parse to a URL with just Path set,
// as url.ParseRequestURI would return; the rest go through it.
func parseRequestPath(p string) (*url.URL, error) {
	if len(p) == 0 || p[0] != '/' {
		return url.ParseRequestURI(p)
	}
	for i := 0; i < len(p); i++ {
		if b := p[i]; !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '/' || b == '-' || b == '.' || b == '_' || b == '~') {
			return url.ParseRequestURI(p)
		}
	}
	return &url.URL{Path: p}, nil
}
