// Package server puts shunt's HTTP/2 engine and Go's HTTP/1.1 server behind
// one listener, so HTTP/1.1 baselines and HTTP/2 runs hit the same server.
//
// With TLS, ALPN picks the protocol: "h2" goes to the h2 engine, "http/1.1"
// (or no ALPN) to net/http. In cleartext the first bytes decide: the HTTP/2
// client preface means h2c with prior knowledge, anything else is HTTP/1.1,
// where a body-less request with "Upgrade: h2c" is switched to HTTP/2
// (RFC 7540 section 3.2) and becomes stream 1.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/internal/sockctl"
)

const (
	// DefaultHeaderTimeout bounds the TLS handshake, the cleartext sniff,
	// an HTTP/1.1 request's header and HTTP/2's preface and header blocks,
	// so a client that connects and says nothing, or trickles its headers
	// (slowloris), does not hold a goroutine.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultSendTimeout is how long an HTTP/2 peer may take none of what
	// it is sent (no read, no WINDOW_UPDATE) before the stream or the
	// connection is dropped; above an MP-H2 client's stall timeout (2 min),
	// so a path's outage that the client waits out is waited out here too.
	DefaultSendTimeout = 150 * time.Second
	h1IdleTimeout      = 2 * time.Minute
)

// Server serves HTTP/1.1 and HTTP/2 (h2 over TLS, h2c) on one listener.
// Set the fields before the first Serve; do not change them afterwards.
type Server struct {
	Addr    string       // for Listen and ListenAndServe, e.g. "127.0.0.1:8443"
	Handler http.Handler // serves both protocols

	TLS               bool
	CertFile, KeyFile string // PEM; neither set means a self-signed certificate
	// TLSConfig, if set, is the base TLS configuration; NextProtos is
	// replaced, and a certificate is added when it has none.
	TLSConfig *tls.Config
	// WrapTLS, if set, gets the final TLS configuration (certificate and
	// ALPN in place) and returns the one to serve with; SMig uses it to tag
	// session tickets (smig.Server.TLSConfig).
	WrapTLS func(*tls.Config) *tls.Config

	// H2 is the HTTP/2 engine; nil means &h2.Server{Handler: Handler}.
	// A nil H2.Handler is set to Handler.
	H2 *h2.Server

	MPTCP        bool   // listen with MPTCP (Go's default is on; shunt's is off)
	CC           string // TCP congestion control per socket, e.g. "cubic"; "" = system default
	NotSentLowat int    // TCP_NOTSENT_LOWAT per socket in bytes; 0 = system default
	// KernelSendQueue turns off the HTTP/2 engine's short send queue
	// (h2.Config.KernelSendQueue, set on H2 by the first Listen or Serve).
	// A NotSentLowat set here also keeps the engine off the socket.
	KernelSendQueue bool
	// KeepIdleReader keeps the read goroutine of quiet HTTP/2 connections,
	// which they give up by default (h2.Config.KeepIdleReader, set on H2 by
	// the first Listen or Serve).
	KeepIdleReader bool

	ErrorLog *log.Logger // nil: the log package's standard logger

	// HeaderTimeout is what a client gets to say what it wants: TLS
	// handshake, first bytes, HTTP/1.1 request header, HTTP/2 preface and
	// each header block; 0 means DefaultHeaderTimeout. An H2 whose
	// Config.HeaderTimeout is set keeps its own.
	HeaderTimeout time.Duration
	// SendTimeout is h2.Config.SendTimeout for H2 (unless it sets one);
	// 0 means DefaultSendTimeout, negative none.
	SendTimeout time.Duration

	initOnce sync.Once
	initErr  error
	tlsConf  *tls.Config
	h1       *http.Server
	h1ln     *ConnListener
	h1done   chan struct{} // closed when h1's Serve returns

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	pending   map[net.Conn]struct{} // accepted, protocol not chosen yet
	active    map[net.Conn]struct{} // served by the h2 engine
	closing   atomic.Bool
	h2Used    atomic.Bool
	wg        sync.WaitGroup // dispatch goroutines and h2 connections
}

