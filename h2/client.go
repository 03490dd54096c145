package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Transport is an http.RoundTripper speaking HTTP/2 (h2 over TLS, or h2c with
// prior knowledge for http:// URLs when AllowHTTP is set). It keeps a pool of
// connections per host:port and opens another when every one is full
// (peer's SETTINGS_MAX_CONCURRENT_STREAMS) or going away.
type Transport struct {
	TLSClientConfig *tls.Config
	AllowHTTP       bool
	DialContext     func(ctx context.Context, network, addr string) (net.Conn, error)
	Config          Config

	mu    sync.Mutex
	conns map[string][]*ClientConn
	dials map[string]*dialCall
}

type dialCall struct {
	done chan struct{}
	err  error
}

// ClientConn is a client connection to one server.
type ClientConn struct {
	c *Conn
}

// Conn returns the connection engine under this client connection.
func (cc *ClientConn) Conn() *Conn { return cc.c }

// Close closes the connection at once.
func (cc *ClientConn) Close() error {
	cc.c.close(ErrConnClosed)
	return nil
}

const maxRetries = 5

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.RoundTripOpts(req, StreamOptions{})
}

// RoundTripOpts is RoundTrip with per-stream options (receive window,
// manual flow control).
func (t *Transport) RoundTripOpts(req *http.Request, opts StreamOptions) (*http.Response, error) {
	if req.URL == nil {
		return nil, errors.New("h2: request has no URL")
	}
	scheme := req.URL.Scheme
	switch {
	case scheme == "https":
	case scheme == "http" && t.AllowHTTP:
	default:
		return nil, fmt.Errorf("h2: unsupported scheme %q in %s (http:// needs Transport.AllowHTTP)", scheme, req.URL)
	}
	addr := HostPort(req.URL.Host, scheme)
	for try := 0; ; try++ {
		cc, err := t.getConn(req.Context(), addr, scheme)
		if err != nil {
			return nil, err
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: cc.c.nc, Reused: try > 0 || cc.used()})
		}
		res, err := cc.roundTrip(req, opts, true)
		if err == nil || !errors.Is(err, ErrNotProcessed) || try >= maxRetries {
			return res, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, berr := req.GetBody()
			if berr != nil {
				return nil, fmt.Errorf("h2: rewinding body to retry %s: %w", req.URL, berr)
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// HostPort is the address a URL's host names: host as it is if it has a
// port, else with the scheme's default port (443 for https, 80 otherwise).
func HostPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}

// getConn returns a pooled connection with a stream slot reserved, dialing
// (once per address at a time) when none has room.
func (t *Transport) getConn(ctx context.Context, addr, scheme string) (*ClientConn, error) {
	t.mu.Lock()
	for {
		live := t.conns[addr][:0]
		var found *ClientConn
		for _, cc := range t.conns[addr] {
			if cc.dead() {
				continue
			}
			live = append(live, cc)
			if found == nil && cc.reserve() {
				found = cc
			}
		}
		if t.conns != nil {
			t.conns[addr] = live
		}
		if found != nil {
			t.mu.Unlock()
			return found, nil
		}
		if d := t.dials[addr]; d != nil {
			t.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			t.mu.Lock()
			continue
		}
		d := &dialCall{done: make(chan struct{})}
		if t.dials == nil {
			t.dials = make(map[string]*dialCall)
			t.conns = make(map[string][]*ClientConn)
		}
		t.dials[addr] = d
		t.mu.Unlock()
		cc, err := t.dial(ctx, addr, scheme)
		t.mu.Lock()
		delete(t.dials, addr)
		d.err = err
		close(d.done)
		if err != nil {
			t.mu.Unlock()
			return nil, err
		}
		t.conns[addr] = append(t.conns[addr], cc)
	}
}

func (t *Transport) dial(ctx context.Context, addr, scheme string) (*ClientConn, error) {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("h2: dial %s: %w", addr, err)
	}
	if scheme == "https" {
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(addr)
			cfg.ServerName = host
		}
		// Offering http/1.1 too lets an HTTP/1.1-only server finish the
		// handshake, so the error below can say what went wrong.
		cfg.NextProtos = []string{"h2", "http/1.1"}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("h2: TLS handshake with %s: %w", addr, err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			tc.Close()
			return nil, fmt.Errorf("h2: server %s did not negotiate h2 over TLS ALPN (got %q)", addr, p)
		}
		nc = tc
	}
	return t.NewClientConn(nc)
}

