package mph2

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/internal/faults"
)

// cutPath is a loopback path (rate-limited as loopPath's) whose
// connections the test can cut (closed at once, as a reset) or freeze (no
// byte read any more, as a link gone silent, until closed).
type cutPath struct {
	Path
	mu    sync.Mutex
	conns []*cutConn
}

type cutConn struct {
	net.Conn
	frozen atomic.Bool
	once   sync.Once
	closed chan struct{}
}

func (c *cutConn) Read(p []byte) (int, error) {
	if c.frozen.Load() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}

func (c *cutConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func newCutPath(name string, rate float64) *cutPath {
	cp := &cutPath{}
	inner := loopPath(name, rate, 0).Dial
	cp.Path = Path{Name: name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := inner(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &cutConn{Conn: c, closed: make(chan struct{})}
		cp.mu.Lock()
		cp.conns = append(cp.conns, cc)
		cp.mu.Unlock()
		return cc, nil
	}}
	return cp
}

// each applies f to the connections dialed so far.
func (cp *cutPath) each(f func(*cutConn)) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for _, c := range cp.conns {
		f(c)
	}
}

// roundTripBehind asks for /gen/size through h.RoundTrip on its own
// goroutine, as a browser's request through shunt proxy is.
func roundTripBehind(ctx context.Context, h *Hinted, base string, size int64, dest string) <-chan roundTripped {
	got := make(chan roundTripped, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/gen/%d", base, size), nil)
		req.Header.Set("Sec-Fetch-Dest", dest)
		res, err := h.RoundTrip(req)
		got <- roundTripped{res, err}
	}()
	return got
}

type roundTripped struct {
	res *http.Response
	err error
}

// waitReceived waits until path p has received at least n bytes of DATA.
func waitReceived(t *testing.T, h *Hinted, p int, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); h.Stats().Paths[p].Received < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("path %d received %d bytes in 10 s, want %d", p, h.Stats().Paths[p].Received, n)
		}
	}
}

// loadOnCheap starts a Hinted over c's paths to base whose every object
// goes on path 0 ("cheap", cost 0), asks for /gen/size through RoundTrip
// and returns once that path has received 1 MB, with the tally that counts
// the object as interrupted.
func loadOnCheap(t *testing.T, c *Client, base string, size int64) (*Hinted, <-chan roundTripped, *faults.Tally) {
	t.Helper()
	pol, err := hints.Parse("test.rules", "* -> path=cheap")
	if err != nil {
		t.Fatal(err)
	}
	h := &Hinted{Client: c, Policy: pol, Cost: []float64{0, 1}}
	if err := h.Start(base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	tally := faults.New(t)
	got := roundTripBehind(ctx, h, base, size, "image")
	waitReceived(t, h, 0, 1<<20)
	tally.Interrupted()
	return h, got, tally
}

// TestHintedPathLost: an object in flight on the cheap path (2 MB/s) when
// that path's connection is cut (reset) or freezes (silent: PING
// unanswered, no frame, for the path timeout) is asked for again on the
// other path by Range + If-Range from the bytes received, and reaches the
// reader whole and in order (length and content checked); the cheap path
// is redialed. Before, the object failed with its connection.
func TestHintedPathLost(t *testing.T) {
	for _, how := range []string{"cut", "frozen"} {
		t.Run(how, func(t *testing.T) {
			cheap := newCutPath("cheap", 2e6)
			const size = 4 << 20
			h, got, tally := loadOnCheap(t, &Client{Paths: []Path{cheap.Path, loopPath("exp", 0, 0)}, PathTimeout: 300 * time.Millisecond, StallTimeout: 10 * time.Second},
				startServer(t, nil), size)
			cheap.each(func(c *cutConn) {
				if how == "cut" {
					c.Close()
				} else {
					c.frozen.Store(true)
				}
			})
			r := <-got
			if r.err != nil {
				tally.Count(faults.Failed)
				t.Fatalf("RoundTrip: %v", r.err)
			}
			o, n, err := tally.Read(r.res.Body, faults.Gen(size, 0))
			r.res.Body.Close()
			if o != faults.Verified {
				t.Fatalf("%v after %d bytes: %v", o, n, err)
			}
			s := h.Stats()
			if s.Reissued != 1 || s.Paths[1].Used == 0 || s.Paths[0].Used+s.Paths[1].Used != size || s.Wasted != 0 {
				t.Errorf("stats %+v: want the object asked again once, its rest from exp, nothing wasted", s)
			}
			if how == "frozen" && s.Paths[0].Stalls != 1 {
				t.Errorf("cheap: %d stalls, want 1", s.Paths[0].Stalls)
			}
			for deadline := time.Now().Add(5 * time.Second); h.Stats().Paths[0].Redials < 1; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("cheap not redialed within 5 s: %+v", h.Stats().Paths[0])
				}
			}
			t.Logf("paths %+v", h.Stats().Paths)
		})
	}
}

// TestHintedNoProgressFails: the server is killed for good while an object
// is in flight: once no path has delivered a byte for the stall timeout
// (3 s here), or up to redialMax sooner when every path's redialing has
// stopped (redial.go: no attempt that would start past the timeout), the
// object fails with an error after a correct prefix, rather than waiting
// forever. Every path is down then; once the server is back, the next Get
// dials them again and completes (a Hinted in shunt proxy outlives an
// origin's outage).
func TestHintedNoProgressFails(t *testing.T) {
	hd := genHandler(t)
	srv := &restartable{t: t, addr: "127.0.0.1:0", h: hd}
	srv.start()
	defer func() { srv.kill() }()
	const stall = 3 * time.Second
	const size = 8 << 20
	base := "http://" + srv.addr
	h, got, tally := loadOnCheap(t, &Client{Paths: []Path{loopPath("cheap", 2e6, 0), loopPath("exp", 2e6, 0)}, StallTimeout: stall}, base, size)
	srv.kill()
	r := <-got
	if r.err != nil {
		t.Fatalf("RoundTrip: %v (the response had come before the kill)", r.err)
	}
	body := &lastRead{r: r.res.Body}
	o, n, err := tally.Read(body, faults.Gen(size, 0))
	r.res.Body.Close()
	took := time.Since(body.at)
	if o != faults.Failed {
		t.Fatalf("%v after %d bytes: %v; want a clear failure", o, n, err)
	}
	// The timeout runs from the last byte's arrival, which the reader
	// reads a little later: a margin of 200 ms below.
	if took < stall-redialMax-200*time.Millisecond || took > stall+3*time.Second {
		t.Errorf("failed %v after the last byte read, want after the stall timeout of %v (and soon after)", took, stall)
	}
	t.Logf("failed %v after the last byte read, %d bytes: %v", took, n, err)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		h.mu.Lock()
		down := h.paths[0].down && h.paths[1].down
		h.mu.Unlock()
		if down {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the paths still redialed 5 s after the object failed")
		}
	}
	srv.start()
	getChecked(t, h, base, 100000, hints.Hint{Class: hints.Image, Size: 100000, Urgency: 2})
}

// lastRead notes when its reader last gave bytes.
type lastRead struct {
	r  io.Reader
	at time.Time
}

func (l *lastRead) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.at = time.Now()
	}
	return n, err
}
