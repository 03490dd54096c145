package fetch

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
)

// h1 is HTTP/1.1 over at most Conns persistent connections: Go's
// net/http.Transport with HTTP/2 off. Fetcher never has more than Conns
// requests out, so a request takes an idle connection or opens one.
type h1 struct {
	tr *http.Transport

	mu    sync.Mutex
	index map[string]int // connection (by local address) -> order opened
}

func newH1(cfg Config) *h1 {
	h := &h1{index: make(map[string]int)}
	h.tr = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := cfg.Dial(ctx, network, addr)
			if err == nil {
				h.mu.Lock()
				h.index[c.LocalAddr().String()] = len(h.index)
				h.mu.Unlock()
			}
			return c, err
		},
		TLSClientConfig:     tlsConfig(cfg.TLSConfig, "http/1.1"),
		MaxConnsPerHost:     cfg.Conns,
		MaxIdleConnsPerHost: cfg.Conns,
		ForceAttemptHTTP2:   false,
		// A non-nil empty map keeps HTTP/2 off even if ALPN offered it.
		TLSNextProto:       map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression: true,
	}
	return h
}

func (h *h1) roundTrip(req *http.Request) (*http.Response, int, error) {
	conn := 0
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		h.mu.Lock()
		conn = h.index[i.Conn.LocalAddr().String()]
		h.mu.Unlock()
	}}
	resp, err := h.tr.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	return resp, conn, err
}

func (h *h1) opened() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.index)
}

func (h *h1) close() error {
	h.tr.CloseIdleConnections()
	return nil
}
