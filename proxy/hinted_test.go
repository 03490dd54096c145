package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	h2t "github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/server"
)

// With a policy, each GET goes on the path its headers' class asks for:
// over HTTP/2 a script without Priority is an async one (RFC 9218's
// default u=3), with u=1 a blocking one; over HTTP/1.1 (here to the proxy
// over TLS) Sec-Fetch-Dest alone decides. Every body is checked.
func TestProxyPolicy(t *testing.T) {
	plain := origin(t, false)
	pol, err := hints.Parse("test.rules", "urgent -> path=exp\n* -> path=cheap")
	if err != nil {
		t.Fatal(err)
	}
	var got placements
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{{Name: "cheap"}, {Name: "exp"}}, Policy: pol, Cost: []float64{0, 1}, TLS: true,
		ErrorLog: discardLog(), Placed: got.placed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); r.Wait() })
	h1 := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "https", Host: r.Addr}),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	// HTTP/2 over TLS to the proxy, :authority naming the origin, as
	// Chromium speaks to an HTTPS proxy.
	h2 := &http.Client{Transport: &h2t.Transport{AllowHTTP: true, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}}
		return d.DialContext(ctx, network, r.Addr)
	}}}
	for i, tc := range []struct {
		client *http.Client
		hdr    []string
		class  hints.Class
		path   int
	}{
		{h1, []string{"Sec-Fetch-Dest", "style"}, hints.Style, 1},
		{h1, []string{"Sec-Fetch-Dest", "image"}, hints.Image, 0},
		{h1, []string{"Sec-Fetch-Dest", "script"}, hints.Script, 1},
		{h2, []string{"Sec-Fetch-Dest", "script"}, hints.AsyncScript, 0},
		{h2, []string{"Sec-Fetch-Dest", "script", "Priority", "u=1"}, hints.Script, 1},
		{h2, []string{"Accept", "text/css,*/*;q=0.1"}, hints.Style, 1},
	} {
		u := fmt.Sprintf("http://%s/gen/%d", plain, 100000+i)
		getGen(t, tc.client, u, tc.hdr...)
		if p, ok := got.at(u); !ok || p.class != tc.class || p.path != tc.path {
			t.Errorf("%v: placed %v: class %s on path %d, want %s on %d", tc.hdr, ok, p.class, p.path, tc.class, tc.path)
		}
	}
	// MP-H2's flow-control ends would hold every stream to a 16 KB window
	// (on hints-latency's 80 ms path, 1.6 Mbit/s a stream).
	if c := r.hinted.origins["http://"+plain].Client; c.EndAdjust != mph2.EndReset {
		t.Errorf("the hinted client ends streams by %v, want EndReset", c.EndAdjust)
	}
}

// placements records where a proxy's Placed hook put each URL.
type placements struct {
	mu sync.Mutex
	m  map[string]placement
}

type placement struct {
	class hints.Class
	path  int
}

func (p *placements) placed(u string, h hints.Hint, path int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]placement{}
	}
	p.m[u] = placement{h.Class, path}
}

func (p *placements) at(u string) (placement, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pl, ok := p.m[u]
	return pl, ok
}

// getGen GETs u, a /gen/SIZE object, with the header fields hdr (name,
// value, ...) and fails the test unless the body is the object's, byte for
// byte; the body is read and closed.
func getGen(t *testing.T, c *http.Client, u string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	var size int64
	if _, err := fmt.Sscanf(req.URL.Path, "/gen/%d", &size); err != nil {
		t.Fatalf("%s: not a /gen/SIZE object", u)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %v: %v", u, hdr, err)
	}
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	res.Body.Close()
	if ok := [32]byte(h.Sum(nil)) == content.Digest(size); err != nil || res.StatusCode != 200 || n != size || !ok {
		t.Fatalf("%s %v: status %d, %d bytes (%v), SHA-256 ok %v", u, hdr, res.StatusCode, n, err, ok)
	}
	return res
}

// With a policy the response streams through the proxy: the application
// gets the origin's header, then its first bytes, while the origin still
// holds the rest back. The hinted client used to hold each response whole,
// so a browser could not parse an HTML document as it arrived; and the
// proxy held the header until the first body bytes, so a browser's first
// byte waited for them.
func TestProxyPolicyStreams(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first int // bytes the origin sends before it holds back
	}{{"header", 0}, {"first bytes", 20000}} {
		t.Run(tc.name, func(t *testing.T) { proxyPolicyStreams(t, tc.first) })
	}
}

