// Package proxy is shunt proxy's handler: a forward HTTP proxy for
// applications that know nothing of multipath. Requests for plain-HTTP
// origins (HTTP/1.1 absolute-form, or h2c with prior knowledge, whose
// :authority names the origin) are fetched with a RoundTripper, MP-H2's for
// shunt proxy, and the response is passed back as it came; CONNECT tunnels
// (TLS origins) are dialed on one path and carried byte for byte, unless
// the proxy intercepts them (Intercept): then it terminates the
// application's TLS with a certificate of its own CA and fetches the
// requests inside as https ones, like plain-HTTP origins'.
//
// A response whose body fails after its headers have gone out is never
// finished as if it were complete: the connection to the application (or
// the HTTP/2 stream) is aborted, so the application sees an incomplete
// transfer, not a short file.
package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/server"
	"golang.org/x/net/http2"
)

// Proxy is an http.Handler; serve it with server.Server for HTTP/1.1 and h2c
// on one listener.
type Proxy struct {
	// Transport fetches origin requests; it gets absolute http(s) URLs.
	Transport http.RoundTripper
	// Dial opens a CONNECT tunnel's connection to HOST:PORT.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Self names the proxy's own HOST:PORT addresses: a request for one of
	// them is refused instead of looping.
	Self []string
	// ErrorLog gets one line per failed request; nil: the log package's.
	ErrorLog *log.Logger
	// Intercept, if set, names the CONNECT targets whose TLS the proxy
	// terminates instead of tunnelling: after the 200 their connections go
	// to Terminated, the listener of a TLS server with the CA's
	// certificates whose handler is the proxy's (Start sets both).
	Intercept  *Intercept
	Terminated *server.ConnListener
	// Preconnect, if set, is told the origin (scheme https, HOST:PORT) of
	// each CONNECT the proxy terminates, as it arrives, so the origin's
	// connections can be dialed while the application's TLS handshake with
	// the proxy runs rather than after its first request.
	Preconnect func(scheme, host string)
}

// hopHeaders are the connection's own, never forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// via is what this proxy adds to Via (RFC 9110 7.6.3).
const via = "shunt"

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	target, err := p.targetURL(r)
	if err != nil {
		p.fail(w, r, http.StatusBadRequest, err)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), r.Body)
	if err != nil {
		p.fail(w, r, http.StatusBadRequest, err)
		return
	}
	out.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		out.Body = http.NoBody
	}
	out.Header = forwardHeader(r.Header)
	if r.ProtoMajor >= 2 && out.Header.Get("Priority") == "" {
		// RFC 9218: over HTTP/2 and 3 an absent Priority means its defaults
		// (Chromium leaves it out for async scripts); over HTTP/1.1 absent
		// means unknown. Say it, so a hinted transport can tell them apart.
		out.Header.Set("Priority", "u=3")
	}
	out.Header.Add("Via", fmt.Sprintf("%d.%d %s", r.ProtoMajor, r.ProtoMinor, via))
	out.Host = target.Host
	res, err := p.Transport.RoundTrip(out)
	if err != nil {
		p.fail(w, r, http.StatusBadGateway, fmt.Errorf("%s %s: %w", r.Method, target, err))
		return
	}
	defer res.Body.Close()
	h := w.Header()
	for k, v := range forwardHeader(res.Header) {
		h[k] = v
	}
	h.Add("Via", fmt.Sprintf("%d.%d %s", res.ProtoMajor, res.ProtoMinor, via))
	if res.ContentLength >= 0 && r.Method != http.MethodHead && !bodyless(res.StatusCode) {
		h.Set("Content-Length", fmt.Sprint(res.ContentLength))
	}
	w.WriteHeader(res.StatusCode)
	if r.Method == http.MethodHead || bodyless(res.StatusCode) {
		return
	}
	// The header goes out as it arrives rather than with the first body
	// bytes, which can come a round trip later: the application's first
	// byte is then the origin's. A failed flush fails the body's first write.
	http.NewResponseController(w).Flush()
	n, err := io.Copy(flushWriter{w}, res.Body)
	if err == nil && res.ContentLength >= 0 && n != res.ContentLength {
		err = fmt.Errorf("body of %d bytes, Content-Length %d", n, res.ContentLength)
	}
	if err != nil {
		// The status is out: the only honest thing left is to break the
		// transfer, so the application cannot take it for complete.
		p.logf("shunt proxy: %s %s: body aborted after %d bytes: %v", r.Method, target, n, err)
		panic(http.ErrAbortHandler)
	}
}

func bodyless(status int) bool {
	return status == http.StatusNoContent || status == http.StatusNotModified || status < 200
}

// targetURL is the origin URL a proxied request names: HTTP/1.1's
// absolute-form, or HTTP/2's :authority and :path.
func (p *Proxy) targetURL(r *http.Request) (*url.URL, error) {
	u := *r.URL
	switch {
	case u.IsAbs():
	case r.ProtoMajor == 2 && r.Host != "":
		u.Scheme, u.Host = "http", r.Host
	default:
		return nil, fmt.Errorf("%s %s is not a proxy request: HTTP/1.1 needs an absolute URL (use the proxy with curl -x)", r.Method, r.RequestURI)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s: scheme %q: want http or https (https through CONNECT)", u.String(), u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%s: no host", u.String())
	}
	if p.self(u.Host, u.Scheme) {
		return nil, fmt.Errorf("%s names this proxy itself", u.String())
	}
	return &u, nil
}

