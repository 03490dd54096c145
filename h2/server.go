package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"time"

	"github.com/shunt-net/shunt/h2/internal/prio"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Upgrade carries an HTTP/1.1 request that asked to switch to h2c (RFC 7540 3.2).
// The 101 response has already been written; Request becomes stream 1.
type Upgrade struct {
	Request  *http.Request
	Settings []byte // the decoded HTTP2-Settings header: a SETTINGS payload
}

// Server serves HTTP/2 connections with an http.Handler.
type Server struct {
	Handler http.Handler
	Config  Config // set before the first connection, not changed afterwards

	// cfg is Config with its defaults, made once and shared by the
	// connections: a copy in each Conn (144 bytes) put an idle
	// connection's Conn in the 1,792-byte size class instead of 1,536.
	cfgOnce sync.Once
	cfg     *Config

	mu       sync.Mutex
	conns    map[*Conn]struct{}
	shutdown bool

	idleOnce     sync.Once
	idleHandlers chan handlerJob // see goHandler
}

// InlineHandler is an http.Handler that can answer some requests without
// blocking, such as a static file already in memory. The engine offers it
// each request without a body on the connection's read goroutine, once the
// frame is processed: an answer there costs no hand-off to a handler
// goroutine and back (two goroutine wake-ups a request, the largest part of
// the scheduler's share of the CPU under h2load). ServeInline answers r and
// reports true, or reports false having touched neither w nor r, and
// ServeHTTP then answers r on a handler goroutine. It must not block: no
// waiting on the network, on locks held across I/O or on the request's
// context; the response travels through the same send queue, flow control
// and RFC 9218 scheduler as a handler's. r's context is the connection's
// (with the stream and the Conn as values), not cancelled with the stream:
// nothing waits on it. ServeInline keeps nothing of r or w (their headers
// included) once it returns: the connection's next inline request reuses
// them.
type InlineHandler interface {
	http.Handler
	ServeInline(w http.ResponseWriter, r *http.Request) bool
}

// FieldHandler is an InlineHandler that can answer some requests from
// their decoded header fields, before the engine makes an http.Request
// and a ResponseWriter for them (an http.Request, its header map and the
// ResponseWriter's calls were ~2,300 instructions of a cached 1 KB file's
// answer, of ~14,400 in BenchmarkInlineBurst/1024). The engine offers
// it each request without a body whose :path is made only of unreserved
// characters and slashes (so path is what r.URL.Path would be), with
// fields as decoded: pseudo-header fields first, names lower-case, every
// field valid (RFC 9113 8.2). ServeFields returns a whole response, as
// PreparedWriter.WritePrepared takes one (fields after :status, body
// sent from body itself, headers only for HEAD), and true; or false, and
// the request goes on to ServeInline and ServeHTTP. A status outside
// 200-999 is taken as false. It runs on the read goroutine with the
// connection's lock held: it must not block, nor call into the
// connection, nor keep fields; the returned fields and body are never
// modified afterwards.
type FieldHandler interface {
	InlineHandler
	ServeFields(method, path string, fields []hpack.HeaderField) (status int, header []hpack.HeaderField, body []byte, ok bool)
}

// idle hands work to the server's handler goroutines waiting for their
// next request; unbuffered, so a send succeeds only when one is idle. One
// per server (not per process), so a server's goroutines are its own.
func (s *Server) idle() chan handlerJob {
	s.idleOnce.Do(func() { s.idleHandlers = make(chan handlerJob) })
	return s.idleHandlers
}

// ErrServerClosed is returned by ServeConn after Shutdown.
var ErrServerClosed = errors.New("h2: server closed")

type contextKey struct{ name string }

var (
	streamContextKey = &contextKey{"h2-stream"}
	// ConnContextKey holds the *Conn serving a request in its context.
	ConnContextKey = &contextKey{"h2-conn"}
)

// ServeConn serves one connection that is already past TLS/ALPN, or is h2c.
// It blocks until the connection ends. up is nil unless h2c Upgrade.
func (s *Server) ServeConn(ctx context.Context, nc net.Conn, up *Upgrade) error {
	var err error
	s.serveConn(ctx, nc, up, false, func(e error) { err = e })
	return err
}

