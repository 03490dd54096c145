package h2

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// pipeTransport is a client Transport whose connections are in-memory pipes
// to srv, each served on a goroutine of the caller's: inside a
// testing/synctest bubble, synctest.Wait then returns only when client and
// server have nothing left to do, so a test sees the state flow control
// settles in without waiting on the clock. Connections end with the
// Transport's.
func pipeTransport(t *testing.T, h http.Handler, cfg Config) *Transport {
	srv := &Server{Handler: h, Config: cfg}
	tr := &Transport{AllowHTTP: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, s := net.Pipe()
		go srv.ServeConn(context.Background(), s, nil)
		return c, nil
	}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		// Fake time: the server's idle handler goroutines expire at once,
		// so the bubble ends with no goroutine left.
		time.Sleep(handlerIdleTimeout)
	})
	return tr
}

// countDials makes tr count the connections it opens.
func countDials(tr *Transport) *atomic.Int64 {
	var n atomic.Int64
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return dial(ctx, network, addr)
	}
	return &n
}
