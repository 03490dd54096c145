package dash

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/server"
)

// site writes a 3-rung, 4-segment video of random bytes (sizes as
// scripts/dash-content's manifest gives them) and serves it with shunt's
// server on loopback through wrap (nil: as is). It returns the MPD's URL and
// a Verify that checks each segment against the file's SHA-256.
func site(t *testing.T, wrap func(http.Handler) http.Handler) (string, func(Segment, []byte) error) {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	sums := map[string][32]byte{}
	var mpd strings.Builder
	mpd.WriteString(`<MPD type="static" mediaPresentationDuration="PT4S"><Period><AdaptationSet contentType="video">`)
	for r, kbit := range []int{300, 1000, 3000} {
		fmt.Fprintf(&mpd, `<Representation id="%d" bandwidth="%d"><SegmentList timescale="1" duration="1"><Initialization sourceURL="init-%d.m4s" range="0-799"/>`, r, kbit*1000, r)
		for k := -1; k < 4; k++ {
			name, n := fmt.Sprintf("init-%d.m4s", r), 800
			if k >= 0 {
				name, n = fmt.Sprintf("chunk-%d-%d.m4s", r, k), kbit*1000/8+rng.IntN(999)
				fmt.Fprintf(&mpd, `<SegmentURL media="%s" mediaRange="0-%d"/>`, name, n-1)
			}
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
			sums[name] = sha256.Sum256(b)
		}
		mpd.WriteString(`</SegmentList></Representation>`)
	}
	mpd.WriteString(`</AdaptationSet></Period></MPD>`)
	if err := os.WriteFile(filepath.Join(dir, "video.mpd"), []byte(mpd.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	hd, err := content.NewHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hd.Close() })
	var h http.Handler = hd
	if wrap != nil {
		h = wrap(hd)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&server.Server{Handler: h}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	verify := func(s Segment, data []byte) error {
		if sha256.Sum256(data) != sums[filepath.Base(s.URL)] {
			return errors.New("SHA-256 differs from the served file")
		}
		return nil
	}
	return "http://" + ln.Addr().String() + "/video.mpd", verify
}

func manifest(t *testing.T, mpdURL string) *Manifest {
	t.Helper()
	res, err := http.Get(mpdURL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	m, err := ParseMPD(b.Bytes(), res.Request.URL)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// dyingConn fails after limit bytes read, like a link going down.
type dyingConn struct {
	net.Conn
	limit int64
	n     atomic.Int64
}

func (c *dyingConn) Read(p []byte) (int, error) {
	if c.n.Load() >= c.limit {
		c.Conn.Close()
		return 0, errors.New("test: link down")
	}
	k, err := c.Conn.Read(p)
	c.n.Add(int64(k))
	return k, err
}

func loop(name string, dieAfter int64) mph2.Path {
	return mph2.Path{Name: name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil || dieAfter == 0 {
			return c, err
		}
		return &dyingConn{Conn: c, limit: dieAfter}, nil
	}}
}

func fetchers(paths ...mph2.Path) map[string]Fetcher {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return paths[0].Dial(ctx, network, addr)
	}
	return map[string]Fetcher{
		"single":      HTTP{RT: &h2.Transport{AllowHTTP: true, DialContext: dial}},
		"mph2":        MPH2{Client: &mph2.Client{Paths: paths}},
		"mph2-fs":     MPH2{Client: &mph2.Client{Paths: paths}, FS: true},
		"mph2-fs-bwl": MPH2{Client: &mph2.Client{Paths: paths, Cache: estimate.NewCache(0)}, FS: true},
		"mhttp":       Chunked{D: &mph2.MHTTP{Paths: paths, Chunk: 64 << 10}},
		"msplayer":    MSPlayer{P: &mph2.MSPlayer{Paths: paths}},
	}
}

func playAll(mpdURL string, m *Manifest, f Fetcher, verify func(Segment, []byte) error) (*Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return (&Player{Manifest: m, ABR: NewExo(), Fetcher: f, Verify: verify}).Play(ctx)
}

// Every fetcher plays the whole video over two loopback paths, every
// segment the served file byte for byte.
func TestFetchersPlay(t *testing.T) {
	u, verify := site(t, nil)
	m := manifest(t, u)
	for name, f := range fetchers(loop("a", 0), loop("b", 0)) {
		res, err := playAll(u, m, f, verify)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Segments) != 4 || res.Startup <= 0 {
			t.Fatalf("%s: %+v", name, res)
		}
	}
}