// ServeConnDetached serves a connection as ServeConn does, but unless
// Config.KeepIdleReader is set it returns once the connection is quiet (no
// stream, nothing to read or write); ended is called, once, with
// ServeConn's error when it ends. While quiet, a TCP connection (plain or
// TLS) then holds no goroutine (park.go); others keep theirs.
func (s *Server) ServeConnDetached(ctx context.Context, nc net.Conn, up *Upgrade, ended func(error)) {
	s.serveConn(ctx, nc, up, true, ended)
}

// config returns cfg, made by the first connection.
func (s *Server) config() *Config {
	s.cfgOnce.Do(func() {
		cfg := s.Config.withDefaults()
		s.cfg = &cfg
	})
	return s.cfg
}

func (s *Server) serveConn(ctx context.Context, nc net.Conn, up *Upgrade, detached bool, ended func(error)) {
	c := newConn(nc, s.config(), false, ctx)
	c.srv = s
	if !c.cfg.KernelSendQueue {
		c.wantSendq = true
	}
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		nc.Close()
		ended(ErrServerClosed)
		return
	}
	if s.conns == nil {
		s.conns = make(map[*Conn]struct{})
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()

	if err := c.readPreface(); err != nil {
		c.close(err)
		ended(err)
		return
	}
	c.initialSettings()
	if c.cfg.IdleTimeout > 0 {
		c.idleTimer = time.AfterFunc(c.cfg.IdleTimeout, c.GoAway)
	}
	if up != nil {
		if err := c.startUpgrade(up); err != nil {
			c.close(err)
			ended(err)
			return
		}
	}
	if c.cfg.PingInterval > 0 {
		go c.pingLoop()
	}
	stop := context.AfterFunc(ctx, c.GoAway)
	c.ended = func() {
		stop()
		c.writers.Wait()
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			err = nil
		}
		ended(err)
	}
	c.detached = detached && !c.cfg.KeepIdleReader
	c.runReader()
}

func (c *Conn) readPreface() error {
	c.nc.SetReadDeadline(time.Now().Add(c.cfg.HeaderTimeout))
	defer c.nc.SetReadDeadline(time.Time{})
	buf := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return fmt.Errorf("h2: reading client preface from %v: %w", c.nc.RemoteAddr(), err)
	}
	if string(buf) != http2.ClientPreface {
		// Best effort: tell the peer why before hanging up.
		fr := http2.NewFramer(c.nc, nil)
		fr.WriteGoAway(0, http2.ErrCodeProtocol, []byte("invalid connection preface"))
		return fmt.Errorf("h2: invalid client preface %q from %v", buf, c.nc.RemoteAddr())
	}
	return nil
}

// startUpgrade applies the HTTP2-Settings of an h2c upgrade and turns the
// HTTP/1.1 request into stream 1, half-closed (remote).
func (c *Conn) startUpgrade(up *Upgrade) error {
	settings, err := ParseSettingsPayload(up.Settings)
	if err != nil {
		return fmt.Errorf("h2: HTTP2-Settings: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range settings {
		if err := c.applySettingLocked(s); err != nil {
			return err
		}
	}
	c.peerMaxStream = 1
	st := c.newStream(1, false)
	st.state = stateHalfClosedRemote
	st.recv.err = io.EOF
	req := up.Request
	body := req.Body
	if body == nil {
		body = http.NoBody
	}
	ctx := c.newStreamContext(st)
	r := req.WithContext(ctx)
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	r.Body = body
	c.goHandler(st, r)
	return nil
}

// Shutdown sends GOAWAY on every connection and waits for them to drain.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.GoAway()
	}
	for _, c := range conns {
		select {
		case <-c.done:
		case <-ctx.Done():
			for _, c := range conns {
				c.close(ctx.Err())
			}
			return ctx.Err()
		}
	}
	return nil
}

