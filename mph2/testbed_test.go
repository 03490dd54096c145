package mph2

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/netem"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/testbed"
)

// The integration tests run over testbed.NewTwoPath: wifi 10 Mbit/s with
// 14 ms each way, cell 5 Mbit/s with 32 ms each way.

const tbSize = 4_000_000 // /gen/4MB

func newTwoPath(t *testing.T) *testbed.Net {
	t.Helper()
	return newTestbed(t, "NewTwoPath", testbed.NewTwoPath)
}

// newTestbed builds the wifi and cell paths above with topology build.
func newTestbed(t *testing.T, name string, build func(context.Context, testbed.PathSpec, testbed.PathSpec, testbed.Options) (*testbed.Net, error)) *testbed.Net {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: builds network namespaces and TUN devices (testbed.%s)", name)
	}
	link := func(rate float64, d time.Duration) netem.LinkConfig { return netem.LinkConfig{RateBps: rate, Delay: d} }
	ctx, cancel := context.WithCancel(context.Background())
	n, err := build(ctx,
		testbed.PathSpec{Name: "wifi", Up: link(10e6, 14*time.Millisecond), Down: link(10e6, 14*time.Millisecond)},
		testbed.PathSpec{Name: "cell", Up: link(5e6, 32*time.Millisecond), Down: link(5e6, 32*time.Millisecond)},
		testbed.Options{})
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { n.Close(); cancel() })
	return n
}

// clientPaths are the testbed's paths as seen from the client namespace,
// each bound to its source address.
func clientPaths(n *testbed.Net) []Path {
	var ps []Path
	for _, p := range n.Paths {
		ps = append(ps, Path{Name: p.Name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return n.Client.DialContext(ctx, network, addr, testbed.SockOpts{CC: "cubic", Source: p.ClientAddr})
		}})
	}
	return ps
}

// serveShunt runs shunt's server (handler h) in the server namespace.
func serveShunt(t *testing.T, n *testbed.Net, h http.Handler, port int) string {
	t.Helper()
	return serveShuntOn(t, n.Paths[0], h, port)
}

// serveShuntOn runs shunt's server (handler h) on the server path p reaches.
func serveShuntOn(t *testing.T, p testbed.Path, h http.Handler, port int) string {
	t.Helper()
	addr := net.JoinHostPort(p.ServerAddr.String(), fmt.Sprint(port))
	ln, err := p.Server.Listen("tcp", addr, testbed.SockOpts{CC: "cubic"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &server.Server{Handler: h, CC: "cubic"}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + addr
}

func genHandler(t *testing.T) *content.Handler {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hd.Close() })
	return hd
}