func (p *Proxy) self(host, scheme string) bool {
	if _, _, err := net.SplitHostPort(host); err != nil {
		port := "80"
		if scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(host, port)
	}
	for _, s := range p.Self {
		if strings.EqualFold(s, host) {
			return true
		}
	}
	return false
}

// forwardHeader copies h without the hop-by-hop fields, including those
// Connection names.
func forwardHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, v := range h["Connection"] {
		for _, f := range strings.Split(v, ",") {
			out.Del(strings.TrimSpace(f))
		}
	}
	for _, k := range hopHeaders {
		out.Del(k)
	}
	return out
}

// connect tunnels r (CONNECT HOST:PORT) to the origin on one path.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	addr := r.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		p.fail(w, r, http.StatusBadRequest, fmt.Errorf("CONNECT %q: want HOST:PORT", addr))
		return
	}
	if p.self(addr, "") {
		p.fail(w, r, http.StatusBadRequest, fmt.Errorf("CONNECT %s names this proxy itself", addr))
		return
	}
	terminate := p.Intercept != nil && p.Intercept.covers(addr)
	if terminate && r.ProtoMajor != 1 {
		// The terminated connections go to a listener as net.Conns; an
		// HTTP/2 stream is not one.
		p.fail(w, r, http.StatusNotImplemented, fmt.Errorf("CONNECT %s over HTTP/%d: only HTTP/1.1 CONNECT is intercepted", addr, r.ProtoMajor))
		return
	}
	if terminate && p.Preconnect != nil {
		p.Preconnect("https", addr)
	}
	var oc net.Conn
	if !terminate {
		var err error
		if oc, err = p.Dial(r.Context(), "tcp", addr); err != nil {
			p.fail(w, r, http.StatusBadGateway, fmt.Errorf("CONNECT %s: %w", addr, err))
			return
		}
		defer oc.Close()
	}
	if r.ProtoMajor != 1 {
		p.tunnelStream(w, r, oc)
		return
	}
	ac, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, fmt.Errorf("CONNECT %s: %w", addr, err))
		return
	}
	if _, err := io.WriteString(ac, "HTTP/1.1 200 Connection established\r\nVia: 1.1 "+via+"\r\n\r\n"); err != nil {
		ac.Close()
		return
	}
	// Bytes the application sent right behind its request (a TLS
	// ClientHello) sit in brw's buffer.
	head, _ := brw.Reader.Peek(brw.Reader.Buffered())
	app := server.NewPrefixConn(ac, bytes.Clone(head))
	if terminate {
		if !p.Terminated.Push(&tunnelConn{Conn: app, target: addr}) {
			ac.Close()
		}
		return
	}
	defer ac.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(oc, app)
		closeWrite(oc)
	}()
	io.Copy(ac, oc)
	closeWrite(ac)
	wg.Wait()
}

// tunnelStream carries an HTTP/2 CONNECT's tunnel in its stream (RFC 9113
// 8.5): the request body goes to the origin, the origin's bytes come back
// as the response body. END_STREAM and the origin's FIN each half-close the
// other side; an error on the origin connection resets the stream with
// CONNECT_ERROR, and a reset stream resets the origin connection.
func (p *Proxy) tunnelStream(w http.ResponseWriter, r *http.Request, oc net.Conn) {
	w.Header().Set("Via", "2.0 "+via)
	w.WriteHeader(http.StatusOK)
	if http.NewResponseController(w).Flush() != nil {
		return
	}
	up := make(chan error, 1)
	go func() {
		_, err := io.Copy(oc, r.Body)
		if err != nil {
			abort(oc)
		} else {
			closeWrite(oc)
		}
		up <- err
	}()
	if _, err := io.Copy(flushWriter{w}, oc); err != nil {
		abort(oc)
		st := h2.StreamFromContext(r.Context())
		if st == nil {
			panic(http.ErrAbortHandler) // another engine's stream: its own reset
		}
		// On a stream the application has reset already this is nothing.
		st.Reset(http2.ErrCodeConnect)
	} else {
		closeWrite(w)
	}
	<-up
}

// abort closes c with a TCP RST where it can: an error on a CONNECT
// stream is one on its origin connection too (RFC 9113 8.5).
func abort(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
	}
	c.Close()
}

// tunnelConn is a terminated CONNECT's connection; target is the HOST:PORT
// it named, which the connection gives as its local address: the one the
// application connected to, whose certificate the proxy presents (through
// whatever wraps the connection in the TLS server).
type tunnelConn struct {
	net.Conn
	target string
}

func (c *tunnelConn) LocalAddr() net.Addr { return targetAddr(c.target) }

// targetAddr is a CONNECT target as a net.Addr.
type targetAddr string

func (targetAddr) Network() string  { return "tcp" }
func (a targetAddr) String() string { return string(a) }

// NetConn returns the wrapped connection, as tls.Conn does.
func (c *tunnelConn) NetConn() net.Conn { return c.Conn }

// closeWrite half-closes c (a connection, or an HTTP/2 response) when it
// can, so each direction of a tunnel ends on its own; otherwise the
// deferred Close, or the handler's return, ends both.
func closeWrite(c any) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// fail answers with status and the reason in plain text.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	p.logf("shunt proxy: %v", err)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "shunt proxy: %v\n", err)
}

func (p *Proxy) logf(format string, args ...any) {
	if p.ErrorLog != nil {
		p.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// flushWriter flushes after every write, so a body streams to the
// application as it arrives instead of waiting for a buffer to fill.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = http.NewResponseController(f.w).Flush()
	}
	return n, err
}