// CloseIdleConnections closes pooled connections with no open stream.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, list := range t.conns {
		for _, cc := range list {
			c := cc.c
			c.mu.Lock()
			idle := c.activeOurs == 0 && c.reserved == 0
			c.mu.Unlock()
			if idle {
				c.GoAway()
			}
		}
	}
}

// NewClientConn starts HTTP/2 on an established connection (preface sent).
func (t *Transport) NewClientConn(nc net.Conn) (*ClientConn, error) {
	cfg := t.Config.withDefaults()
	c := newConn(nc, &cfg, true, context.Background())
	io.WriteString(c.bw, http2.ClientPreface)
	c.initialSettings()
	if c.cfg.IdleTimeout > 0 {
		c.idleTimer = time.AfterFunc(c.cfg.IdleTimeout, c.GoAway)
	}
	go c.readLoop()
	if c.cfg.PingInterval > 0 {
		go c.pingLoop()
	}
	return &ClientConn{c: c}, nil
}

func (cc *ClientConn) dead() bool {
	c := cc.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing || c.goAwaySent || c.goAwayRecv != nil || c.nextStreamID > 1<<31-1
}

// CanTakeNewRequest reports whether a request sent now could open a
// stream: the connection is not closing, has neither sent nor received
// GOAWAY, and has stream IDs left. Streams already open may go on.
func (cc *ClientConn) CanTakeNewRequest() bool { return !cc.dead() }

func (cc *ClientConn) used() bool {
	c := cc.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextStreamID > 1
}

// reserve takes a stream slot if the peer's concurrency limit allows.
func (cc *ClientConn) reserve() bool {
	c := cc.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.goAwaySent || c.goAwayRecv != nil || c.activeOurs+c.reserved >= int(c.peer.maxStreams) {
		return false
	}
	c.reserved++
	return true
}

// RoundTrip sends one request on this connection.
func (cc *ClientConn) RoundTrip(req *http.Request) (*http.Response, error) {
	return cc.roundTrip(req, StreamOptions{}, false)
}

// RoundTripOpts sends one request on this connection with stream options.
func (cc *ClientConn) RoundTripOpts(req *http.Request, opts StreamOptions) (*http.Response, error) {
	return cc.roundTrip(req, opts, false)
}

