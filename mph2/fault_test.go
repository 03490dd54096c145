package mph2

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
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
	if err != nil {
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

// TestServerKilledMidDownload kills the one server of a two-path MP-H2
// download (both paths lose their connections at once) and starts it again
// while the client still runs: the download must end whole and verified,
// or with an error, never with a file that is short or wrong without one.
// A second download once the server is back must be whole.
func TestServerKilledMidDownload(t *testing.T) {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	srv := &restartable{t: t, addr: "127.0.0.1:0", h: hd}
	srv.start()
	defer func() { srv.kill() }()
	tally := faults.New(t)
	const size = 16 << 20
	url := fmt.Sprintf("http://%s/gen/%d", srv.addr, size)
	c := &Client{Paths: []Path{loopPath("a", 4e6, 0), loopPath("b", 4e6, 0)}, StallTimeout: 5 * time.Second}
	defer c.Close()
	f := newMemFile(size)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		res *Result
		err error
	}
	got := make(chan result, 1)
	go func() {
		res, err := c.Download(ctx, url, f, Options{Size: size})
		got <- result{res, err}
	}()
	time.Sleep(500 * time.Millisecond) // about a quarter of the object
	tally.Interrupted()
	srv.kill()
	time.Sleep(300 * time.Millisecond)
	srv.start()
	r := <-got
	switch {
	case r.err != nil:
		// The bytes written so far must still be right: checkWritten.
		f.checkWritten(t)
		tally.Count(faults.Failed)
		t.Logf("failed clearly: %v", r.err)
	case r.res.Size != size:
		tally.Count(faults.Corrupt)
		t.Fatalf("no error, %d of %d bytes", r.res.Size, size)
	default:
		if o, n, err := tally.Read(f.reader(), faults.Gen(size, 0)); o != faults.Verified {
			t.Fatalf("%v after %d bytes: %v", o, n, err)
		}
		t.Logf("completed after the restart: paths %+v", r.res.Paths)
	}
	// The server is back: the next download is whole.
	f2 := newMemFile(size)
	if _, err := c.Download(ctx, url, f2, Options{Size: size}); err != nil {
		t.Fatalf("download after the restart: %v", err)
	}
	if o, n, err := tally.Read(f2.reader(), faults.Gen(size, 0)); o != faults.Verified {
		t.Fatalf("after the restart: %v after %d bytes: %v", o, n, err)
	}
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
