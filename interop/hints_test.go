package interop

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/peers"
)

// TestHintedAgainstPeers: mph2.Hinted (issue 19) against unmodified nginx
// and h2o over TLS and h2c: a document placed on the path its class asks
// for, a redundant copy raced on two paths, and a tail re-requested by
// Range on the other path when one path crawls, a split, and a join (a
// crawling response's rest taken by a path that comes up 200 ms later,
// exp's stream stopped at the cut by flow control); every body is compared
// with the file.
func TestHintedAgainstPeers(t *testing.T) {
	root := t.TempDir()
	doc := writeRandom(t, root, "index.html", 30_000)
	img := writeRandom(t, root, "big.jpg", 300_000)
	eachPeer(t, root, func(t *testing.T, p *peers.Peer, _ string, useTLS bool) {
		var conf *tls.Config
		if useTLS {
			pem, err := os.ReadFile(p.CertFile)
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			conf = &tls.Config{RootCAs: pool}
		}
		for _, tc := range []struct {
			name, rules string
			slowExp     bool
			lateCheap   bool // cheap's dial takes 200 ms
			path        string
			want        []byte
			check       func(*mph2.Got, mph2.HintedStats) bool
		}{
			{"placed", "class=document -> path=exp\n* -> path=cheap", false, false, "/index.html", doc,
				func(g *mph2.Got, s mph2.HintedStats) bool { return g.Path == 1 && s.Paths[1].Requests == 1 }},
			{"redundant", "* -> path=exp redundant", true, false, "/index.html", doc,
				func(g *mph2.Got, s mph2.HintedStats) bool { return s.Redundant == 1 && s.SecondWon == 1 && g.Path == 0 }},
			{"tail", "* -> path=exp tail=1MB", true, false, "/big.jpg", img,
				func(g *mph2.Got, s mph2.HintedStats) bool { return s.Tails == 1 && g.TailPath == 0 }},
			// exp may carry 40 % of the 300000 bytes: the head by
			// Range (0-119999) there, the rest (120000-) on cheap.
			{"split", "cap exp 40%\n* -> path=exp split", false, false, "/big.jpg", img,
				func(g *mph2.Got, s mph2.HintedStats) bool {
					return s.Splits == 1 && s.Paths[1].Used == 120_000 && s.Paths[0].Used == 180_000 && s.Wasted == 0
				}},
			{"join", "class=document -> path=exp join\n* -> path=cheap", true, true, "/big.jpg", img,
				func(g *mph2.Got, s mph2.HintedStats) bool {
					exp, cheap := s.Paths[1], s.Paths[0]
					return s.Joins == 1 && g.Decision.Split == exp.Used && exp.Received == exp.Used && cheap.Used == 300_000-exp.Used && s.Wasted == 0
				}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				pol, err := hints.Parse(tc.name, tc.rules)
				if err != nil {
					t.Fatal(err)
				}
				rate := 0.0
				if tc.slowExp {
					rate = 50e3
				}
				cheap := throttledDial(0)
				if tc.lateCheap {
					cheap = func(ctx context.Context, network, addr string) (net.Conn, error) {
						time.Sleep(200 * time.Millisecond)
						return throttledDial(0)(ctx, network, addr)
					}
				}
				h := &mph2.Hinted{Client: &mph2.Client{TLSConfig: conf, Paths: []mph2.Path{
					{Name: "cheap", Dial: cheap}, {Name: "exp", Dial: throttledDial(rate)}}}, Policy: pol}
				if err := h.Start(p.URL("/")); err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				hint := hints.FromHeaders(http.Header{"Sec-Fetch-Dest": {"document"}})
				// The size known, as a page's: the cap is a share of it.
				hint.Size, h.Expect = int64(len(tc.want)), int64(len(tc.want))
				g, err := h.Get(ctx, p.URL(tc.path), hint, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(g.Body, tc.want) {
					t.Fatalf("%d bytes, not the file's %d", len(g.Body), len(tc.want))
				}
				if s := h.Stats(); !tc.check(g, s) {
					t.Errorf("path %d, tail path %d, stats %+v", g.Path, g.TailPath, s)
				}
			})
		}
	})
}

// throttledDial dials loopback; rate > 0 delivers at most rate bytes/s to
// the reader (counted from the first read, so an idle connection saves no
// credit for a burst).
func throttledDial(rate float64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || rate == 0 {
			return c, err
		}
		return &throttled{Conn: c, rate: rate}, nil
	}
}

type throttled struct {
	net.Conn
	rate  float64
	start atomic.Int64 // unix ns of the first read
	n     atomic.Int64
}

func (c *throttled) Read(p []byte) (int, error) {
	c.start.CompareAndSwap(0, time.Now().UnixNano())
	if len(p) > 4<<10 {
		p = p[:4<<10]
	}
	k, err := c.Conn.Read(p)
	n := c.n.Add(int64(k))
	due := time.Unix(0, c.start.Load()).Add(time.Duration(float64(n) / c.rate * 1e9))
	time.Sleep(time.Until(due))
	return k, err
}

// TestHintedPeerRestarted: nginx or h2o is killed (SIGKILL) while a
// Hinted's object is in flight on a path of 1 MB/s and started again on
// the same port 0.5 s later: the paths are redialed and the object is asked
// for again from the bytes received, by Range with If-Range naming the
// file's validator, which the restarted server still has (same file), so
// it answers 206 and the reader gets the file byte for byte.
func TestHintedPeerRestarted(t *testing.T) {
	root := t.TempDir()
	const size = 4 << 20
	want := writeRandom(t, root, "big.bin", size)
	eachPeer(t, root, func(t *testing.T, p *peers.Peer, server string, useTLS bool) {
		pol, err := hints.Parse("test.rules", "* -> path=cheap")
		if err != nil {
			t.Fatal(err)
		}
		// The restarted peer has a new self-signed certificate.
		h := &mph2.Hinted{Client: &mph2.Client{TLSConfig: &tls.Config{InsecureSkipVerify: true}, StallTimeout: 20 * time.Second, Paths: []mph2.Path{
			{Name: "cheap", Dial: throttledDial(1e6)}, {Name: "exp", Dial: throttledDial(0)}}}, Policy: pol, Cost: []float64{0, 1}}
		if err := h.Start(p.URL("/")); err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		ctx := timeout(t, time.Minute)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL("/big.bin"), nil)
		req.Header.Set("Sec-Fetch-Dest", "image")
		res, err := h.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		head := make([]byte, 1<<20)
		if _, err := io.ReadFull(res.Body, head); err != nil {
			t.Fatal(err)
		}
		p.Stop()
		time.Sleep(500 * time.Millisecond)
		p2, err := peers.Start(timeout(t, 20*time.Second), server, peers.Options{Root: root, TLS: useTLS, Addr: p.Addr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p2.Stop() })
		rest, err := io.ReadAll(res.Body)
		if err != nil || !bytes.Equal(append(head, rest...), want) {
			t.Fatalf("%d bytes after the restart (%v), equal to the file: %v", len(rest), err, bytes.Equal(append(head, rest...), want))
		}
		// Asked again at least once: a second time when the first went on
		// the other path's connection before its reset had been read.
		if s := h.Stats(); s.Reissued < 1 {
			t.Errorf("stats %+v: want the object asked again", s)
		}
		t.Logf("paths %+v", h.Stats().Paths)
	})
}
