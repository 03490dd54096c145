package mph2

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
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

func TestTwoPathLinkDown(t *testing.T) {
	n := newTwoPath(t)
	base := serveShunt(t, n, genHandler(t), 8090)
	c := &Client{Paths: clientPaths(n), PathTimeout: time.Second}
	defer c.Close()
	var once sync.Once
	cut := make(chan error, 1)
	o := Options{Progress: func(p int, delivered int64) {
		if p == 1 && delivered >= 300<<10 {
			once.Do(func() {
				// The cell link loses everything from now on, both ways.
				dead := netem.LinkConfig{RateBps: 5e6, Delay: 32 * time.Millisecond, Loss: netem.Bernoulli(1)}
				err := n.SetLink("cell", testbed.Down, dead)
				if err == nil {
					err = n.SetLink("cell", testbed.Up, dead)
				}
				cut <- err
			})
		}
	}}
	res, _ := fetchAll(t, c, base+"/gen/4MB", tbSize, o)
	select {
	case err := <-cut:
		if err != nil {
			t.Fatalf("SetLink: %v", err)
		}
	default:
		t.Fatalf("the cell path never delivered 300 KiB: %+v", res.Paths)
	}
	if !res.Paths[1].Down || res.Paths[0].Down {
		t.Fatalf("want cell down and wifi up: %+v", res.Paths)
	}
	t.Logf("cell down after %d B (%s); finished on wifi in %v", res.Paths[1].Delivered, res.Paths[1].Err, res.Total)
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
