package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/internal/faults"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/smig"
)

// dyingServer is shunt's server at a fixed address that dies (every socket
// closed at once, as when its process is killed) once it has sent `after`
// body bytes of a response to a request without Range, and can be started
// again.
type dyingServer struct {
	t      *testing.T
	addr   string
	tls    bool
	smig   bool
	h      http.Handler
	after  int64
	sent   chan struct{} // closed when the first response reached `after`
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func (s *dyingServer) start() {
	h := s.h
	if s.sent != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Range") != "" {
				s.h.ServeHTTP(w, r)
				return
			}
			s.h.ServeHTTP(&stallAfter{ResponseWriter: w, left: s.after, s: s, ctx: r.Context()}, r)
		})
	}
	srv := &server.Server{Addr: s.addr, Handler: h, TLS: s.tls}
	if s.smig {
		sm := &smig.Server{Policy: smig.Policy{Kind: smig.NoMig}, Logf: s.t.Logf}
		srv.H2 = &h2.Server{Handler: sm.Wrap(h), Config: sm.Config(h2.Config{})}
		srv.WrapTLS = sm.TLSConfig
	}
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

// kill closes the listener and every connection at once.
func (s *dyingServer) kill() {
	s.cancel()
	<-s.done
}

// stallAfter passes `left` bytes, then announces it and holds the handler
// until the connection dies.
type stallAfter struct {
	http.ResponseWriter
	left int64
	s    *dyingServer
	ctx  context.Context
}

func (w *stallAfter) Write(p []byte) (int, error) {
	if int64(len(p)) <= w.left {
		w.left -= int64(len(p))
		return w.ResponseWriter.Write(p)
	}
	n, _ := w.ResponseWriter.Write(p[:w.left])
	w.left = 0
	http.NewResponseController(w.ResponseWriter).Flush()
	w.s.once.Do(func() { close(w.s.sent) })
	<-w.ctx.Done()
	return n, errors.New("killed")
}

