package mph2

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/server"
)

// closeNotingConn reports its Close.
type closeNotingConn struct {
	net.Conn
	closed chan struct{}
}

func (c *closeNotingConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return c.Conn.Close()
}

// TestCloseWhileDialing: a connection whose dial finishes after the
// Client was closed (a redial in flight) is closed too, not left open.
func TestCloseWhileDialing(t *testing.T) {
	base := startServer(t, nil)
	u, err := url.Parse(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	dialed := make(chan *closeNotingConn, 1)
	c := &Client{Paths: []Path{{Name: "a", Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-release
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &closeNotingConn{Conn: nc, closed: make(chan struct{})}
		dialed <- cc
		return cc, nil
	}}}}
	pc := c.conn(0, u)
	c.Close()
	close(release)
	<-pc.ready
	if pc.err != nil {
		t.Fatalf("dial: %v", pc.err)
	}
	cc := <-dialed
	select {
	case <-cc.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection dialed after Close is still open 5 s later")
	}
}

// A path's h2c probe (a PING's round trip before the first request) is
// paid once per server: later connections, as the proxy opens for every
// response, send their request at once. A server that stops speaking h2c
// at that address is probed again and served over HTTP/1.1.
func TestH2CProbeOncePerServer(t *testing.T) {
	const delay = 150 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	// One listener for both servers, so the address cannot be taken by
	// another process between them: h1only hands later connections to
	// the HTTP/1.1 server.
	var h1only atomic.Bool
	h2ln, h1ln := server.NewConnListener(ln.Addr()), server.NewConnListener(ln.Addr())
	defer h2ln.Close()
	defer h1ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			to := h2ln
			if h1only.Load() {
				to = h1ln
			}
			if !to.Push(nc) {
				nc.Close()
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	srv := &server.Server{Handler: hd}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, h2ln) }()
	const size = 10_000
	url := fmt.Sprintf("http://%s/gen/%d", addr, size)
	c := &Client{Paths: []Path{delayPath("far", 0, delay)}}
	defer c.Close()
	var first [2]time.Duration
	for k := range first {
		res, _ := fetchAll(t, c, url, size, Options{})
		first[k] = res.Paths[0].FirstData
		t.Logf("download %d: first byte %v, total %v", k, first[k], res.Total)
		c.Close() // the next download dials afresh
	}
	// Dial, probe and request take three one-way delays; without the probe
	// two, so the second stays under three whatever the first's overhead.
	if first[0] < 3*delay || first[1] >= 3*delay {
		t.Errorf("first byte %v with the probe, %v on the next connection: want at least %v, then under it", first[0], first[1], 3*delay)
	}
	cancel()
	<-done
	// The same address now serves HTTP/1.1 only.
	h1only.Store(true)
	h1 := &http.Server{Handler: hd}
	go h1.Serve(h1ln)
	defer h1.Close()
	res, _ := fetchAll(t, c, url, size, Options{})
	if p := res.Paths[0]; p.Proto != "http/1.1" {
		t.Errorf("after the server changed: path %+v, want it served over HTTP/1.1", p)
	}
}
