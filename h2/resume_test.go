package h2

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/internal/faults"
)

// killableServer serves a handler over h2c at a fixed address and can be
// killed (listener and every connection closed at once, as when the
// process dies) and started again on the same address.
type killableServer struct {
	t    *testing.T
	addr string
	h    http.Handler

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func startKillable(t *testing.T, h http.Handler) *killableServer {
	s := &killableServer{t: t, addr: "127.0.0.1:0", h: h}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *killableServer) start() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.ln, s.addr, s.conns = ln, ln.Addr().String(), map[net.Conn]bool{}
	s.mu.Unlock()
	srv := &Server{Handler: s.h}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[nc] = true
			s.mu.Unlock()
			go srv.ServeConn(context.Background(), nc, nil)
		}
	}()
}

func (s *killableServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
}

// readUntil reads from body into the tally's check until n bytes came.
func readPrefix(t *testing.T, body io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(body, b); err != nil {
		t.Fatalf("first %d bytes: %v", n, err)
	}
	return b
}

// prefixed is a body whose first bytes were read already.
func prefixed(head []byte, rest io.Reader) io.Reader {
	return io.MultiReader(&onlyBytes{head}, rest)
}

type onlyBytes struct{ b []byte }

func (o *onlyBytes) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	return n, nil
}

// TestResumeServerRestart kills the server in the middle of a download and
// starts it again: the body resumes with Range + If-Range and every byte is
// checked; with a 206 range asked by the caller too.
func TestResumeServerRestart(t *testing.T) {
	h, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	tally := faults.New(t)
	const size = 16 << 20
	for _, rng := range []string{"", "bytes=1000-9999999"} {
		srv := startKillable(t, h)
		var resumed []int64
		rt := &Resume{Transport: &Transport{AllowHTTP: true}, OnResume: func(_ *http.Request, n int64, cause error) {
			resumed = append(resumed, n)
			t.Logf("resuming after %d bytes: %v", n, cause)
		}}
		req, _ := http.NewRequest("GET", "http://"+srv.addr+"/gen/16777216", nil)
		want := faults.Gen(size, 0)
		if rng != "" {
			req.Header.Set("Range", rng)
			want = faults.Want{Size: 9999999 - 1000 + 1, At: io.NewSectionReader(faults.Gen(size, 1000).At, 0, 9999999-1000+1)}
		}
		res, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		head := readPrefix(t, res.Body, 1<<20)
		tally.Interrupted()
		srv.kill()
		srv.start()
		o, n, err := tally.Read(prefixed(head, res.Body), want)
		res.Body.Close()
		if o != faults.Verified || len(resumed) == 0 {
			t.Errorf("range %q: %v after %d bytes (%v), %d re-requests; want verified after a re-request", rng, o, n, err, len(resumed))
		}
	}
}

// TestResumeChangedOrGone: a resource that changed while the server was
// down fails with ErrResourceChanged (no splice of two versions); a server
// that stays down fails with an error naming the re-requests; no retries
// means the break itself is the error. Never a short body without one.
func TestResumeChangedOrGone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "obj")
	old := make([]byte, 8<<20)
	content.GenAt(old, 0)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, time.Now(), time.Now().Add(-time.Hour))
	h, err := content.NewHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tally := faults.New(t)
	for _, c := range []struct {
		name    string
		retries int
		after   func(srv *killableServer) // what happens once the server died
		want    error
	}{
		{"changed", 0, func(srv *killableServer) {
			b := append([]byte(nil), old...)
			b[len(b)-1] ^= 1
			os.WriteFile(path, b, 0o644)
			os.Chtimes(path, time.Now(), time.Now())
			srv.start()
		}, ErrResourceChanged},
		{"gone", 2, func(*killableServer) {}, nil},
		{"no retries", -1, func(srv *killableServer) { srv.start() }, ErrConnClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(path, old, 0o644)
			os.Chtimes(path, time.Now(), time.Now().Add(-time.Hour))
			srv := startKillable(t, h)
			rt := &Resume{Transport: &Transport{AllowHTTP: true}, Retries: c.retries, Backoff: 10 * time.Millisecond}
			req, _ := http.NewRequest("GET", "http://"+srv.addr+"/obj", nil)
			res, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			head := readPrefix(t, res.Body, 1<<20)
			tally.Interrupted()
			srv.kill()
			c.after(srv)
			o, n, err := tally.Read(prefixed(head, res.Body), faults.Bytes(old))
			if o != faults.Failed || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("%v after %d bytes: %v; want a failure with %v", o, n, err, c.want)
			}
			t.Logf("failed as it should after %d bytes: %v", n, err)
		})
	}
}
