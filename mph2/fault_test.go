package mph2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/internal/faults"
	"github.com/shunt-net/shunt/server"
)

// restartable is shunt's server at a fixed address that can be killed
// (every socket closed at once, as when its process dies) and started again.
type restartable struct {
	t      *testing.T
	addr   string
	h      http.Handler
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *restartable) start() {
	srv := &server.Server{Addr: s.addr, Handler: s.h}
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := srv.Listen(ctx)
	// A restart binds the port it had, which the old server's sockets may
	// hold for a moment longer on a loaded machine (seen once under -race).
	for deadline := time.Now().Add(5 * time.Second); errors.Is(err, syscall.EADDRINUSE) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		ln, err = srv.Listen(ctx)
	}
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	s.addr, s.cancel, s.done = ln.Addr().String(), cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		srv.Serve(ctx, ln)
	}()
}

func (s *restartable) kill() {
	s.cancel()
	<-s.done
}

// reader reads a downloaded memFile, to check it as a reader would.
func (m *memFile) reader() *bytes.Reader { return bytes.NewReader(m.b) }

// TestServerKilledMidDownload kills the server of an MP-H2 download over
// one path and over two (every path loses its connection at once) half
// way, and starts it again 1.5 s later while the client runs: the
// paths are redialed, and the download ends whole, verified by length and
// SHA-256. Before redialing, it failed ("all 2 paths down with 3,981,669
// of 16,777,216 bytes delivered"). A second download is whole too.
func TestServerKilledMidDownload(t *testing.T) {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	tally := faults.New(t)
	const size = 8 << 20
	for _, paths := range [][]Path{
		{loopPath("a", 4e6, 0), loopPath("b", 4e6, 0)},
		{loopPath("a", 8e6, 0)},
	} {
		t.Run(fmt.Sprintf("%d paths", len(paths)), func(t *testing.T) {
			srv := &restartable{t: t, addr: "127.0.0.1:0", h: hd}
			srv.start()
			defer func() { srv.kill() }()
			url := fmt.Sprintf("http://%s/gen/%d", srv.addr, size)
			c := &Client{Paths: paths, StallTimeout: 10 * time.Second}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f := newMemFile(size)
			got := downloadBehind(ctx, c, url, f, Options{Size: size})
			time.Sleep(500 * time.Millisecond) // about half the object
			tally.Interrupted()
			srv.kill()
			time.Sleep(1500 * time.Millisecond)
			srv.start()
			r := <-got
			if r.err != nil {
				f.checkWritten(t)
				tally.Count(faults.Failed)
				t.Fatalf("failed across the restart: %v", r.err)
			}
			if o, n, err := tally.Read(f.reader(), faults.Gen(size, 0)); o != faults.Verified || r.res.Size != size {
				t.Fatalf("%v after %d bytes (%d written): %v", o, n, r.res.Size, err)
			}
			counts := Counts(r.res)
			for _, p := range r.res.Paths {
				if p.Redials < 1 || p.Delivered == 0 && len(paths) == 1 {
					t.Errorf("path %s: %d redials, %d bytes delivered; want it redialed", p.Name, p.Redials, p.Delivered)
				}
				if n := counts["redials_"+p.Name]; n != float64(p.Redials) {
					t.Errorf("record count redials_%s = %v, want %d", p.Name, n, p.Redials)
				}
			}
			t.Logf("completed across the restart: paths %+v", r.res.Paths)
			f2 := newMemFile(size)
			if _, err := c.Download(ctx, url, f2, Options{Size: size}); err != nil {
				t.Fatalf("download after the restart: %v", err)
			}
			if o, n, err := tally.Read(f2.reader(), faults.Gen(size, 0)); o != faults.Verified {
				t.Fatalf("after the restart: %v after %d bytes: %v", o, n, err)
			}
		})
	}
}

type downloaded struct {
	res *Result
	err error
}

// downloadBehind runs c.Download on its own goroutine.
func downloadBehind(ctx context.Context, c *Client, url string, f *memFile, o Options) <-chan downloaded {
	got := make(chan downloaded, 1)
	go func() {
		res, err := c.Download(ctx, url, f, o)
		got <- downloaded{res, err}
	}()
	return got
}

