package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/multipath"
	"github.com/shunt-net/shunt/server"
)

// serve runs srv on loopback until the test ends and returns its address.
func serve(t *testing.T, srv *server.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, srv, ln)
}

// serveOn runs srv on ln until the test ends and returns its address.
func serveOn(t *testing.T, srv *server.Server, ln net.Listener) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// origin serves shunt's content (h2c, HTTP/1.1, or TLS with ALPN).
func origin(t *testing.T, tls bool) string {
	t.Helper()
	return serve(t, &server.Server{Handler: contentHandler(t), TLS: tls})
}

func contentHandler(t *testing.T) *content.Handler {
	t.Helper()
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hd.Close() })
	return hd
}

// mpProxy serves a Proxy over two loopback paths of an MP-H2 client.
func mpProxy(t *testing.T) string {
	t.Helper()
	c := &mph2.Client{Paths: []mph2.Path{{Name: "a"}, {Name: "b"}}}
	t.Cleanup(func() { c.Close() })
	p := &Proxy{Transport: &mph2.Transport{Client: c}, Dial: c.Paths[0].DialContext}
	addr := serve(t, &server.Server{Handler: p})
	p.Self = []string{addr}
	return addr
}

// h1Client talks HTTP/1.1 to the proxy: absolute-form, CONNECT for https.
func h1Client(proxyAddr string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr}),
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2: false,
	}}
}

// h2cClient talks h2c with prior knowledge to the proxy; :authority names
// the origin.
func h2cClient(proxyAddr string) *http.Client {
	return &http.Client{Transport: &h2.Transport{AllowHTTP: true, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, proxyAddr)
	}}}
}

// fetch GETs url and returns the status, body length and SHA-256, and the
// body's read error.
func fetch(t *testing.T, c *http.Client, url string) (int, int64, [32]byte, error) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	var sum [32]byte
	h.Sum(sum[:0])
	return res.StatusCode, n, sum, err
}

func TestProxy(t *testing.T) {
	plain, tlsOrigin := origin(t, false), origin(t, true)
	px := mpProxy(t)
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"h1-split", h1Client(px), fmt.Sprintf("http://%s/gen/%d", plain, 3<<20+7)},
		{"h1-small", h1Client(px), fmt.Sprintf("http://%s/gen/%d", plain, 1000)},
		{"h1-empty", h1Client(px), fmt.Sprintf("http://%s/gen/%d", plain, 0)},
		{"h2c-split", h2cClient(px), fmt.Sprintf("http://%s/gen/%d", plain, 3<<20+7)},
		{"h2c-small", h2cClient(px), fmt.Sprintf("http://%s/gen/%d", plain, 1000)},
		{"connect-tls", h1Client(px), fmt.Sprintf("https://%s/gen/%d", tlsOrigin, 2<<20+3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var size int64
			fmt.Sscanf(tc.url[strings.LastIndex(tc.url, "/")+1:], "%d", &size)
			status, n, sum, err := fetch(t, tc.client, tc.url)
			if err != nil || status != 200 || n != size || sum != content.Digest(size) {
				t.Fatalf("status %d, %d bytes (%v), SHA-256 ok %v; want 200 and /gen/%d", status, n, err, sum == content.Digest(size), size)
			}
		})
	}
	t.Run("h1-not-found", func(t *testing.T) {
		if status, _, _, err := fetch(t, h1Client(px), "http://"+plain+"/nothing"); status != 404 || err != nil {
			t.Fatalf("status %d (%v), want the origin's 404", status, err)
		}
	})
}

// An origin that cannot be reached is a 502 that says why.
func TestProxyOriginDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	px := mpProxy(t)
	for _, tc := range []struct {
		name string
		req  string
		want string
	}{
		{"get", "GET http://" + dead + "/gen/1 HTTP/1.1\r\nHost: " + dead + "\r\n\r\n", "HTTP/1.1 502"},
		{"connect", "CONNECT " + dead + " HTTP/1.1\r\nHost: " + dead + "\r\n\r\n", "HTTP/1.1 502"},
		{"origin-form", "GET /gen/1 HTTP/1.1\r\nHost: " + px + "\r\n\r\n", "HTTP/1.1 400"},
		{"loop", "GET http://" + px + "/gen/1 HTTP/1.1\r\nHost: " + px + "\r\n\r\n", "HTTP/1.1 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", px)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tc.req)
			res, err := http.ReadResponse(bufioReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if got := fmt.Sprintf("HTTP/1.1 %d", res.StatusCode); got != tc.want || !strings.HasPrefix(string(body), "shunt proxy: ") {
				t.Fatalf("got %s %q, want %s with a reason", got, body, tc.want)
			}
			if tc.name != "origin-form" && tc.name != "loop" && !strings.Contains(string(body), dead) {
				t.Fatalf("reason %q does not name the origin %s", body, dead)
			}
		})
	}
}

// brokenTransport answers every request with a body that fails after half
// of size bytes; announced says whether the length is in the response.
type brokenTransport struct {
	size      int64
	announced bool
}

