package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/site"
)

// inflight counts the requests a handler is serving at once.
type inflight struct {
	h        http.Handler
	hold     time.Duration // keep each request open a while so they overlap
	mu       sync.Mutex
	now, max int
}

func (c *inflight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.now++
	c.max = max(c.max, c.now)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.now--
		c.mu.Unlock()
	}()
	time.Sleep(c.hold)
	c.h.ServeHTTP(w, r)
}

// peak is the most requests served at once so far; a handler may still be
// returning after its response reached the client (HTTP/3), so it locks.
func (c *inflight) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func serve(t *testing.T, h http.Handler, useTLS, h3 bool) (*site.Running, *tls.Config) {
	t.Helper()
	srv, err := site.Serve(site.ServeConfig{Handler: h, Addr: "127.0.0.1:0", TLS: useTLS, H3: h3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	conf := &tls.Config{}
	if useTLS {
		roots := x509.NewCertPool()
		roots.AddCert(srv.Cert.Certificates[0].Leaf)
		conf.RootCAs = roots
	}
	return srv, conf
}

// TestFetchersLoadPage loads a Table IV page over each transport from a
// local server: Run checks every object's length, the fetcher its bytes and
// digest; the server sees no more requests at once than the limit.
func TestFetchersLoadPage(t *testing.T) {
	p := testpages.Load(t, "www.dmm.co.jp_.json")
	h, err := site.NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cfg        Config
		tls        bool
		wantProto  string
		limit      int
		wantConnsN int // connections at most
	}{
		{Config{Proto: H1, Conns: 1}, false, "HTTP/1.1", 1, 1},
		{Config{Proto: H1, Conns: 6}, true, "HTTP/1.1 over TLS 1.3 (ALPN http/1.1)", 6, 6},
		{Config{Proto: H2, Streams: 3}, true, "HTTP/2.0", 3, 1},
		{Config{Proto: H2, Streams: 100}, false, "HTTP/2.0", 100, 1},
		{Config{Proto: H3, Streams: 3}, true, "HTTP/3.0", 3, 1},
		{Config{Proto: H3, Streams: 100}, true, "HTTP/3.0", 100, 1},
	}
	for _, c := range cases {
		t.Run(c.cfg.Label(), func(t *testing.T) {
			count := &inflight{h: h, hold: 2 * time.Millisecond}
			srv, conf := serve(t, count, c.tls, c.cfg.Proto == H3)
			cfg := c.cfg
			cfg.Addr, cfg.TLS, cfg.TLSConfig, cfg.Page = srv.Addr, c.tls, conf, p.Name
			f, r := replayOnce(t, p, cfg)
			if got := f.Protocol(); !strings.HasPrefix(got, c.wantProto) {
				t.Errorf("responses came over %q, want %q", got, c.wantProto)
			}
			if n := f.Conns(); n < 1 || n > c.wantConnsN {
				t.Errorf("%d connections opened, want 1 to %d", n, c.wantConnsN)
			}
			if m := count.peak(); m > c.limit {
				t.Errorf("server saw %d requests at once, limit %d", m, c.limit)
			}
			for _, o := range r.Objects {
				if o.Conn < 0 || o.Conn >= f.Conns() {
					t.Errorf("object %s on connection %d of %d", o.ID, o.Conn, f.Conns())
				}
			}
		})
	}
}

// TestFetcherRejectsWrongObject serves another object's bytes (with a
// matching digest) for one path: the load must fail naming it.
func TestFetcherRejectsWrongObject(t *testing.T) {
	p := testpages.Load(t, "www.google.com.hk_.json")
	h, err := site.NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	victim := site.URLPath(p.Name, p.Objects[len(p.Objects)-1].Path)
	swap := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.RequestURI == victim {
			o := p.Objects[len(p.Objects)-1]
			other := site.URLPath("elsewhere", o.Path)
			d, _ := site.Digest(other, o.Size)
			w.Header().Set(site.DigestHeader, site.FormatDigest(d))
			http.ServeContent(w, r, "", time.Time{}, site.Body(other, o.Size))
			return
		}
		h.ServeHTTP(w, r)
	})
	for _, proto := range []string{H1, H2, H3} {
		t.Run(proto, func(t *testing.T) {
			srv, conf := serve(t, swap, true, proto == H3)
			f, err := New(Config{Proto: proto, Addr: srv.Addr, TLS: true, TLSConfig: conf, Page: p.Name})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err = replay.Run(ctx, p, f, replay.Options{})
			if !errors.Is(err, content.ErrMismatch) || !strings.Contains(err.Error(), victim) {
				t.Errorf("load with a swapped object: %v, want a mismatch naming %s", err, victim)
			}
		})
	}
}