func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// onRequestHeaders handles a complete header block on the server: a new
// request or trailers.
func (c *Conn) onRequestHeaders() error {
	hb := &c.hb
	id := hb.id
	if id%2 == 0 {
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("client opened even stream %d", id)}
	}
	if st := c.streams.get(id); st != nil {
		if st.state != stateOpen && st.state != stateHalfClosedLocal {
			return streamError{id, http2.ErrCodeStreamClosed, "HEADERS after END_STREAM"}
		}
		return c.onTrailers(st)
	}
	if id <= c.peerMaxStream {
		return connError{http2.ErrCodeStreamClosed, fmt.Sprintf("HEADERS on closed stream %d", id)}
	}
	c.peerMaxStream = id
	if hb.selfDep {
		return streamError{id, http2.ErrCodeProtocol, "stream depends on itself"}
	}
	if c.goAwaySent {
		return nil // above the last stream we promised to process
	}
	if hb.bad != "" {
		return streamError{id, http2.ErrCodeProtocol, hb.bad}
	}
	rh, err := c.repeat.request(hb.fields)
	if err != nil && !hb.tooLarge {
		return streamError{id, http2.ErrCodeProtocol, err.Error()}
	}
	if c.activePeer >= int(c.cfg.MaxConcurrentStreams) || c.handlers >= 2*int(c.cfg.MaxConcurrentStreams) {
		return streamError{id, http2.ErrCodeRefusedStream, "too many concurrent streams"}
	}
	st := c.newPeerStream(id)
	st.declLen = rh.contentLength
	if p, ok := c.pendingPrio[id]; ok {
		st.prio = p
		delete(c.pendingPrio, id)
	}
	if hb.tooLarge {
		st.recv.closed = true
		c.respondLocked(st, http.StatusRequestHeaderFieldsTooLarge)
		if hb.end {
			c.remoteClosedLocked(st)
		}
		return nil
	}
	if fh, ok := c.srv.Handler.(FieldHandler); ok && hb.end && rh.contentLength <= 0 && simplePath(rh.path) {
		if status, fields, body, ok := fh.ServeFields(rh.method, rh.path, hb.fields); ok && status >= 200 && status <= 999 {
			readEngineFields(st, hb.fields)
			c.remoteClosedLocked(st)
			c.answerLocked(st, status, fields, body, rh.method == http.MethodHead)
			return nil
		}
	}
	ih, inline := c.srv.Handler.(InlineHandler)
	inline = inline && hb.end
	req, err := c.newRequest(st, rh, hb.fields, !hb.end, inline)
	if err != nil {
		c.closeStreamLocked(st, err)
		return streamError{id, http2.ErrCodeProtocol, err.Error()}
	}
	if hb.end {
		if rh.contentLength > 0 {
			c.closeStreamLocked(st, nil)
			return streamError{id, http2.ErrCodeProtocol, fmt.Sprintf("content-length %d with empty body", rh.contentLength)}
		}
		c.remoteClosedLocked(st)
	}
	if inline {
		c.countHandlerLocked()
		c.inline = inlineJob{ih, st, req}
		return nil
	}
	c.goHandler(st, req)
	return nil
}

// answerLocked queues a FieldHandler's response on st, the frames a
// WritePrepared of an InlineHandler queues: HEADERS of :status and the
// fields, then the body by reference with END_STREAM. Nothing but the
// connection refers to st: it is reused once closed (inlineDone).
func (c *Conn) answerLocked(st *stream, status int, fields []hpack.HeaderField, body []byte, head bool) {
	st.inlineDone = true
	end := head || len(body) == 0 || !bodyAllowed(status)
	st.rw.fieldBuf[0] = hpack.HeaderField{Name: ":status", Value: statusText(status)}
	st.send.headers = true
	c.queueLocked(wframe{kind: wHeaders, id: st.id, end: end, fields: st.rw.fieldBuf[:1], shared: fields})
	if end {
		st.send.end, st.send.endSent = true, true
		c.localClosedLocked(st)
		return
	}
	st.send.q.WriteShared(body)
	c.endSendLocked(st, nil)
}

// inlineJob is a request for the server's InlineHandler, which the read
// loop offers it once the frame's lock is released (a frame opens at most
// one stream, so at most one waits).
type inlineJob struct {
	h   InlineHandler
	st  *stream
	req *http.Request
}

