// Package h2 is shunt's HTTP/2 connection engine (RFC 9113), one engine for the
// client and server roles, built on golang.org/x/net/http2's Framer and hpack.
//
// It exposes what packaged stacks do not: extension frames and settings,
// application-controlled stream receive windows, PING RTT samples, and the
// hooks SMig needs to move a stream between connections.
//
// CONTRACT NOTE (remove when implemented): the exported names in this file are
// relied on by package server, internal/cli and the tests. Bodies are stubs.
package h2

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

var errUnimplemented = errors.New("h2: not implemented yet")

// Config holds the limits and hooks shared by both roles. Zero values mean defaults.
type Config struct {
	MaxConcurrentStreams uint32        // streams the peer may open; default 100
	MaxHeaderListSize    uint32        // default 64 KiB
	InitialWindowSize    uint32        // per-stream receive window; default 1 MiB
	ConnWindowSize       uint32        // connection receive window; default 16 MiB
	MaxReadFrameSize     uint32        // default 16 KiB
	IdleTimeout          time.Duration // close a connection with no open stream after this
	// ExtraSettings are announced in the first SETTINGS frame (extension settings).
	ExtraSettings []http2.Setting
	// OnExtensionFrame receives frames of types the engine does not know.
	// Nil means ignore them, as RFC 9113 section 4.1 requires.
	OnExtensionFrame func(c *Conn, f *http2.UnknownFrame)
	// Trace, if set, sees every frame read or written (shunt get -v).
	Trace func(dir Direction, f http2.Frame)
}

// Direction tells whether a traced frame was read or written.
type Direction int

const (
	Recv Direction = iota
	Sent
)

// Conn is one HTTP/2 connection in either role.
type Conn struct{}

// Ping sends a PING and returns the round-trip time when its ACK arrives.
func (c *Conn) Ping(ctx context.Context) (time.Duration, error) { return 0, errUnimplemented }

// WriteExtensionFrame sends a frame of a type the engine does not define.
func (c *Conn) WriteExtensionFrame(t http2.FrameType, flags http2.Flags, streamID uint32, payload []byte) error {
	return errUnimplemented
}

// PeerSetting returns a setting the peer announced, and whether it did.
func (c *Conn) PeerSetting(id http2.SettingID) (uint32, bool) { return 0, false }

// Upgrade carries an HTTP/1.1 request that asked to switch to h2c (RFC 7540 3.2).
// The 101 response has already been written; Request becomes stream 1.
type Upgrade struct {
	Request  *http.Request
	Settings []byte // the decoded HTTP2-Settings header: a SETTINGS payload
}

// Server serves HTTP/2 connections with an http.Handler.
type Server struct {
	Handler http.Handler
	Config  Config
}

// ServeConn serves one connection that is already past TLS/ALPN, or is h2c.
// It blocks until the connection ends. up is nil unless h2c Upgrade.
func (s *Server) ServeConn(ctx context.Context, c net.Conn, up *Upgrade) error {
	return errUnimplemented
}

// Shutdown sends GOAWAY on every connection and waits for them to drain.
func (s *Server) Shutdown(ctx context.Context) error { return errUnimplemented }

// Transport is an http.RoundTripper speaking HTTP/2 (h2 over TLS, or h2c with
// prior knowledge for http:// URLs when AllowHTTP is set).
type Transport struct {
	TLSClientConfig *tls.Config
	AllowHTTP       bool
	DialContext     func(ctx context.Context, network, addr string) (net.Conn, error)
	Config          Config
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return nil, errUnimplemented
}

// ClientConn is a client connection to one server.
type ClientConn struct{}

// NewClientConn starts HTTP/2 on an established connection (preface sent).
func (t *Transport) NewClientConn(c net.Conn) (*ClientConn, error) { return nil, errUnimplemented }

// RoundTrip sends one request on this connection.
func (cc *ClientConn) RoundTrip(req *http.Request) (*http.Response, error) {
	return nil, errUnimplemented
}