// SockOpts returns the socket options the server sets on accepted connections.
func (s *Server) SockOpts() SockOpts {
	return SockOpts{MPTCP: s.MPTCP, CC: s.CC, NotSentLowat: s.NotSentLowat}
}

// Listen opens the TCP listener for s.Addr with the server's socket options:
// MPTCP only if asked, and CC and NotSentLowat set on the listening socket
// too, so a bad value fails here rather than on every connection.
func (s *Server) Listen(ctx context.Context) (net.Listener, error) {
	if s.Addr == "" {
		return nil, errors.New("server: Addr is empty")
	}
	o := s.SockOpts()
	lc := net.ListenConfig{Control: func(network, address string, rc syscall.RawConn) error {
		return sockctl.Control(rc, o.set)
	}}
	lc.SetMultipathTCP(s.MPTCP)
	ln, err := lc.Listen(ctx, "tcp", s.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen %s (%v): %w", s.Addr, o, err)
	}
	if err := s.init(ln.Addr()); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// ListenAndServe is Listen then Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := s.Listen(ctx)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve accepts connections on ln until Shutdown, which makes it return
// http.ErrServerClosed, or until ctx is done, which closes the listener and
// every connection at once and makes it return ctx.Err().
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.init(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	if !track(s, s.listeners, ln) {
		ln.Close()
		return http.ErrServerClosed
	}
	defer untrack(s, s.listeners, ln)
	stop := context.AfterFunc(ctx, s.closeAll)
	defer stop()

	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case s.closing.Load():
				return http.ErrServerClosed
			}
			// Like net/http: ride out EMFILE and friends instead of exiting.
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logf("server: accept on %s: %v; retrying in %v", ln.Addr(), err, backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("server: accept on %s: %w", ln.Addr(), err)
		}
		backoff = 0
		if !s.begin() {
			c.Close()
			return http.ErrServerClosed
		}
		if !track(s, s.pending, c) {
			c.Close()
			s.wg.Done()
			return http.ErrServerClosed
		}
		go func() {
			defer s.wg.Done()
			s.dispatch(ctx, c)
		}()
	}
}

// init prepares what all listeners share; addr (the first listener's) goes
// into a generated certificate.
func (s *Server) init(addr net.Addr) error {
	s.initOnce.Do(func() {
		s.listeners = make(map[net.Listener]struct{})
		s.pending = make(map[net.Conn]struct{})
		s.active = make(map[net.Conn]struct{})
		if s.Handler == nil {
			s.initErr = errors.New("server: Handler is nil")
			return
		}
		if s.HeaderTimeout <= 0 {
			s.HeaderTimeout = DefaultHeaderTimeout
		}
		if s.H2 == nil {
			s.H2 = &h2.Server{Handler: s.Handler}
		} else if s.H2.Handler == nil {
			s.H2.Handler = s.Handler
		}
		if s.H2.Config.HeaderTimeout == 0 {
			s.H2.Config.HeaderTimeout = s.HeaderTimeout
		}
		if s.SendTimeout == 0 {
			s.SendTimeout = DefaultSendTimeout
		}
		if s.H2.Config.SendTimeout == 0 && s.SendTimeout > 0 {
			s.H2.Config.SendTimeout = s.SendTimeout
		}
		if s.KernelSendQueue {
			s.H2.Config.KernelSendQueue = true
		}
		if s.KeepIdleReader {
			s.H2.Config.KeepIdleReader = true
		}
		if s.TLS {
			if s.tlsConf, s.initErr = s.makeTLSConfig(addr); s.initErr != nil {
				return
			}
			if s.WrapTLS != nil {
				s.tlsConf = s.WrapTLS(s.tlsConf)
			}
		}
		s.h1ln = NewConnListener(addr)
		s.h1 = &http.Server{
			Handler:           http.HandlerFunc(s.serveHTTP1),
			ReadHeaderTimeout: s.HeaderTimeout,
			IdleTimeout:       h1IdleTimeout,
			ErrorLog:          s.ErrorLog,
			Protocols:         new(http.Protocols),
		}
		s.h1.Protocols.SetHTTP1(true)
		s.h1done = make(chan struct{})
		go func() {
			defer close(s.h1done)
			s.h1.Serve(s.h1ln)
		}()
	})
	return s.initErr
}