func (w *stallAfter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type getResult struct {
	stderr string
	err    error
}

// getAcrossRestart runs shunt get with args against s, kills s once it has
// sent its `after` bytes, starts it again `outage` later (s serves normally
// from then on; the caller kills it) and returns how get ended.
func getAcrossRestart(t *testing.T, s *dyingServer, tally *faults.Tally, outage time.Duration, args []string) getResult {
	t.Helper()
	got := make(chan getResult, 1)
	go func() {
		_, stderr, err := runGetTest(t, args...)
		got <- getResult{stderr, err}
	}()
	select {
	case <-s.sent:
	case r := <-got:
		t.Fatalf("get ended before the server died: %v\n%s", r.err, r.stderr)
	}
	tally.Interrupted()
	s.kill()
	time.Sleep(outage)
	s.sent = nil
	s.start()
	return <-got
}

// verify checks that get succeeded, that the file at out is /gen's object
// of size bytes (length and SHA-256, counted by tally), and that get's
// stderr says it verified it and each of says.
func (r getResult) verify(t *testing.T, tally *faults.Tally, out string, size int64, says ...string) {
	t.Helper()
	if r.err != nil {
		tally.Count(faults.Failed)
		t.Fatalf("get: %v\n%s", r.err, r.stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if o, n, err := tally.Read(f, faults.Gen(size, 0)); o != faults.Verified {
		t.Fatalf("file: %v after %d bytes: %v", o, n, err)
	}
	for _, want := range append(says, fmt.Sprintf("verified: bytes 0-%d of /gen/", size-1)) {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestGetResumesAfterServerRestart: the server dies 4 MiB into a 32 MiB
// download and comes back; shunt get asks for the rest with Range +
// If-Range and the file is whole (length and SHA-256 checked), over
// HTTP/1.1, h2c, h2 over TLS and SMig (h2c and TLS). With --retries 0 the same break is
// a clear error and no file is written; a resource that changed while the
// server was down fails too.
func TestGetResumesAfterServerRestart(t *testing.T) {
	gen, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	tally := faults.New(t)
	const size = 32 << 20
	for _, c := range []struct {
		name      string
		tls, smig bool
		args      []string
	}{
		{"http1.1", false, false, nil},
		{"h2c", false, false, []string{"--h2c"}},
		{"h2 tls", true, false, []string{"--insecure"}},
		{"smig h2c", false, true, []string{"--h2c", "--smig", "nomig"}},
		{"smig tls", true, true, []string{"--insecure", "--smig", "nomig"}},
		{"h2c no retries", false, false, []string{"--h2c", "--retries", "0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &dyingServer{t: t, addr: "127.0.0.1:0", tls: c.tls, smig: c.smig, h: gen, after: 4 << 20, sent: make(chan struct{})}
			s.start()
			scheme := "http"
			if c.tls {
				scheme = "https"
			}
			out := filepath.Join(t.TempDir(), "obj")
			r := getAcrossRestart(t, s, tally, 0, append(c.args, "-o", out, scheme+"://"+s.addr+"/gen/32MiB"))
			defer s.kill()
			retries := !strings.Contains(c.name, "no retries")
			if !retries {
				if r.err == nil || !strings.Contains(r.err.Error(), "GET ") {
					t.Fatalf("without retries: %v, want the break as an error\n%s", r.err, r.stderr)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("a failed download left %s behind (%v)", out, err)
				}
				tally.Count(faults.Failed)
				t.Logf("failed clearly: %v", r.err)
				return
			}
			r.verify(t, tally, out, size, "resuming at byte ")
		})
	}
}

// TestGetResumeChangedFile: the file changed while the server was down, so
// If-Range does not match and the server sends the whole new version: get
// fails saying so instead of splicing two versions.
func TestGetResumeChangedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "obj")
	body := gen(0, 16<<20)
	os.WriteFile(path, body, 0o644)
	os.Chtimes(path, time.Now(), time.Now().Add(-time.Hour))
	h, err := content.NewHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tally := faults.New(t)
	s := &dyingServer{t: t, addr: "127.0.0.1:0", h: h, after: 2 << 20, sent: make(chan struct{})}
	s.start()
	out := filepath.Join(t.TempDir(), "obj")
	got := make(chan error, 1)
	var stderr string
	go func() {
		var err error
		_, stderr, err = runGetTest(t, "--h2c", "-o", out, "http://"+s.addr+"/obj")
		got <- err
	}()
	<-s.sent
	tally.Interrupted()
	s.kill()
	body[0] ^= 1
	os.WriteFile(path, body, 0o644)
	os.Chtimes(path, time.Now(), time.Now())
	s.sent = nil
	s.start()
	defer s.kill()
	err = <-got
	if err == nil || !strings.Contains(err.Error(), "resource changed") {
		t.Fatalf("get: %v; want the change named\n%s", err, stderr)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("a failed download left %s behind", out)
	}
	tally.Count(faults.Failed)
	t.Logf("failed clearly: %v", err)
}

// TestGetStalledServerH2: a server that sends part of a body and then
// nothing (no DATA, its connection alive): shunt get's idle timeout fires
// over h2c and h2 with SMig, the retries do not mask it, and no file is
// left.
func TestGetStalledServerH2(t *testing.T) {
	gen, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	tally := faults.New(t)
	for _, args := range [][]string{{"--h2c"}, {"--h2c", "--smig", "nomig"}} {
		s := &dyingServer{t: t, addr: "127.0.0.1:0", smig: len(args) > 1, h: gen, after: 1 << 20, sent: make(chan struct{})}
		s.start()
		out := filepath.Join(t.TempDir(), "obj")
		tally.Interrupted()
		_, stderr, err := runGetTest(t, append(args, "--idle-timeout", "300ms", "-o", out, "http://"+s.addr+"/gen/8MiB")...)
		s.kill()
		if err == nil || !strings.Contains(err.Error(), "--idle-timeout") || strings.Contains(stderr, "resuming") {
			t.Errorf("%v: %v, want the idle timeout and no resume\n%s", args, err, stderr)
		}
		if _, serr := os.Stat(out); !os.IsNotExist(serr) {
			t.Errorf("%v: a stalled download left %s", args, out)
		}
		tally.Count(faults.Failed)
		t.Logf("%v: failed clearly: %v", args, err)
	}
}
