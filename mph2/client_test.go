package mph2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/server"
)

// memFile is an io.WriterAt that remembers which bytes were written how
// often, so a test sees a byte written twice or never.
type memFile struct {
	b      []byte
	writes []uint8
}

func newMemFile(n int64) *memFile { return &memFile{b: make([]byte, n), writes: make([]uint8, n)} }

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m.b)) {
		return 0, fmt.Errorf("write [%d,%d) outside %d bytes", off, off+int64(len(p)), len(m.b))
	}
	copy(m.b[off:], p)
	for i := range p {
		m.writes[off+int64(i)]++
	}
	return len(p), nil
}

// check fails unless m holds the generated object, each byte written once.
func (m *memFile) check(t *testing.T) {
	t.Helper()
	for i, w := range m.writes {
		if w != 1 {
			t.Fatalf("byte %d written %d times", i, w)
		}
	}
	v := content.NewVerifier(0)
	if _, err := v.Write(m.b); err != nil {
		t.Fatalf("content: %v", err)
	}
}

// checkWritten fails unless every byte written (a failed download's part)
// was written once and is the generated object's.
func (m *memFile) checkWritten(t *testing.T) {
	t.Helper()
	for i, w := range m.writes {
		if w > 1 {
			t.Fatalf("byte %d written %d times", i, w)
		}
		if w == 1 {
			var want [1]byte
			content.GenAt(want[:], int64(i))
			if m.b[i] != want[0] {
				t.Fatalf("byte %d is %#x, want %#x", i, m.b[i], want[0])
			}
		}
	}
}

// startServer serves h (default: shunt's content handler) on loopback with
// h2c and HTTP/1.1, returning its base URL.
func startServer(t *testing.T, h http.Handler) string {
	t.Helper()
	if h == nil {
		hd, err := content.NewHandler(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hd.Close() })
		h = hd
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &server.Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

// slowConn limits a loopback connection's reads to rate bytes per second with
// a token bucket whose burst is slowBurst: a limit averaged since the dial would
// let an idle connection bank credit and then read at CPU speed, which on a
// loaded machine made an "8 MB/s" and a "2 MB/s" path equally fast. After
// failAfter bytes (if > 0) it fails like a link going down, and its path's
// link stays down.
type slowConn struct {
	net.Conn
	rate      float64
	failAfter int64
	n         atomic.Int64
	mu        sync.Mutex
	next      time.Time // when the bucket is empty again
	linkDown  *atomic.Bool
}

const slowBurst = 32 << 10

var errLinkDown = errors.New("test: link down")

func (c *slowConn) Read(p []byte) (int, error) {
	if c.failAfter > 0 && c.n.Load() >= c.failAfter {
		c.linkDown.Store(true)
		c.Conn.Close()
		return 0, errLinkDown
	}
	if len(p) > 8<<10 {
		p = p[:8<<10]
	}
	k, err := c.Conn.Read(p)
	c.n.Add(int64(k))
	if c.rate > 0 && k > 0 {
		c.mu.Lock()
		now := time.Now()
		if full := now.Add(-time.Duration(slowBurst / c.rate * 1e9)); c.next.Before(full) {
			c.next = full
		}
		c.next = c.next.Add(time.Duration(float64(k) / c.rate * 1e9))
		wait := time.Until(c.next)
		c.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
	}
	return k, err
}

func loopPath(name string, rate float64, failAfter int64) Path {
	var linkDown atomic.Bool // once a connection has failed, dials fail too
	return Path{Name: name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if linkDown.Load() {
			return nil, errLinkDown
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || (rate == 0 && failAfter == 0) {
			return c, err
		}
		return &slowConn{Conn: c, rate: rate, failAfter: failAfter, linkDown: &linkDown}, nil
	}}
}

func fetchAll(t *testing.T, c *Client, url string, size int64, o Options) (*Result, *memFile) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newMemFile(size)
	res, err := c.Download(ctx, url, f, o)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	if res.Size != size {
		t.Fatalf("wrote %d bytes, want %d", res.Size, size)
	}
	f.check(t)
	return res, f
}

func TestDownloadVariants(t *testing.T) {
	base := startServer(t, nil)
	const size = 3 << 20
	for _, tc := range []struct {
		name string
		c    *Client
		o    Options
	}{
		{"unknown-size", &Client{}, Options{}},
		{"fs", &Client{}, Options{Size: size}},
		{"fs-bwl", &Client{Cache: estimate.NewCache(0)}, Options{Size: size}},
		{"rst", &Client{EndAdjust: EndReset}, Options{}},
		{"no-pipelining", &Client{NoPipelining: true}, Options{Size: size}},
		{"http1", &Client{Proto: ProtoHTTP1}, Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			// The second path is a quarter as fast, so the scheduler has to
			// move work between them.
			c.Paths = []Path{loopPath("fast", 8e6, 0), loopPath("slow", 2e6, 0)}
			defer c.Close()
			for range 2 { // the second download reuses connections (and estimates)
				res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, tc.o)
				var delivered int64
				for _, p := range res.Paths {
					delivered += p.Delivered
					if p.Down {
						t.Fatalf("path %s down: %s", p.Name, p.Err)
					}
				}
				if delivered != size {
					t.Fatalf("paths delivered %d bytes in all, want %d", delivered, size)
				}
				if res.Paths[0].Delivered == 0 || res.Paths[1].Delivered == 0 {
					t.Fatalf("a path delivered nothing: %+v", res.Paths)
				}
				want := "h2c"
				if c.Proto == ProtoHTTP1 {
					want = "http/1.1"
				}
				if res.Paths[0].Proto != want {
					t.Fatalf("proto %q, want %q", res.Paths[0].Proto, want)
				}
			}
		})
	}
}