func (s *Server) makeTLSConfig(addr net.Addr) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.TLSConfig != nil {
		cfg = s.TLSConfig.Clone()
	}
	cfg.NextProtos = []string{"h2", "http/1.1"}
	if len(cfg.Certificates) > 0 || cfg.GetCertificate != nil {
		return cfg, nil
	}
	var cert tls.Certificate
	var err error
	if s.CertFile != "" || s.KeyFile != "" {
		cert, err = tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("server: certificate %s, key %s: %w", s.CertFile, s.KeyFile, err)
		}
	} else {
		var hosts []string
		for _, a := range []string{s.Addr, addr.String()} {
			if h, _, err := net.SplitHostPort(a); err == nil {
				hosts = append(hosts, h)
			}
		}
		if cert, err = SelfSignedCert(time.Now(), hosts...); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	cfg.Certificates = []tls.Certificate{cert}
	return cfg, nil
}

// Certificate returns the certificate a TLS server presents, once Listen or
// Serve has prepared it, for clients that want to trust a generated one.
func (s *Server) Certificate() *tls.Certificate {
	if s.tlsConf == nil || len(s.tlsConf.Certificates) == 0 {
		return nil
	}
	return &s.tlsConf.Certificates[0]
}

// dispatch sets the socket options, then picks the protocol for c.
func (s *Server) dispatch(ctx context.Context, c net.Conn) {
	defer untrack(s, s.pending, c)
	if err := s.SockOpts().apply(c); err != nil {
		s.logf("server: %s: %v", c.RemoteAddr(), err)
		c.Close()
		return
	}
	if s.TLS {
		tc := h2.TLSServer(c, s.tlsConf)
		hctx, cancel := context.WithTimeout(ctx, s.HeaderTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			s.logf("server: TLS handshake with %s: %v", c.RemoteAddr(), err)
			c.Close()
			return
		}
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			s.serveH2(ctx, c, tc, nil)
		} else {
			s.toHTTP1(c, tc)
		}
		return
	}
	isH2, head, err := sniff(c, time.Now().Add(s.HeaderTimeout))
	if errors.Is(err, errRequestLineTooLong) {
		refuseHTTP1(c, "414 URI Too Long", "request line longer than 8 KiB")
	}
	if err != nil {
		s.logf("server: %v", err)
		c.Close()
		return
	}
	pc := NewPrefixConn(c, head)
	if isH2 {
		s.serveH2(ctx, c, pc, nil)
	} else {
		s.toHTTP1(c, pc)
	}
}

// toHTTP1 passes c (seen by net/http as hc) to the HTTP/1.1 server, which
// owns it from then on.
func (s *Server) toHTTP1(c, hc net.Conn) {
	untrack(s, s.pending, c)
	if !s.h1ln.Push(hc) {
		hc.Close()
	}
}

// serveH2 runs the h2 engine on hc (c, possibly wrapped) until the connection
// ends, c tracked as active so that a hard stop can close it. Without an
// upgrade it returns as soon as the connection is quiet
// (h2.Server.ServeConnDetached: an idle h2c connection then holds no
// goroutine), and the connection holds a count of s.wg of its own until it
// ends. An upgrade's context is its HTTP/1.1 request's, which ends when
// the handler returns, so it is served to its end here.
func (s *Server) serveH2(ctx context.Context, c, hc net.Conn, up *h2.Upgrade) {
	untrack(s, s.pending, c)
	if !track(s, s.active, c) {
		c.Close()
		return
	}
	s.h2Used.Store(true)
	ended := func(err error) {
		if err != nil && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
			s.logf("server: HTTP/2 connection from %s: %v", c.RemoteAddr(), err)
		}
		hc.Close()
		untrack(s, s.active, c)
	}
	if up != nil {
		ended(s.H2.ServeConn(ctx, hc, up))
		return
	}
	// The caller's count of s.wg is still held, so this Add cannot race
	// Shutdown's Wait.
	s.wg.Add(1)
	s.H2.ServeConnDetached(ctx, hc, nil, func(err error) {
		ended(err)
		s.wg.Done()
	})
}