func proxyPolicyStreams(t *testing.T, first int) {
	const size = 200000
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i * 13)
	}
	release := make(chan struct{})
	plain := serve(t, &server.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.Write(body[:first])
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write(body[first:])
	})})
	pol, err := hints.Parse("test.rules", "* -> path=exp")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{{Name: "cheap"}, {Name: "exp"}}, Policy: pol, ErrorLog: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); r.Wait() })
	// The origin holds the rest back for at most 5 s: the header and the
	// first bytes must come through before that.
	var released atomic.Bool
	timer := time.AfterFunc(5*time.Second, func() { released.Store(true); close(release) })
	defer timer.Stop()
	c := h2cClient(r.Addr)
	c.Timeout = 20 * time.Second
	res, err := c.Get("http://" + plain + "/doc")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got := make([]byte, size)
	if _, err := io.ReadFull(res.Body, got[:first]); err != nil {
		t.Fatal(err)
	}
	if released.Load() || !timer.Stop() {
		t.Fatalf("the header and the first %d bytes came through only after the origin sent the rest", first)
	}
	close(release)
	if _, err := io.ReadFull(res.Body, got[first:]); err != nil || res.ContentLength != size || !bytes.Equal(got, body) {
		t.Fatalf("body: %v, length %d, equal %v", err, res.ContentLength, bytes.Equal(got, body))
	}
}

// With a policy, a response in flight when its path's connection dies
// reaches the application byte for byte: the hinted client asks for the
// rest on the other path (Range + If-Range) and the body streams on. The
// cheap path's every connection dies after 400 KB.
func TestProxyPolicyPathDies(t *testing.T) {
	plain := origin(t, false)
	var died atomic.Int32
	pol, err := hints.Parse("test.rules", "* -> path=cheap")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{{Name: "cheap", Dial: dyingDial(&died)}, {Name: "exp"}}, Policy: pol, Cost: []float64{0, 1},
		IdleTimeout: 10 * time.Second, ErrorLog: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); r.Wait() })
	const size = 6 << 20
	for name, c := range map[string]*http.Client{"h1": h1Client(r.Addr), "h2c": h2cClient(r.Addr)} {
		status, n, sum, err := fetch(t, c, fmt.Sprintf("http://%s/gen/%d", plain, size))
		if err != nil || status != 200 || n != size || sum != content.Digest(size) {
			t.Fatalf("%s: status %d, %d bytes (%v), SHA-256 ok %v; want 200 and /gen/%d", name, status, n, err, sum == content.Digest(size), size)
		}
	}
	if died.Load() == 0 {
		t.Fatal("the dying path never died: the test proves nothing")
	}
	if s := r.hinted.origins["http://"+plain].Stats(); s.Reissued < 2 || s.Paths[1].Used == 0 {
		t.Errorf("stats %+v: want both responses asked again, on exp", s)
	}
}

// An origin named with and without its default port is one Hinted (a
// CONNECT names HOST:443, a browser's :authority may leave the port out);
// another scheme is another origin.
func TestHintedOriginDefaultPort(t *testing.T) {
	pol, err := hints.Parse("test.rules", "* -> path=a")
	if err != nil {
		t.Fatal(err)
	}
	refuse := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, fmt.Errorf("no dials here")
	}
	tr := &hintedTransport{policy: pol, newClient: func() *mph2.Client { return &mph2.Client{Paths: []mph2.Path{{Name: "a", Dial: refuse}}} }}
	defer tr.closeAll()
	var got []*mph2.Hinted
	for _, o := range [][2]string{{"https", "origin.test"}, {"https", "origin.test:443"}, {"http", "origin.test:443"}} {
		h, err := tr.origin(o[0], o[1])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h)
	}
	if got[0] != got[1] || got[1] == got[2] {
		t.Errorf("https://origin.test, https://origin.test:443, http://origin.test:443: same Hinted %v, %v; want true, false", got[0] == got[1], got[1] == got[2])
	}
}