func TestPathDownMidDownload(t *testing.T) {
	base := startServer(t, nil)
	const size = 3 << 20
	c := &Client{Paths: []Path{loopPath("ok", 6e6, 0), loopPath("dies", 6e6, 300<<10)}}
	defer c.Close()
	res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, Options{Size: size})
	if !res.Paths[1].Down || res.Paths[0].Down {
		t.Fatalf("want path 1 down and path 0 up: %+v", res.Paths)
	}
	if res.Paths[0].Delivered+res.Paths[1].Delivered != size {
		t.Fatalf("delivered %d+%d, want %d", res.Paths[0].Delivered, res.Paths[1].Delivered, size)
	}
}

func TestServerIgnoringRanges(t *testing.T) {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	base := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Range")
		hd.ServeHTTP(w, r)
	}))
	const size = 1 << 20
	for _, o := range []Options{{}, {Size: size}} {
		c := &Client{Paths: []Path{loopPath("a", 0, 0), loopPath("b", 0, 0)}}
		res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, o)
		c.Close()
		// The file is whole and each byte was written once (fetchAll); what
		// the first path had of the object before the 200 arrived may have
		// come from it, the rest comes from the one stream carrying the body.
		if !res.RangesIgnored {
			t.Fatalf("size %d: the ranged request's 200 went unnoticed: %+v", o.Size, res)
		}
	}
}

func TestHTTP1Fallback(t *testing.T) {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	// Go's server without h2c: the prior-knowledge probe fails.
	ts := httptest.NewServer(hd)
	defer ts.Close()
	const size = 2 << 20
	c := &Client{Paths: []Path{loopPath("a", 8e6, 0), loopPath("b", 4e6, 0)}}
	defer c.Close()
	res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", ts.URL, size), size, Options{})
	for _, p := range res.Paths {
		if p.Proto != "http/1.1" {
			t.Fatalf("path %s: proto %q, want http/1.1", p.Name, p.Proto)
		}
	}
}

func TestServerError(t *testing.T) {
	base := startServer(t, nil)
	c := &Client{Paths: []Path{loopPath("a", 0, 0), loopPath("b", 0, 0)}}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Download(ctx, base+"/nope", newMemFile(10), Options{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("404")) {
		t.Fatalf("Download of a missing object: %v, want a 404 error", err)
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		in, iface, addr, mapTo, err string
	}{
		{in: "wlan0", iface: "wlan0"},
		{in: "10.0.0.2", addr: "10.0.0.2"},
		{in: "fe80::1%eth0=[::1]:8443", addr: "fe80::1%eth0", mapTo: "[::1]:8443"},
		{in: "cell0=10.1.0.1", iface: "cell0", mapTo: "10.1.0.1"},
		{in: "=x", err: "want IFACE"},
		{in: "eth0=", err: "empty address"},
	} {
		p, err := ParsePath(tc.in)
		if tc.err != "" {
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.err)) {
				t.Errorf("ParsePath(%q) = %v, want error %q", tc.in, err, tc.err)
			}
			continue
		}
		addr := ""
		if p.LocalAddr.IsValid() {
			addr = p.LocalAddr.String()
		}
		if err != nil || p.Interface != tc.iface || addr != tc.addr || p.Map[anyHost] != tc.mapTo {
			t.Errorf("ParsePath(%q) = %+v, %v", tc.in, p, err)
		}
	}
	p, _ := ParsePath("cell0=10.1.0.1")
	if got, _ := p.target(context.Background(), "example.com:443"); got != "10.1.0.1:443" {
		t.Errorf("mapped target %q, want 10.1.0.1:443", got)
	}
}

func TestParseBudget(t *testing.T) {
	path, n, err := ParseBudget("lte=20MB")
	if err != nil || path != "lte" || n != 20e6 {
		t.Fatalf("ParseBudget(lte=20MB) = %q, %d, %v", path, n, err)
	}
	for _, bad := range []string{"lte", "=1MB", "lte=", "lte=0", "lte=-1", "lte=x"} {
		if _, _, err := ParseBudget(bad); err == nil {
			t.Errorf("ParseBudget(%q): no error", bad)
		}
	}
}

// FuzzParseBudget: what parses formats to text that parses the same.
func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"lte=20MB", "10.0.0.1=1KiB", "a=b=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		path, n, err := ParseBudget(s)
		if err != nil {
			return
		}
		p2, n2, err := ParseBudget(FormatBudget(path, n))
		if err != nil || p2 != path || n2 != n {
			t.Fatalf("%q -> %q -> %q %d %v; want %q %d", s, FormatBudget(path, n), p2, n2, err, path, n)
		}
	})
}
