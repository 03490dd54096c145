package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/netem"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/testbed"
)

// Handover through the proxy over real namespaces and emulated links
// (testbed twopath: wifi 10 Mbit/s 14 ms each way, cell 5 Mbit/s 32 ms each
// way, shunt's server): the primary, wifi, goes silent for good once it has
// delivered 500 KB of a 4 MB response; the proxy moves the rest to cell and
// the application gets the whole object, byte for byte, in one response.
func TestProxyHandoverPrimaryDies(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces and TUN devices (testbed.NewTwoPath)")
	}
	link := func(rate float64, d time.Duration) netem.LinkConfig { return netem.LinkConfig{RateBps: rate, Delay: d} }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := testbed.NewTwoPath(ctx,
		testbed.PathSpec{Name: "wifi", Up: link(10e6, 14*time.Millisecond), Down: link(10e6, 14*time.Millisecond)},
		testbed.PathSpec{Name: "cell", Up: link(5e6, 32*time.Millisecond), Down: link(5e6, 32*time.Millisecond)},
		testbed.Options{})
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	defer n.Close()
	sp := n.Paths[0]
	sln, err := sp.Server.Listen("tcp", net.JoinHostPort(sp.ServerAddr.String(), "8080"), testbed.SockOpts{CC: "cubic"})
	if err != nil {
		t.Fatal(err)
	}
	originAddr := serveOn(t, &server.Server{Handler: contentHandler(t), CC: "cubic"}, sln)

	var paths []mph2.Path
	for _, p := range n.Paths {
		paths = append(paths, mph2.Path{Name: p.Name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return n.Client.DialContext(ctx, network, addr, testbed.SockOpts{CC: "cubic", Source: p.ClientAddr})
		}})
	}
	const size, after = 4 << 20, 500 << 10
	var mu sync.Mutex
	delivered := make([]int64, 2)
	var cutAt, cellFirst time.Time
	var cutErr error
	progress := func(p int, d int64) {
		mu.Lock()
		defer mu.Unlock()
		delivered[p] = d
		if p == 0 && d >= after && cutAt.IsZero() {
			_, cutErr = n.Outage("wifi") // never restored: the primary is gone
			cutAt = time.Now()
		}
		if p == 1 && cellFirst.IsZero() {
			cellFirst = time.Now()
		}
	}
	pln, err := n.Client.Listen("tcp", "127.0.0.1:0", testbed.SockOpts{})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	r, err := Start(pctx, Config{Listener: pln, Paths: paths, Mode: mph2.ModeHandover, ErrorLog: discardLog(), Progress: progress})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	defer func() { stop(); r.Wait() }()
	app := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: r.Addr}),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return n.Client.DialContext(ctx, network, addr, testbed.SockOpts{})
		},
	}, Timeout: time.Minute}
	start := time.Now()
	status, got, sum, err := fetch(t, app, fmt.Sprintf("http://%s/gen/%d", originAddr, size))
	total := time.Since(start)
	if err != nil || status != 200 || got != size || sum != content.Digest(size) {
		t.Fatalf("status %d, %d bytes (%v), SHA-256 ok %v; want 200 and /gen/%d", status, got, err, sum == content.Digest(size), size)
	}
	mu.Lock()
	defer mu.Unlock()
	if cutErr != nil {
		t.Fatalf("cutting wifi: %v", cutErr)
	}
	if cutAt.IsZero() {
		t.Fatal("wifi never delivered 500 KB: the outage never happened and the test proves nothing")
	}
	t.Logf("wifi cut at %v after %d B; cell's first byte %v after the cut; wifi %d B, cell %d B; the response took %v",
		cutAt.Sub(start), after, cellFirst.Sub(cutAt), delivered[0], delivered[1], total)
	if cellFirst.Before(cutAt) || delivered[1] < size-delivered[0] {
		t.Fatalf("cell delivered %d B from %v (cut at %v), wifi %d B: want cell to carry the rest after the cut",
			delivered[1], cellFirst.Sub(start), cutAt.Sub(start), delivered[0])
	}
}