// TestServerRestartedWithChangedFile: the object changed while the server
// was down. The redialed paths ask for their ranges with If-Range, the
// server answers with the whole new version, and the download fails
// naming it; the bytes written before are the old version's, each once.
func TestServerRestartedWithChangedFile(t *testing.T) {
	const size = 16 << 20
	dir := t.TempDir()
	obj := filepath.Join(dir, "obj")
	write := func(version int64, age time.Duration) {
		b := make([]byte, size)
		content.GenAt(b, version*7919)
		if err := os.WriteFile(obj, b, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(obj, time.Now(), time.Now().Add(-age))
	}
	write(0, 2*time.Hour)
	hd, err := content.NewHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	// The If-Range of every request the restarted server gets.
	var mu sync.Mutex
	restarted := false
	var ifRange []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if restarted {
			ifRange = append(ifRange, r.Header.Get("If-Range"))
		}
		mu.Unlock()
		hd.ServeHTTP(w, r)
	})
	tally := faults.New(t)
	srv := &restartable{t: t, addr: "127.0.0.1:0", h: h}
	srv.start()
	defer func() { srv.kill() }()
	c := &Client{Paths: []Path{loopPath("a", 4e6, 0), loopPath("b", 4e6, 0)}, StallTimeout: 10 * time.Second}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newMemFile(size)
	got := downloadBehind(ctx, c, "http://"+srv.addr+"/obj", f, Options{Size: size})
	time.Sleep(500 * time.Millisecond)
	tally.Interrupted()
	srv.kill()
	write(1, time.Hour)
	mu.Lock()
	restarted = true
	mu.Unlock()
	srv.start()
	r := <-got
	if r.err == nil {
		tally.Count(faults.Corrupt)
		t.Fatalf("no error for an object changed mid-download (%d bytes)", r.res.Size)
	}
	f.checkWritten(t)
	if !strings.Contains(r.err.Error(), "another version of the object") {
		t.Fatalf("error %q does not say the object changed", r.err)
	}
	tally.Count(faults.Failed)
	t.Logf("failed clearly: %v", r.err)
	mu.Lock()
	defer mu.Unlock()
	if len(ifRange) == 0 || slices.Contains(ifRange, "") {
		t.Errorf("requests after the restart carried If-Range %q, want the validator on every one", ifRange)
	}
}

// TestOneServerRestarted: a multi-homed download from two servers, one
// killed a quarter in and back 1 s later. Its path's ranges go to the
// other at once; the path is redialed, re-admitted, and delivers again
// before the end. Every byte is checked.
func TestOneServerRestarted(t *testing.T) {
	const size = 16 << 20
	var srvs [2]*restartable
	port := "0"
	for i, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		hd, err := content.NewHandler(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer hd.Close()
		srvs[i] = &restartable{t: t, addr: net.JoinHostPort(ip, port), h: hd}
		srvs[i].start()
		defer func() { srvs[i].kill() }()
		_, port, _ = net.SplitHostPort(srvs[i].addr)
	}
	var paths []Path
	for i, s := range srvs {
		p := loopPath(fmt.Sprintf("server%d", i), 4e6, 0)
		host, _, _ := net.SplitHostPort(s.addr)
		p.Map = map[string]string{"srv.test": host}
		paths = append(paths, p)
	}
	c := &Client{Paths: paths, StallTimeout: 10 * time.Second}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	// Path 1's delivered count when its server came back, and its last.
	var afterBack, last1 int64
	o := Options{Size: size, Progress: func(p int, delivered int64) {
		if p != 1 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		last1 = delivered
	}}
	tally := faults.New(t)
	f := newMemFile(size)
	got := downloadBehind(ctx, c, "http://srv.test:"+port+fmt.Sprintf("/gen/%d", size), f, o)
	time.Sleep(500 * time.Millisecond)
	tally.Interrupted()
	srvs[1].kill()
	time.Sleep(time.Second)
	srvs[1].start()
	mu.Lock()
	afterBack = last1
	mu.Unlock()
	r := <-got
	if r.err != nil {
		f.checkWritten(t)
		tally.Count(faults.Failed)
		t.Fatalf("failed: %v", r.err)
	}
	if o, n, err := tally.Read(f.reader(), faults.Gen(size, 0)); o != faults.Verified {
		t.Fatalf("%v after %d bytes: %v", o, n, err)
	}
	p1 := r.res.Paths[1]
	mu.Lock()
	defer mu.Unlock()
	if p1.Redials != 1 || last1 <= afterBack {
		t.Fatalf("server1's path: %d redials, delivered %d bytes when its server came back and %d in all; want it redialed and delivering again (paths %+v)",
			p1.Redials, afterBack, last1, r.res.Paths)
	}
	t.Logf("server1's path delivered %d bytes before its server came back, %d after; paths %+v", afterBack, last1-afterBack, r.res.Paths)
}