func TestConfigRejects(t *testing.T) {
	for _, c := range []Config{
		{Proto: "h4", Addr: "x:1"},
		{Proto: H1, Conns: -1, Addr: "x:1"},
		{Proto: H2, Streams: 5000, Addr: "x:1"},
		{Proto: H3},
		{Proto: H1, Schedule: Interleaved, Addr: "x:1"},
		{Proto: H2, Schedule: "round-robin", Addr: "x:1"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

// TestScheduleAsksServer checks that every request carries the Priority
// field of its schedule and its object's type (the servers schedule by it),
// and that HTTP/1.1 requests carry none.
func TestScheduleAsksServer(t *testing.T) {
	p := testpages.Load(t, "www.google.com.hk_.json")
	h, err := site.NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	all := func(v string) func(page.Class) string { return func(page.Class) string { return v } }
	// Chromium 156's urgencies, as seen on its HTTP/2 requests.
	chromium := func(c page.Class) string {
		switch c {
		case page.ClassHTML:
			return "u=0, i"
		case page.ClassCSS:
			return "u=0"
		case page.ClassJS:
			return "u=1"
		}
		return "u=2, i"
	}
	cases := []struct {
		cfg       Config
		want      func(page.Class) string
		wantLabel string
	}{
		{Config{Proto: H1}, all(""), "h1-6"},
		{Config{Proto: H2}, all("u=3, i"), "h2-100"},
		{Config{Proto: H2, Schedule: Sequential}, all("u=3"), "h2-100-seq"},
		{Config{Proto: H2, Schedule: Browser}, chromium, "h2-100-prio"},
		{Config{Proto: H3, Schedule: Interleaved}, all("u=3, i"), "h3-100"},
		{Config{Proto: H3, Schedule: Sequential}, all("u=3"), "h3-100-seq"},
		{Config{Proto: H3, Schedule: Browser}, chromium, "h3-100-prio"},
	}
	for _, c := range cases {
		t.Run(c.wantLabel, func(t *testing.T) {
			want := map[string]int{}
			for _, o := range p.Objects {
				want[o.Path+" "+c.want(o.Class)]++
			}
			var mu sync.Mutex
			seen := map[string]int{}
			record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen[strings.TrimPrefix(r.URL.RequestURI(), site.Prefix+p.Name)+" "+r.Header.Get("Priority")]++
				mu.Unlock()
				h.ServeHTTP(w, r)
			})
			srv, conf := serve(t, record, true, c.cfg.Proto == H3)
			cfg := c.cfg
			cfg.Addr, cfg.TLS, cfg.TLSConfig, cfg.Page = srv.Addr, true, conf, p.Name
			f, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Config().Label(); got != c.wantLabel {
				t.Errorf("label %q, want %q", got, c.wantLabel)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err = replay.Run(ctx, p, f, replay.Options{})
			if cerr := f.Close(); cerr != nil {
				t.Errorf("close: %v", cerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !maps.Equal(seen, want) {
				t.Errorf("requests (path and Priority field: count) %v, want %v", seen, want)
			}
		})
	}
}

// replayOnce replays p once through a fetcher built from cfg, closes the
// fetcher (its counters stay readable) and checks the page's byte count.
func replayOnce(t *testing.T, p *page.Page, cfg Config) (*Fetcher, *replay.Result) {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err := replay.Run(ctx, p, f, replay.Options{})
	if cerr := f.Close(); cerr != nil {
		t.Errorf("close: %v", cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes != p.TotalSize() {
		t.Errorf("received %d bytes, page has %d", r.Bytes, p.TotalSize())
	}
	return f, r
}

// A page named after a URL with a path and a query (as recorded graphs of
// pages like "example.com/?src=feed" are) is served and loaded: its name is
// one escaped path segment.
func TestPageNameWithQuery(t *testing.T) {
	p := testpages.Load(t, "www.dmm.co.jp_.json")
	p.Name = "www.dmm.co.jp/?src=feed&x=1#top"
	h, err := site.NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	srv, conf := serve(t, h, true, false)
	replayOnce(t, p, Config{Proto: H2, Addr: srv.Addr, TLS: true, TLSConfig: conf, Page: p.Name})
}
