package fetch

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"github.com/shunt-net/shunt/h2"
)

// h2c is HTTP/2 on one connection of shunt's engine (h2.ClientConn), h2 over
// TLS or h2c with prior knowledge. The stream limit is Fetcher's; the
// server's (100 by default) must not be lower, or requests would wait in
// the engine instead.
type h2c struct {
	cfg  Config
	tr   h2.Transport
	conn lazyConn[*h2.ClientConn]
}

func newH2(cfg Config) *h2c { return &h2c{cfg: cfg} }

func (h *h2c) dial(ctx context.Context) (*h2.ClientConn, error) {
	nc, err := h.cfg.Dial(ctx, "tcp", h.cfg.Addr)
	if err != nil {
		return nil, err
	}
	if h.cfg.TLS {
		conf := tlsConfig(h.cfg.TLSConfig, "h2")
		if conf.ServerName == "" {
			conf.ServerName, _, _ = net.SplitHostPort(h.cfg.Addr)
		}
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", h.cfg.Addr, err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			tc.Close()
			return nil, fmt.Errorf("server %s did not negotiate h2 (ALPN %q)", h.cfg.Addr, p)
		}
		nc = tc
	}
	cc, err := h.tr.NewClientConn(nc)
	if err != nil {
		nc.Close()
	}
	return cc, err
}

func (h *h2c) roundTrip(req *http.Request) (*http.Response, int, error) {
	cc, err := h.conn.get(func() (*h2.ClientConn, error) { return h.dial(req.Context()) })
	if err != nil {
		return nil, 0, err
	}
	resp, err := cc.RoundTrip(req)
	return resp, 0, err
}

func (h *h2c) opened() int { return h.conn.opened() }

func (h *h2c) close() error {
	if cc, ok := h.conn.take(); ok {
		return cc.Close()
	}
	return nil
}