// serveHTTP1 is net/http's handler: it switches h2c upgrades to the engine
// and passes everything else to s.Handler.
func (s *Server) serveHTTP1(w http.ResponseWriter, r *http.Request) {
	if r.TLS != nil {
		s.Handler.ServeHTTP(w, r)
		return
	}
	settings, ok, err := h2cUpgrade(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !ok {
		s.Handler.ServeHTTP(w, r)
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Only HTTP/1.x responses can be hijacked, and only they get here.
		s.logf("server: h2c upgrade from %s: hijack: %v", r.RemoteAddr, err)
		s.Handler.ServeHTTP(w, r)
		return
	}
	if !s.begin() {
		c.Close()
		return
	}
	defer s.wg.Done()
	if _, err := brw.WriteString(switchingProtocols); err != nil {
		c.Close()
		return
	}
	if err := brw.Flush(); err != nil {
		c.Close()
		return
	}
	// The client may have sent its preface right behind the request.
	head, _ := brw.Reader.Peek(brw.Reader.Buffered())
	r.Body = http.NoBody
	s.serveH2(r.Context(), c, NewPrefixConn(c, head), &h2.Upgrade{Request: r, Settings: settings})
}

// Shutdown stops accepting, tells HTTP/2 clients with GOAWAY and lets
// in-flight requests on both protocols finish. When ctx ends first it closes
// every connection and returns ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	// Connections that have not sent their first bytes are idle: close them.
	s.stop(false)

	var errs [2]error
	var wg sync.WaitGroup
	if s.h1 != nil {
		wg.Go(func() {
			errs[0] = s.h1.Shutdown(ctx)
			<-s.h1done
		})
	}
	// A server that never spoke HTTP/2 has nothing for the engine to drain.
	if s.h2Used.Load() {
		wg.Go(func() { errs[1] = s.H2.Shutdown(ctx) })
	}
	wg.Go(s.wg.Wait)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return errors.Join(errs[:]...)
	case <-ctx.Done():
		s.closeAll()
		return ctx.Err()
	}
}

// closeAll closes every listener and connection at once.
func (s *Server) closeAll() {
	s.stop(true)
	if s.h1 != nil {
		s.h1.Close()
	}
}

// stop marks the server closing and closes its listeners and the connections
// still sniffing their protocol; with active, the serving ones too.
func (s *Server) stop(active bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.pending {
		c.Close()
	}
	if active {
		for c := range s.active {
			c.Close()
		}
	}
}

// begin counts one more goroutine that Shutdown waits for, unless the
// server is closing. Under s.mu, so that no Add races Shutdown's Wait.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.wg.Add(1)
	return true
}

// track adds x to m, one of s's sets, unless the server is closing.
func track[T comparable](s *Server, m map[T]struct{}, x T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	m[x] = struct{}{}
	return true
}

func untrack[T comparable](s *Server, m map[T]struct{}, x T) {
	s.mu.Lock()
	delete(m, x)
	s.mu.Unlock()
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// refuseHTTP1 answers an HTTP/1.x request the server will not read with
// status and a one-line reason, then stops sending and reads (a bounded
// while) what the client still sends, so closing does not reset the
// connection before the client has read the answer.
func refuseHTTP1(c net.Conn, status, reason string) {
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n", status, len(reason)+1, reason)
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}