func (b brokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body := io.MultiReader(io.LimitReader(zeros{}, b.size/2), errReader{errors.New("test: every path failed")})
	length := int64(-1)
	if b.announced {
		length = b.size
	}
	return &http.Response{StatusCode: 200, ProtoMajor: 2, Header: http.Header{}, ContentLength: length,
		Body: io.NopCloser(body), Request: req}, nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// A body that fails mid-way reaches the application as a broken transfer,
// never as a complete one.
func TestProxyAbortsBrokenBody(t *testing.T) {
	const size = 1 << 20
	for _, announced := range []bool{true, false} {
		p := &Proxy{Transport: brokenTransport{size, announced}, ErrorLog: discardLog()}
		px := serve(t, &server.Server{Handler: p})
		for name, c := range map[string]*http.Client{"h1": h1Client(px), "h2c": h2cClient(px)} {
			t.Run(fmt.Sprintf("%s-length-%v", name, announced), func(t *testing.T) {
				status, n, _, err := fetch(t, c, "http://origin.invalid/x")
				if status != 200 || err == nil || n >= size {
					t.Fatalf("status %d, %d of %d bytes, read error %v; want the transfer broken", status, n, size, err)
				}
			})
		}
	}
}

// dyingConn fails its reads once it has read limit bytes, like a link
// going down mid-transfer.
type dyingConn struct {
	net.Conn
	left int64
	died *atomic.Int32
}

func (c *dyingConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.died.Add(1)
		c.Conn.Close()
		return 0, errors.New("test: link down")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}

// dyingDial dials loopback connections that die after 400 KB, counting
// the deaths in died.
func dyingDial(died *atomic.Int32) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &dyingConn{Conn: c, left: 400 << 10, died: died}, nil
	}
}

// pacedConn reads at most rate bytes a second.
type pacedConn struct {
	net.Conn
	rate float64
}

func (c *pacedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	time.Sleep(time.Duration(float64(n) / c.rate * float64(time.Second)))
	return n, err
}

// A path that dies mid-response costs it nothing: the other path carries
// the rest, and the application gets the object byte for byte. The other
// path is paced (6 MB take it 0.4 s) so that the dying one, unpaced, is
// sure to reach its 400 KB: unpaced, the healthy path sometimes carried
// all but a few KB (1 run in 40).
func TestProxyPathDiesMidBody(t *testing.T) {
	plain := origin(t, false)
	var died atomic.Int32
	dying := dyingDial(&died)
	paced := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &pacedConn{Conn: c, rate: 16 << 20}, nil
	}
	for name, paths := range map[string][]mph2.Path{
		"second": {{Name: "a", Dial: paced}, {Name: "b", Dial: dying}},
		"first":  {{Name: "a", Dial: dying}, {Name: "b", Dial: paced}},
	} {
		t.Run(name, func(t *testing.T) {
			died.Store(0)
			c := &mph2.Client{Paths: paths}
			defer c.Close()
			p := &Proxy{Transport: &mph2.Transport{Client: c}, ErrorLog: discardLog()}
			px := serve(t, &server.Server{Handler: p})
			const size = 6 << 20
			status, n, sum, err := fetch(t, h1Client(px), fmt.Sprintf("http://%s/gen/%d", plain, size))
			if err != nil || status != 200 || n != size || sum != content.Digest(size) {
				t.Fatalf("status %d, %d bytes (%v), SHA-256 ok %v; want 200 and /gen/%d", status, n, err, sum == content.Digest(size), size)
			}
			if died.Load() == 0 {
				t.Fatal("the dying path never died: the test proves nothing")
			}
		})
	}
}

// Config.Mode reaches the paths: interactive keeps a large response on one
// path but for its probe of the other and the probe's extension while a
// move is confirmed (each at most multipath.ProbeMax bytes), aggregate
// splits it.
func TestProxyModes(t *testing.T) {
	plain := origin(t, false)
	for _, tc := range []struct {
		mode      mph2.Mode
		wantPaths int
	}{{mph2.ModeAggregate, 2}, {mph2.ModeInteractive, 1}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			delivered := map[int]int64{}
			ctx, cancel := context.WithCancel(context.Background())
			r, err := Start(ctx, Config{Listener: ln, Paths: []mph2.Path{{Name: "a"}, {Name: "b"}}, Mode: tc.mode, ErrorLog: discardLog(),
				Progress: func(p int, n int64) { mu.Lock(); delivered[p] = n; mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); r.Wait() }()
			const size = 4 << 20
			status, n, sum, err := fetch(t, h1Client(r.Addr), fmt.Sprintf("http://%s/gen/%d", plain, size))
			if err != nil || status != 200 || n != size || sum != content.Digest(size) {
				t.Fatalf("status %d, %d bytes (%v), SHA-256 ok %v", status, n, err, sum == content.Digest(size))
			}
			mu.Lock()
			defer mu.Unlock()
			used := 0
			for _, b := range delivered {
				if b > 0 && (tc.mode != mph2.ModeInteractive || b > 2*multipath.ProbeMax) {
					used++
				}
			}
			if used != tc.wantPaths {
				t.Fatalf("bytes per path %v: %d paths used (beyond a probe), want %d", delivered, used, tc.wantPaths)
			}
		})
	}
}
