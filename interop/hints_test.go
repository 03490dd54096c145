package interop

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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
// Range on the other path when one path crawls; every body is compared
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
			path        string
			want        []byte
			check       func(*mph2.Got, mph2.HintedStats) bool
		}{
			{"placed", "class=document -> path=exp\n* -> path=cheap", false, "/index.html", doc,
				func(g *mph2.Got, s mph2.HintedStats) bool { return g.Path == 1 && s.Paths[1].Requests == 1 }},
			{"redundant", "* -> path=exp redundant", true, "/index.html", doc,
				func(g *mph2.Got, s mph2.HintedStats) bool { return s.Redundant == 1 && s.SecondWon == 1 && g.Path == 0 }},
			{"tail", "* -> path=exp tail=1MB", true, "/big.jpg", img,
				func(g *mph2.Got, s mph2.HintedStats) bool { return s.Tails == 1 && g.TailPath == 0 }},
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
				h := &mph2.Hinted{Client: &mph2.Client{TLSConfig: conf, Paths: []mph2.Path{
					{Name: "cheap", Dial: throttledDial(0)}, {Name: "exp", Dial: throttledDial(rate)}}}, Policy: pol}
				if err := h.Start(p.URL("/")); err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				g, err := h.Get(ctx, p.URL(tc.path), hints.FromHeaders(http.Header{"Sec-Fetch-Dest": {"document"}}), nil)
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