// Every fetcher reports its response headers once per segment, however
// many requests it splits the segment into, and before it returns: the
// start of the player's throughput sample.
func TestFetchersReportHeaders(t *testing.T) {
	u, _ := site(t, nil)
	m := manifest(t, u)
	for name, f := range fetchers(loop("a", 0), loop("b", 0)) {
		for _, s := range m.Reps[len(m.Reps)-1].Segments {
			var n atomic.Int32
			if _, err := f.Fetch(context.Background(), s, func() { n.Add(1) }); err != nil {
				t.Fatalf("%s: %s: %v", name, s.URL, err)
			}
			if n.Load() != 1 {
				t.Fatalf("%s: %s: headers reported %d times, want once", name, s.URL, n.Load())
			}
		}
	}
}

// A server that ignores Range: one GET (single) and MP-H2 (which falls back
// to one path) play on; the chunked baselines stop with an error that says
// so. No fetcher hands the player a wrong segment.
func TestFetchersRangesRefused(t *testing.T) {
	u, verify := site(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Range")
			h.ServeHTTP(w, r)
		})
	})
	m := manifest(t, u)
	for name, f := range fetchers(loop("a", 0), loop("b", 0)) {
		res, err := playAll(u, m, f, verify)
		switch name {
		case "mhttp", "msplayer":
			if err == nil || !strings.Contains(err.Error(), "ignored Range") {
				t.Fatalf("%s: error %v, want the server's ignored Range named", name, err)
			}
		default:
			if err != nil || len(res.Segments) != 4 {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
}

// A missing segment ends the playback with an error naming it.
func TestFetchersMissingSegment(t *testing.T) {
	u, verify := site(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "chunk-0-2") || strings.Contains(r.URL.Path, "chunk-1-2") || strings.Contains(r.URL.Path, "chunk-2-2") {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	m := manifest(t, u)
	for name, f := range fetchers(loop("a", 0), loop("b", 0)) {
		res, err := playAll(u, m, f, verify)
		if err == nil || !strings.Contains(err.Error(), "segment 2 of representation") || !strings.Contains(err.Error(), "404") {
			t.Fatalf("%s: error %v, want segment 2's 404", name, err)
		}
		if len(res.Segments) != 2 {
			t.Fatalf("%s: %d segments before the error, want 2", name, len(res.Segments))
		}
	}
}

// A path that dies mid-segment: MP-H2 moves its ranges to the other path
// and plays on, every segment intact.
func TestMPH2PathDies(t *testing.T) {
	u, verify := site(t, nil)
	m := manifest(t, u)
	for _, fs := range []bool{false, true} {
		c := &mph2.Client{Paths: []mph2.Path{loop("ok", 0), loop("dies", 200<<10)}}
		res, err := playAll(u, m, MPH2{Client: c, FS: fs}, verify)
		c.Close()
		if err != nil || len(res.Segments) != 4 {
			t.Fatalf("fs=%v: %v", fs, err)
		}
	}
}

// MPH2.Done is shown every download, an init segment's too, with what each
// path delivered of it.
func TestMPH2Done(t *testing.T) {
	u, verify := site(t, nil)
	m := manifest(t, u)
	c := &mph2.Client{Paths: []mph2.Path{loop("a", 0), loop("b", 0)}}
	defer c.Close()
	var seen int
	f := MPH2{Client: c, FS: true, Done: func(s Segment, res *mph2.Result) {
		seen++
		var n int64
		for _, p := range res.Paths {
			n += p.Delivered
		}
		if n != s.Size || len(res.Paths) != 2 {
			t.Errorf("%s: paths delivered %d bytes over %d paths, want %d over 2", s.URL, n, len(res.Paths), s.Size)
		}
	}}
	res, err := playAll(u, m, f, verify)
	if err != nil {
		t.Fatal(err)
	}
	reps := map[int]bool{}
	for _, s := range res.Segments {
		reps[s.Rep] = true
	}
	if want := len(res.Segments) + len(reps); seen != want {
		t.Fatalf("Done shown %d downloads, want %d (%d segments, %d init segments)", seen, want, len(res.Segments), len(reps))
	}
}