// serveInline offers a request to the InlineHandler on the read goroutine;
// if it declines, a handler goroutine answers it, with a context cancelled
// with the stream.
func (c *Conn) serveInline(j inlineJob) {
	if c.runInline(j) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ireq = nil // the request's parts go with it
	req := j.req.WithContext(c.newStreamContext(j.st))
	if j.st.state == stateClosed {
		j.st.cancel() // reset meanwhile: closeStreamLocked had nothing to cancel
	}
	c.handOff(j.st, req)
}

// runInline runs the InlineHandler and reports whether it answered (or
// panicked, which ends the stream as a handler's panic does).
func (c *Conn) runInline(j inlineJob) (served bool) {
	rw := c.newResponseWriter(j.st, j.req)
	ir := c.ireq
	if ir.resp == nil {
		ir.resp = make(http.Header)
	}
	clear(ir.resp)
	rw.header = ir.resp
	defer func() {
		if p := recover(); p != nil || served {
			c.handlerDone(j.st, j.req, p, true)
			served = true
		}
	}()
	return j.h.ServeInline(rw, j.req)
}

// onTrailers handles a second header block on an open stream.
func (c *Conn) onTrailers(st *stream) error {
	hb := &c.hb
	if !hb.end {
		return streamError{st.id, http2.ErrCodeProtocol, "trailers without END_STREAM"}
	}
	if hb.bad != "" {
		return streamError{st.id, http2.ErrCodeProtocol, hb.bad}
	}
	if err := parseTrailerFields(hb.fields); err != nil {
		return streamError{st.id, http2.ErrCodeProtocol, err.Error()}
	}
	if st.declLen >= 0 && st.gotLen != st.declLen {
		return streamError{st.id, http2.ErrCodeProtocol, fmt.Sprintf("body of %d bytes, content-length %d", st.gotLen, st.declLen)}
	}
	st.recv.trailers = append([]hpack.HeaderField(nil), hb.fields...)
	c.remoteClosedLocked(st)
	return nil
}

// respondLocked answers a stream with a bodiless status, bypassing handlers.
func (c *Conn) respondLocked(st *stream, status int) {
	st.send.headers, st.send.end, st.send.endSent = true, true, true
	c.queueLocked(wframe{kind: wHeaders, id: st.id, end: true, fields: []hpack.HeaderField{{Name: ":status", Value: statusText(status)}}})
	c.localClosedLocked(st)
}

// newRequest makes a stream's http.Request. An inline one (bodiless, for
// the InlineHandler) is made in the connection's inlineReq, which the next
// reuses, with the connection's context; others get a context of their own.
func (c *Conn) newRequest(st *stream, rh requestHead, fields []hpack.HeaderField, hasBody, inline bool) (*http.Request, error) {
	var ir *inlineReq
	var u *url.URL
	var header http.Header
	var vals []string
	if inline {
		if c.ireq == nil {
			c.ireq = &inlineReq{header: make(http.Header)}
		}
		ir = c.ireq
		u, header, vals = &ir.url, ir.header, ir.vals[:0]
		clear(header)
	} else {
		u, header, vals = new(url.URL), make(http.Header, len(fields)), make([]string, 0, len(fields))
	}
	switch {
	case rh.method == http.MethodConnect:
		*u = url.URL{Host: rh.authority}
	case rh.path == "*" && rh.method == http.MethodOptions:
		*u = url.URL{Path: "*"}
	default:
		if err := parseRequestPath(rh.path, u); err != nil {
			return nil, fmt.Errorf(":path %q: %v", rh.path, err)
		}
	}
	vals = fillHeader(header, vals, fields)
	host := rh.authority
	if host == "" {
		host = header.Get("Host")
	}
	trailer := readEngineFields(st, fields)
	var body io.ReadCloser = http.NoBody
	var rb *streamBody
	if hasBody {
		rb = &streamBody{c: c, st: st, closeCode: http2.ErrCodeNo}
		body = rb
	}
	// A value, so that WithContext's copy is the request's only allocation.
	req := http.Request{
		Method:        rh.method,
		URL:           u,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        header,
		Body:          body,
		ContentLength: rh.contentLength,
		Host:          host,
		RemoteAddr:    c.remoteAddr(),
		RequestURI:    rh.path,
	}
	if !hasBody {
		req.ContentLength = 0
	}
	if tc, ok := c.nc.(*tls.Conn); ok {
		if c.tlsState == nil {
			cs := tc.ConnectionState()
			c.tlsState = &cs // shared by the connection's requests, as x/net's server does
		}
		req.TLS = c.tlsState
	}
	req.Trailer = trailer
	if inline {
		ir.vals = vals
		ir.ctx = streamContext{Context: c.ctx, c: c, st: st}
		st.ctx, st.cancel = &ir.ctx, noCancel
		ir.req = *req.WithContext(&ir.ctx)
		return &ir.req, nil
	}
	r := req.WithContext(c.newStreamContext(st))
	if rb != nil {
		rb.trailer = &r.Trailer
	}
	return r, nil
}