// TestMirrorsOutOfStep: a multi-homed download from two servers whose
// copies of the object differ (one restarted with a new file, or mirrors
// out of step): every range must come from one version. Before, ranges of
// both versions were spliced into one file without a word.
func TestMirrorsOutOfStep(t *testing.T) {
	const size = 4 << 20
	var bodies [2][]byte
	var addrs [2]string
	port := ""
	for i, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		dir := t.TempDir()
		b := make([]byte, size)
		content.GenAt(b, int64(i)*7919) // two versions of one object
		bodies[i] = b
		path := filepath.Join(dir, "obj")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, time.Now(), time.Now().Add(time.Duration(-i-1)*time.Hour))
		hd, err := content.NewHandler(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer hd.Close()
		addr := ip + ":" + port
		if port == "" {
			addr = ip + ":0"
		}
		srv := &restartable{t: t, addr: addr, h: hd}
		srv.start()
		defer srv.kill()
		addrs[i] = srv.addr
		_, port, _ = net.SplitHostPort(srv.addr)
	}
	tally := faults.New(t)
	var paths []Path
	for i, addr := range addrs {
		p := loopPath(fmt.Sprintf("mirror%d", i), 8e6, 0)
		host, _, _ := net.SplitHostPort(addr)
		p.Map = map[string]string{"mirror.test": host}
		paths = append(paths, p)
	}
	c := &Client{Paths: paths}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newMemFile(size)
	tally.Interrupted()
	res, err := c.Download(ctx, "http://mirror.test:"+port+"/obj", f, Options{Size: size})
	if err != nil {
		tally.Count(faults.Failed)
		t.Logf("failed clearly: %v", err)
		return
	}
	for i, b := range bodies {
		if bytes.Equal(f.b, b) {
			tally.Read(f.reader(), faults.Bytes(b))
			t.Logf("whole from version %d; paths %+v", i, res.Paths)
			return
		}
	}
	tally.Count(faults.Corrupt)
	t.Fatalf("the file is neither version: ranges of both were spliced (paths %+v)", res.Paths)
}

// TestHintedServerKilled: the server of a Hinted's two paths is killed
// (every socket closed at once) and started again 1 s later: both paths
// are redialed and re-admitted, an object in flight at the kill is asked
// for again from its bytes received (Range + If-Range) and completes, a
// Get asked during the outage completes once a path is back, and later
// Gets go where the policy puts them, every body checked by length and
// content. Before redialing, both paths stayed dead: every Get after the
// kill failed; before re-issuing, the object in flight failed.
func TestHintedServerKilled(t *testing.T) {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	srv := &restartable{t: t, addr: "127.0.0.1:0", h: hd}
	srv.start()
	defer func() { srv.kill() }()
	pol, err := hints.Parse("test.rules", "urgent -> path=exp\n* -> path=cheap")
	if err != nil {
		t.Fatal(err)
	}
	h := &Hinted{Client: &Client{Paths: []Path{loopPath("cheap", 2e6, 0), loopPath("exp", 0, 0)}, StallTimeout: 10 * time.Second},
		Policy: pol, Cost: []float64{0, 1}}
	base := "http://" + srv.addr
	if err := h.Start(base); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	style := hints.Hint{Class: hints.Style, Size: 10000}
	image := hints.Hint{Class: hints.Image, Size: 200000, Urgency: 2}
	placed := func(when string) {
		t.Helper()
		if g := getChecked(t, h, base, style.Size, style); g.Path != 1 {
			t.Errorf("%s: style on path %d, want exp", when, g.Path)
		}
		if g := getChecked(t, h, base, image.Size, image); g.Path != 0 {
			t.Errorf("%s: image on path %d, want cheap", when, g.Path)
		}
	}
	placed("before the kill")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tally := faults.New(t)
	const big = 4 << 20
	inFlight := roundTripBehind(ctx, h, base, big, "image")
	waitReceived(t, h, 0, image.Size+1<<20)
	tally.Interrupted()
	srv.kill()
	// This one is asked once both paths know theirs died.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		dead := h.paths[0].pc.dead() && h.paths[1].pc.dead()
		h.mu.Unlock()
		if dead {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the paths did not see their connections die")
		}
	}
	during := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		g, err := h.Get(ctx, fmt.Sprintf("%s/gen/%d", base, image.Size), image, nil)
		if err == nil && int64(len(g.Body)) != image.Size {
			err = fmt.Errorf("%d of %d bytes", len(g.Body), image.Size)
		}
		if err == nil {
			_, err = content.NewVerifier(0).Write(g.Body)
		}
		during <- err
	}()
	time.Sleep(time.Second)
	srv.start()
	if err := <-during; err != nil {
		t.Fatalf("Get asked during the outage: %v", err)
	}
	r := <-inFlight
	if r.err != nil {
		tally.Count(faults.Failed)
		t.Fatalf("the object in flight at the kill: %v", r.err)
	}
	if o, n, err := tally.Read(r.res.Body, faults.Gen(big, 0)); o != faults.Verified {
		t.Fatalf("the object in flight at the kill: %v after %d bytes: %v", o, n, err)
	}
	r.res.Body.Close()
	// At least once: again when the first went on the other path's
	// connection before its end had been read.
	if s := h.Stats(); s.Reissued < 1 {
		t.Errorf("%d objects asked again, want the one in flight", s.Reissued)
	}
	placed("after the restart")
	s := h.Stats()
	for _, p := range s.Paths {
		if p.Redials < 1 || p.Requests < 2 {
			t.Errorf("path %s: %d redials, %d requests; want it redialed and used again", p.Name, p.Redials, p.Requests)
		}
	}
	t.Logf("paths after the restart: %+v", s.Paths)
}