// servePeer runs nginx or h2o in the server namespace with /gen/4MB as a file.
func servePeer(t *testing.T, n *testbed.Net, name string, port int) string {
	t.Helper()
	if _, err := peers.Version(name); err != nil {
		t.Skipf("%s not usable: %v", name, err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "gen"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "gen", "4MB"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, content.NewGenerated(tbSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	probe := n.Servers[0].Command(context.Background(), "true")
	p, err := peers.Start(context.Background(), name, peers.Options{Root: root,
		Addr: net.JoinHostPort(n.Paths[0].ServerAddr.String(), fmt.Sprint(port)), Prefix: probe.Args[:len(probe.Args)-1]})
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { p.Stop() })
	return "http://" + p.Addr
}

func TestTwoPathServers(t *testing.T) {
	n := newTwoPath(t)
	for i, name := range []string{"shunt", peers.Nginx, peers.H2O} {
		t.Run(name, func(t *testing.T) {
			var base string
			if name == "shunt" {
				base = serveShunt(t, n, genHandler(t), 8080+i)
			} else {
				base = servePeer(t, n, name, 8080+i)
			}
			c := &Client{Paths: clientPaths(n)}
			defer c.Close()
			res, _ := fetchAll(t, c, base+"/gen/4MB", tbSize, Options{})
			t.Logf("%s: %v, tail %d B, paths %+v", name, res.Total, res.TailBytes, res.Paths)
			for _, p := range res.Paths {
				if p.Delivered == 0 || p.Proto != "h2c" {
					t.Errorf("path %s: %d bytes over %q; want a share over h2c", p.Name, p.Delivered, p.Proto)
				}
			}
		})
	}
}

// outage makes path name (the client's path i) lose every packet, both
// ways, once it has delivered after bytes, and (back > 0) restores its link
// back later. The connection stays open: this is an outage, not a reset.
func outage(t *testing.T, n *testbed.Net, name string, i int, after int64, back time.Duration) (Options, chan error) {
	t.Helper()
	var once sync.Once
	cut := make(chan error, 2)
	return Options{Progress: func(p int, delivered int64) {
		if p == i && delivered >= after {
			once.Do(func() {
				restore, err := n.Outage(name)
				cut <- err
				if back > 0 && err == nil {
					time.AfterFunc(back, func() { cut <- restore() })
				}
			})
		}
	}}, cut
}

// cuts waits for the outage's n link changes, failing if one never came.
func cuts(t *testing.T, cut chan error, n int) {
	t.Helper()
	for range n {
		select {
		case err := <-cut:
			if err != nil {
				t.Fatalf("SetLink: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the outage never happened: the path did not deliver enough first")
		}
	}
}

// A path that dies mid-download is suspended, its ranges finish on the
// other, and the download completes, every byte checked.
func TestTwoPathLinkDies(t *testing.T) {
	n := newTwoPath(t)
	base := serveShunt(t, n, genHandler(t), 8090)
	c := &Client{Paths: clientPaths(n), PathTimeout: time.Second}
	defer c.Close()
	o, cut := outage(t, n, "cell", 1, 300<<10, 0)
	res, _ := fetchAll(t, c, base+"/gen/4MB", tbSize, o)
	cuts(t, cut, 1)
	cell, wifi := res.Paths[1], res.Paths[0]
	if cell.Suspensions != 1 || cell.Down || wifi.Suspensions != 0 || wifi.Down {
		t.Fatalf("want cell suspended once and wifi untouched: %+v", res.Paths)
	}
	t.Logf("cell silent after %d B (%s); finished on wifi in %v", cell.Delivered, cell.Err, res.Total)
}

// A path that comes back after an outage is re-admitted and delivers
// again; the download completes, every byte checked.
func TestTwoPathLinkComesBack(t *testing.T) {
	n := newTwoPath(t)
	base := serveShunt(t, n, genHandler(t), 8091)
	c := &Client{Paths: clientPaths(n), PathTimeout: 500 * time.Millisecond}
	defer c.Close()
	o, cut := outage(t, n, "cell", 1, 100<<10, 1500*time.Millisecond)
	var atCut, afterBack atomic.Int64
	progress := o.Progress
	o.Progress = func(p int, delivered int64) {
		progress(p, delivered)
		if p == 1 {
			if atCut.Load() == 0 {
				atCut.Store(delivered)
			}
			afterBack.Store(delivered)
		}
	}
	res, _ := fetchAll(t, c, base+"/gen/16MB", 16e6, o)
	cuts(t, cut, 2)
	cell := res.Paths[1]
	if cell.Suspensions < 1 || cell.Suspended <= 0 || cell.Down {
		t.Fatalf("want cell suspended and back: %+v", res.Paths)
	}
	if cell.Delivered <= 100<<10+(1<<20) {
		t.Errorf("cell delivered %d bytes in all: it took no new work after it came back", cell.Delivered)
	}
	t.Logf("cell silent %v in %d suspension(s), delivered %d B; total %v", cell.Suspended, cell.Suspensions, cell.Delivered, res.Total)
}

// Handover over real sockets: the primary (wifi) goes silent after 500 KB,
// the standby (cell) takes the download within HandoverAfter, and once
// wifi answers again (its link back 2 s after the cut) the download goes
// back to it and wifi delivers the rest; every byte checked. Only the
// scheduler's fake-clock simulation covered the way back before.
func TestTwoPathHandoverAndBack(t *testing.T) {
	n := newTwoPath(t)
	base := serveShunt(t, n, genHandler(t), 8093)
	c := &Client{Mode: ModeHandover, Paths: clientPaths(n)}
	defer c.Close()
	const after = 500 << 10
	o, cut := outage(t, n, "wifi", 0, after, 2*time.Second)
	res, _ := fetchAll(t, c, base+"/gen/4MB", tbSize, o)
	cuts(t, cut, 2)
	var why []string
	for _, sw := range res.Switches {
		why = append(why, sw.From+">"+sw.To+":"+sw.Why)
	}
	t.Logf("switches %+v; paths %+v; total %v", res.Switches, res.Paths, res.Total)
	sw := res.Switches
	if len(sw) < 3 || sw[0].To != "wifi" || sw[1].From != "wifi" || sw[1].To != "cell" || sw[len(sw)-1].To != "wifi" || sw[len(sw)-1].Why != "back" {
		t.Fatalf("switches %v: want wifi at the start, to cell when wifi stalls, back to wifi when it answers", why)
	}
	wifi, cell := res.Paths[0], res.Paths[1]
	if cell.Delivered == 0 || wifi.Down || cell.Down {
		t.Fatalf("paths %+v: want cell to carry the outage and neither path down", res.Paths)
	}
	// Going back means wifi delivers again: more than it had at the cut.
	if wifi.Delivered < after+(1<<20) || sw[len(sw)-1].FirstByte < sw[len(sw)-1].At {
		t.Fatalf("wifi delivered %d in all, first byte after going back at %v (back at %v): want the rest on wifi",
			wifi.Delivered, sw[len(sw)-1].FirstByte, sw[len(sw)-1].At)
	}
}

// The only path goes silent for longer than its silence timeout and comes
// back: the download waits it out, as a plain TCP download would, instead
// of failing.
func TestSinglePathOutageWaitedOut(t *testing.T) {
	n := newTwoPath(t)
	base := serveShunt(t, n, genHandler(t), 8092)
	c := &Client{Paths: clientPaths(n)[1:], PathTimeout: 500 * time.Millisecond}
	defer c.Close()
	o, cut := outage(t, n, "cell", 0, 200<<10, 3*time.Second)
	res, _ := fetchAll(t, c, base+"/gen/2MB", 2e6, o)
	cuts(t, cut, 2)
	if p := res.Paths[0]; p.Suspensions < 1 || p.Down || res.Total < 3*time.Second {
		t.Fatalf("want the path suspended and the download done after the outage: %v, %+v", res.Total, res.Paths)
	}
}

// A stall longer than StallTimeout on every path fails the download with
// an error saying so; nothing unverified is written.
func TestStallTimeoutFails(t *testing.T) {
	n := newTwoPath(t)
	base := serveShunt(t, n, genHandler(t), 8093)
	c := &Client{Paths: clientPaths(n)[1:], PathTimeout: 300 * time.Millisecond, StallTimeout: 2 * time.Second}
	defer c.Close()
	o, cut := outage(t, n, "cell", 0, 200<<10, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newMemFile(2e6)
	_, err := c.Download(ctx, base+"/gen/2MB", f, o)
	cuts(t, cut, 1)
	if err == nil || !strings.Contains(err.Error(), "no path delivered data for 2s") {
		t.Fatalf("Download during a permanent outage: %v", err)
	}
	f.checkWritten(t)
}

func TestTwoPathRangesRefused(t *testing.T) {
	n := newTwoPath(t)
	hd := genHandler(t)
	base := serveShunt(t, n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Range")
		hd.ServeHTTP(w, r)
	}), 8091)
	c := &Client{Paths: clientPaths(n)}
	defer c.Close()
	res, _ := fetchAll(t, c, base+"/gen/4MB", tbSize, Options{Size: tbSize})
	if !res.RangesIgnored {
		t.Fatalf("the server's 200s went unnoticed: %+v", res)
	}
	t.Logf("ranges refused: %v, paths %+v", res.Total, res.Paths)
}

// TestMultiHomed: each path resolves the URL's host on its own (here by its
// address mapping) and reaches its own server, as MP-H2 §5.5's MP-H2+MH.
// Both servers hold the same objects; each must have served its path only.
func TestMultiHomed(t *testing.T) {
	n := newTestbed(t, "NewMultiHomed", testbed.NewMultiHomed)
	if len(n.Servers) != 2 || n.Paths[0].ServerAddr == n.Paths[1].ServerAddr {
		t.Fatalf("want two servers, one per path: %+v", n.Paths)
	}
	const host, port = "cdn.example", 8092
	hd := genHandler(t)
	var mu sync.Mutex
	clients := make([]map[string]int, len(n.Paths)) // per server: requests by client address
	var paths []Path
	for i, p := range n.Paths {
		clients[i] = map[string]int{}
		serveShuntOn(t, p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Host != fmt.Sprintf("%s:%d", host, port) {
				http.Error(w, "wrong :authority "+r.Host, http.StatusBadRequest)
				return
			}
			ip, _, _ := net.SplitHostPort(r.RemoteAddr)
			mu.Lock()
			clients[i][ip]++
			mu.Unlock()
			hd.ServeHTTP(w, r)
		}), port)
		cp := clientPaths(n)[i]
		cp.Map = map[string]string{host: p.ServerAddr.String()} // the URL's port is kept
		paths = append(paths, cp)
	}
	c := &Client{Paths: paths}
	defer c.Close()
	res, _ := fetchAll(t, c, fmt.Sprintf("http://%s:%d/gen/4MB", host, port), tbSize, Options{})
	t.Logf("multi-homed: %v, paths %+v", res.Total, res.Paths)
	mu.Lock()
	defer mu.Unlock()
	for i, p := range n.Paths {
		if res.Paths[i].Delivered == 0 || res.Paths[i].Down {
			t.Errorf("path %s: delivered %d, down %v (%s)", p.Name, res.Paths[i].Delivered, res.Paths[i].Down, res.Paths[i].Err)
		}
		want := map[string]int{p.ClientAddr.String(): res.Paths[i].Requests}
		if fmt.Sprint(clients[i]) != fmt.Sprint(want) {
			t.Errorf("server %s (path %s) saw requests %v, want %v", p.ServerAddr, p.Name, clients[i], want)
		}
	}
}