// readEngineFields applies the request's first priority field (RFC 9218)
// to st and returns the names its trailer fields announce, nil if none.
// It walks fields rather than looking the two names up in the request's
// header map: a lookup hashes its key, a walk compares lengths.
func readEngineFields(st *stream, fields []hpack.HeaderField) (trailer http.Header) {
	sawPrio := false
	for _, f := range fields {
		switch f.Name {
		case "priority":
			if !sawPrio {
				sawPrio = true
				if pr, err := prio.Parse(f.Value); err == nil {
					st.prio = pr
				}
			}
		case "trailer":
			if trailer == nil {
				trailer = make(http.Header)
			}
			for _, k := range splitComma(f.Value) {
				trailer[canonicalKey(lowerKey(k))] = nil
			}
		}
	}
	return trailer
}

// inlineReq is an inline request and its parts, reused by the connection's
// next one: an InlineHandler keeps nothing of a request it answered. A
// declined one takes them along to its handler goroutine.
type inlineReq struct {
	req    http.Request
	url    url.URL
	header http.Header
	vals   []string      // header's values
	ctx    streamContext // the connection's context, with the stream
	resp   http.Header   // the response's header
}

// runHandler runs the application's handler for one stream.
func (c *Conn) runHandler(st *stream, req *http.Request) {
	rw := c.newResponseWriter(st, req)
	defer func() { c.handlerDone(st, req, recover(), false) }()
	h := c.srv.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	h.ServeHTTP(rw, req)
}

// newResponseWriter readies st's ResponseWriter for req.
func (c *Conn) newResponseWriter(st *stream, req *http.Request) *responseWriter {
	rw := &st.rw
	*rw = responseWriter{c: c, st: st, req: req, status: 0, contentLength: -1}
	rw.isHead = req.Method == http.MethodHead
	return rw
}

// handlerDone completes a stream's response after its handler returned,
// or resets the stream if the handler panicked with p. An inline one's
// stream is free for reuse once closed, so it is not touched after the
// lock: its context and body are the connection's and http.NoBody.
func (c *Conn) handlerDone(st *stream, req *http.Request, p any, inline bool) {
	if p != nil {
		if p != http.ErrAbortHandler {
			buf := make([]byte, 8<<10)
			buf = buf[:runtime.Stack(buf, false)]
			log.Printf("h2: panic serving %v %s: %v\n%s", c.nc.RemoteAddr(), req.URL, p, buf)
		}
		c.mu.Lock()
		c.resetStreamLocked(st.id, http2.ErrCodeInternal)
		c.mu.Unlock()
	} else {
		st.rw.finish()
	}
	c.mu.Lock()
	c.handlers--
	c.addBusyLocked(-1)
	c.nudgeLocked()
	if inline {
		st.rw.header = nil // the connection's, for its next inline response
		st.inlineDone = true
		if st.state == stateClosed {
			c.freeStreamLocked(st)
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	st.cancel()
	if b, ok := req.Body.(*streamBody); ok {
		b.Close()
	}
}

// takeTrailers moves received trailers into *dst once the body hit EOF.
func (c *Conn) takeTrailers(st *stream, dst *http.Header) {
	c.mu.Lock()
	tr := st.recv.trailers
	st.recv.trailers = nil
	c.mu.Unlock()
	if tr == nil {
		return
	}
	if *dst == nil {
		*dst = make(http.Header, len(tr))
	}
	for k, v := range fieldsToHeader(tr) {
		(*dst)[k] = v
	}
}