func (cc *ClientConn) roundTrip(req *http.Request, opts StreamOptions, reserved bool) (*http.Response, error) {
	c := cc.c
	ctx := req.Context()
	hasBody := req.Body != nil && req.Body != http.NoBody
	fields, err := requestFields(req, hasBody)
	if err != nil {
		if reserved {
			c.unreserve()
		}
		return nil, err
	}
	trace := httptrace.ContextClientTrace(ctx)

	c.mu.Lock()
	if reserved {
		c.reserved--
	} else {
		stop := context.AfterFunc(ctx, func() {
			c.mu.Lock()
			c.slotWait.Broadcast()
			c.mu.Unlock()
		})
		for !c.closing && c.goAwayRecv == nil && ctx.Err() == nil && c.activeOurs+c.reserved >= int(c.peer.maxStreams) {
			c.slotWait.Wait()
		}
		stop()
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if c.closing || c.goAwaySent || c.goAwayRecv != nil || c.nextStreamID > 1<<31-1 {
		c.mu.Unlock()
		return nil, retryableError{fmt.Errorf("h2: connection to %v is going away", c.nc.RemoteAddr())}
	}
	initial := c.sentInitial()
	if opts.ReceiveWindow != 0 && opts.ReceiveWindow < initial {
		c.mu.Unlock()
		return nil, fmt.Errorf("h2: stream receive window %d below the connection's initial window %d; lower it with Conn.SetInitialWindowSize", opts.ReceiveWindow, initial)
	}
	// RFC 9113 6.5.2: the peer said how large a header list it takes; a
	// larger one would only be refused (431, or the connection torn down).
	if size := fieldsSize(fields); size > uint64(c.peer.maxHeaderList) {
		c.mu.Unlock()
		return nil, fmt.Errorf("h2: request header list of %d bytes exceeds the server's SETTINGS_MAX_HEADER_LIST_SIZE %d", size, c.peer.maxHeaderList)
	}
	id := c.nextStreamID
	c.nextStreamID += 2
	st := c.newStream(id, true)
	st.resc = make(chan struct{})
	st.req = req
	st.trace = trace
	st.isHead = req.Method == http.MethodHead
	if opts.ManualWindow {
		st.recvWin.SetManual()
	}
	hf := wframe{kind: wHeaders, id: id, end: !hasBody, fields: fields}
	if trace != nil && (trace.WroteHeaders != nil || trace.WroteRequest != nil && !hasBody) {
		hf.after = func() {
			if trace.WroteHeaders != nil {
				trace.WroteHeaders()
			}
			if !hasBody && trace.WroteRequest != nil {
				trace.WroteRequest(httptrace.WroteRequestInfo{})
			}
		}
	}
	c.queueLocked(hf)
	st.send.headers = true
	if !hasBody {
		st.send.end, st.send.endSent = true, true
		c.localClosedLocked(st)
	}
	if opts.ReceiveWindow > initial {
		if inc := st.recvWin.Grow(opts.ReceiveWindow - initial); inc > 0 {
			c.queueLocked(wframe{kind: wWindowUpdate, id: id, val: inc})
		}
	}
	st.reqCtx = ctx
	st.stopWatch = context.AfterFunc(ctx, func() { c.cancelStream(st, ctx.Err()) })
	c.mu.Unlock()

	if hasBody {
		go c.sendRequestBody(st, req)
	}
	<-st.resc
	c.mu.Lock()
	res, err := st.res, st.resErr
	c.mu.Unlock()
	return res, err
}

func (c *Conn) unreserve() {
	c.mu.Lock()
	c.reserved--
	c.slotWait.Signal()
	c.mu.Unlock()
}

// fieldsSize is a header list's size as SETTINGS_MAX_HEADER_LIST_SIZE
// counts it: names and values plus 32 bytes a field (RFC 9113 6.5.2).
func fieldsSize(fields []hpack.HeaderField) uint64 {
	var n uint64
	for _, f := range fields {
		n += uint64(f.Size())
	}
	return n
}

// cancelStream resets a stream whose request context ended.
func (c *Conn) cancelStream(st *stream, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.state == stateClosed {
		return
	}
	c.queueControlLocked(wframe{kind: wRST, id: st.id, val: uint32(http2.ErrCodeCancel)})
	c.closeStreamLocked(st, err)
}

// requestFields builds the request header block (RFC 9113 8.3.1).
func requestFields(req *http.Request, hasBody bool) ([]hpack.HeaderField, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !httpguts.ValidHostHeader(host) {
		return nil, fmt.Errorf("h2: invalid host %q", host)
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !httpguts.ValidHeaderFieldName(method) {
		return nil, fmt.Errorf("h2: invalid method %q", method)
	}
	fields := make([]hpack.HeaderField, 0, 6+len(req.Header))
	fields = append(fields, hpack.HeaderField{Name: ":method", Value: method})
	if method == http.MethodConnect {
		fields = append(fields, hpack.HeaderField{Name: ":authority", Value: host})
	} else {
		path := req.URL.RequestURI()
		if req.URL.Opaque != "" {
			path = req.URL.Opaque
		}
		fields = append(fields,
			hpack.HeaderField{Name: ":scheme", Value: req.URL.Scheme},
			hpack.HeaderField{Name: ":authority", Value: host},
			hpack.HeaderField{Name: ":path", Value: path})
	}
	fields = appendHeaderFields(fields, req.Header, func(name string) bool {
		return name == "host" || name == "content-length"
	})
	if hasBody && req.ContentLength > 0 {
		fields = append(fields, hpack.HeaderField{Name: "content-length", Value: fmt.Sprint(req.ContentLength)})
	} else if !hasBody && (method == http.MethodPost || method == http.MethodPut) {
		fields = append(fields, hpack.HeaderField{Name: "content-length", Value: "0"})
	}
	if len(req.Trailer) > 0 {
		keys := make([]string, 0, len(req.Trailer))
		for k := range req.Trailer {
			keys = append(keys, lowerKey(k))
		}
		fields = append(fields, hpack.HeaderField{Name: "trailer", Value: strings.Join(keys, ", ")})
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		fields = append(fields, hpack.HeaderField{Name: "user-agent", Value: "shunt"})
	}
	return fields, nil
}

// sendRequestBody copies the request body into the stream's send side.
func (c *Conn) sendRequestBody(st *stream, req *http.Request) {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	defer req.Body.Close()
	buf := *bp
	var n int64
	for {
		k, err := req.Body.Read(buf)
		if k > 0 {
			n += int64(k)
			if werr := c.writeBody(st, buf[:k], true); werr != nil {
				return // the stream failed; the response side reports why
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			c.failStream(st, http2.ErrCodeCancel, fmt.Errorf("h2: reading request body: %w", err))
			return
		}
	}
	if req.ContentLength > 0 && n != req.ContentLength {
		c.failStream(st, http2.ErrCodeCancel, fmt.Errorf("h2: request body of %d bytes, ContentLength %d", n, req.ContentLength))
		return
	}
	var trailers []hpack.HeaderField
	if len(req.Trailer) > 0 {
		trailers = appendHeaderFields(nil, req.Trailer, nil)
	}
	c.mu.Lock()
	c.endSendLocked(st, trailers)
	c.mu.Unlock()
	if st.trace != nil && st.trace.WroteRequest != nil {
		st.trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
}

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// failStream resets st with code and fails it for the application with err.
func (c *Conn) failStream(st *stream, code http2.ErrCode, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.state == stateClosed {
		return
	}
	c.queueControlLocked(wframe{kind: wRST, id: st.id, val: uint32(code)})
	c.closeStreamLocked(st, err)
}

// onResponseHeaders handles a complete header block on the client: a
// response (informational or final) or trailers.
func (c *Conn) onResponseHeaders() error {
	hb := &c.hb
	id := hb.id
	st := c.streams.get(id)
	if st == nil {
		if !c.isOurs(id) && c.idleLocked(id) {
			return connError{http2.ErrCodeProtocol, fmt.Sprintf("server sent HEADERS on stream %d it cannot open", id)}
		}
		if c.idleLocked(id) {
			return connError{http2.ErrCodeProtocol, fmt.Sprintf("HEADERS on idle stream %d", id)}
		}
		return nil // a stream we already reset
	}
	if st.state != stateOpen && st.state != stateHalfClosedLocal {
		return streamError{id, http2.ErrCodeStreamClosed, "HEADERS after END_STREAM"}
	}
	if hb.selfDep {
		return streamError{id, http2.ErrCodeProtocol, "stream depends on itself"} // RFC 9113 5.3.1
	}
	if hb.bad != "" {
		return streamError{id, http2.ErrCodeProtocol, hb.bad}
	}
	if hb.tooLarge {
		return streamError{id, http2.ErrCodeProtocol, fmt.Sprintf("response headers exceed MaxHeaderListSize %d", c.cfg.MaxHeaderListSize)}
	}
	if st.gotFinal {
		return c.onTrailers(st)
	}
	if tr := st.trace; tr != nil && tr.GotFirstResponseByte != nil && !st.gotByte {
		st.gotByte = true
		c.deferred = append(c.deferred, tr.GotFirstResponseByte)
	}
	status, cl, err := parseResponseFields(hb.fields)
	if err != nil {
		return streamError{id, http2.ErrCodeProtocol, err.Error()}
	}
	if status < 200 {
		if hb.end {
			return streamError{id, http2.ErrCodeProtocol, "informational response with END_STREAM"}
		}
		if status == http.StatusContinue && st.trace != nil && st.trace.Got100Continue != nil {
			c.deferred = append(c.deferred, st.trace.Got100Continue)
		}
		return nil
	}
	header := fieldsToHeader(hb.fields)
	res := &http.Response{
		Status:        statusText(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        header,
		ContentLength: cl,
		Request:       st.req,
	}
	if tc, ok := c.nc.(*tls.Conn); ok {
		cs := tc.ConnectionState()
		res.TLS = &cs
	}
	for _, v := range header["Trailer"] {
		for _, k := range splitComma(v) {
			if res.Trailer == nil {
				res.Trailer = make(http.Header)
			}
			res.Trailer[canonicalKey(lowerKey(k))] = nil
		}
	}
	body := &streamBody{c: c, st: st, trailer: &res.Trailer, closeCode: http2.ErrCodeCancel}
	res.Body = body
	if !st.isHead && bodyAllowed(status) {
		st.declLen = cl
	} else if hb.end {
		res.ContentLength = max(cl, 0)
	}
	if hb.end && cl > 0 && st.declLen > 0 {
		return streamError{id, http2.ErrCodeProtocol, fmt.Sprintf("content-length %d with empty body", cl)}
	}
	st.res = res
	st.gotFinal = true
	close(st.resc)
	if hb.end {
		c.remoteClosedLocked(st)
	}
	return nil
}
