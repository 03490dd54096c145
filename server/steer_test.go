package server

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shunt-net/shunt/hints"
)

// fakeConn is a client connection from addr, with the kernel figures t.
type fakeConn struct {
	net.Conn
	remote net.Addr
	t      tcpState
	done   chan struct{}
}

func (f *fakeConn) NetConn() net.Conn     { return f }
func (f *fakeConn) RemoteAddr() net.Addr  { return f.remote }
func (f *fakeConn) Done() <-chan struct{} { return f.done }

func newFakeConn(addr string, rtt time.Duration) *fakeConn {
	return &fakeConn{remote: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr)),
		t: tcpState{rtt: rtt, minRTT: rtt, bandwidth: 1.25e6}, done: make(chan struct{})}
}

// steerer over issue 19's latency condition: the expensive path from
// 10.0.2.0/24, the cheap one from 10.0.1.0/24, on a fake clock.
func steerer(t *testing.T, preset string) *Steerer {
	t.Helper()
	pol, err := hints.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	return &Steerer{Policy: pol, now: func() time.Time { return t0 },
		Paths: []SteerPath{{"cheap", netip.MustParsePrefix("10.0.1.0/24"), 0}, {"exp", netip.MustParsePrefix("10.0.2.0/24"), 1}},
		tcp:   func(c steerConn) tcpState { return c.(*fakeConn).t }}
}

// response is a request with Chromium's urgency for its class and the
// response header the page server sends.
func response(mime string, urgency int, size int64) (*http.Request, http.Header) {
	r := (&http.Request{Header: http.Header{"Priority": {"u=" + strconv.Itoa(urgency)}}}).WithContext(context.Background())
	return r, http.Header{"Content-Type": {mime}, "Content-Length": {strconv.FormatInt(size, 10)}}
}

func TestSteerUrgentFast(t *testing.T) {
	s := steerer(t, "urgent-fast")
	exp, cheap := newFakeConn("10.0.2.1:4000", 20*time.Millisecond), newFakeConn("10.0.1.1:4001", 80*time.Millisecond)
	conns := []steerConn{exp, cheap} // the requests' connection first
	for _, tc := range []struct {
		mime    string
		urgency int
		want    int
	}{
		{"text/html", 0, 0},
		{"text/css", 0, 0},
		{"application/javascript", 1, 0}, // parser-blocking
		{"application/javascript", 3, 1}, // async
		{"image/jpeg", 2, 1},
		{"font/woff2", 0, 1},
	} {
		r, h := response(tc.mime, tc.urgency, 1000)
		if got := s.steer(r, h, conns); got != tc.want {
			t.Errorf("%s u=%d: connection %d, want %d", tc.mime, tc.urgency, got, tc.want)
		}
	}
	// Requests on the cheap connection: urgent ones move to the fast path.
	r, h := response("text/css", 0, 1000)
	if got := s.steer(r, h, []steerConn{cheap, exp}); got != 1 {
		t.Errorf("style sheet requested on the cheap path: connection %d, want 1 (exp)", got)
	}
}

// TestSteerWaitsForPath: a response for the cheap path while the client
// has no connection on it waits (-1); urgent ones never do.
func TestSteerWaitsForPath(t *testing.T) {
	s := steerer(t, "urgent-fast")
	exp, cheap := newFakeConn("10.0.2.1:4000", 20*time.Millisecond), newFakeConn("10.0.1.1:4001", 80*time.Millisecond)
	r, h := response("text/css", 0, 1000)
	if got := s.steer(r, h, []steerConn{exp}); got != 0 {
		t.Fatalf("style sheet, exp alone: %d, want 0", got)
	}
	r, h = response("image/png", 2, 50000)
	if got := s.steer(r, h, []steerConn{exp}); got != -1 || s.sent[exp] != 1000 {
		t.Fatalf("image, exp alone: %d (placed on exp %d), want -1 and nothing placed", got, s.sent[exp])
	}
	if got := s.steer(r, h, []steerConn{exp, cheap}); got != 1 {
		t.Fatalf("image, both: %d, want 1", got)
	}
}

// TestSteerProvisional: while the client has one connection a response's
// placement is provisional; once the second binds, the same response is
// placed again and its bytes move with it; a connection's bytes are
// forgotten when it ends.
func TestSteerProvisional(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := steerer(t, "urgent-fast")
		var err error
		if s.Policy, err = hints.Parse("test", "* -> path=finish"); err != nil {
			t.Fatal(err)
		}
		exp, cheap := newFakeConn("10.0.2.1:4000", 20*time.Millisecond), newFakeConn("10.0.1.1:4001", 80*time.Millisecond)
		r, h := response("image/png", 2, 50000)
		for range 2 { // asked on two writes
			if got := s.steer(r, h, []steerConn{exp}); got != 0 {
				t.Fatalf("one connection: %d", got)
			}
		}
		if s.sent[exp] != 50000 {
			t.Fatalf("provisional bytes on exp: %d, want 50000 once", s.sent[exp])
		}
		exp.t.queued = 1 << 20
		if got := s.steer(r, h, []steerConn{exp, cheap}); got != 1 {
			t.Fatalf("two connections: %d, want 1 (cheap)", got)
		}
		if s.sent[exp] != 0 || s.sent[cheap] != 50000 {
			t.Fatalf("bytes after the move: exp %d cheap %d", s.sent[exp], s.sent[cheap])
		}
		close(exp.done)
		close(cheap.done)
		synctest.Wait()
		if len(s.sent) != 0 {
			t.Fatalf("closed connections' bytes kept: %v", s.sent)
		}
	})
}

// TestSteerShareBudget: urgent-fast-share sends the bulk where it finishes
// first (the fast path) while the fast path has at most 25 % of the bytes
// placed, counted per connection by the Steerer.
func TestSteerShareBudget(t *testing.T) {
	s := steerer(t, "urgent-fast-share")
	exp, cheap := newFakeConn("10.0.2.1:4000", 20*time.Millisecond), newFakeConn("10.0.1.1:4001", 80*time.Millisecond)
	conns := []steerConn{exp, cheap}
	want := []int{1, 1, 1, 0, 1, 1, 1, 0} // 100 KB images: every fourth fits in 25 %
	for i, w := range want {
		r, h := response("image/jpeg", 2, 100000)
		if got := s.steer(r, h, conns); got != w {
			t.Fatalf("image %d: connection %d, want %d (placed: exp %d, cheap %d)", i, got, w, s.sent[exp], s.sent[cheap])
		}
	}
}

// TestSteerSendBuffer: urgent-fast-finish sends the bulk where it finishes
// first, and a connection's send-buffer fill counts against its path.
func TestSteerSendBuffer(t *testing.T) {
	s := steerer(t, "urgent-fast-finish")
	exp, cheap := newFakeConn("10.0.2.1:4000", 20*time.Millisecond), newFakeConn("10.0.1.1:4001", 80*time.Millisecond)
	conns := []steerConn{exp, cheap}
	r, h := response("image/jpeg", 2, 100000)
	if got := s.steer(r, h, conns); got != 0 {
		t.Fatalf("empty send buffers: connection %d, want 0 (the fast path finishes first)", got)
	}
	exp.t.queued = 1 << 20 // 0.84 s at 10 Mbit/s
	r, h = response("image/jpeg", 2, 100000)
	if got := s.steer(r, h, conns); got != 1 {
		t.Fatalf("fast path's send buffer full: connection %d, want 1", got)
	}
}

// TestSteerUnknownPath: a connection from no path's address costs 0.
func TestSteerUnknownPath(t *testing.T) {
	s := steerer(t, "urgent-fast")
	exp, other := newFakeConn("10.0.2.1:4000", 20*time.Millisecond), newFakeConn("192.0.2.1:4001", 80*time.Millisecond)
	ps := s.pathState(other, other.t)
	if ps.Name != "" || ps.Cost != 0 {
		t.Fatalf("unknown address: %+v", ps)
	}
	r, h := response("image/gif", 2, 10)
	if got := s.steer(r, h, []steerConn{exp, other}); got != 1 {
		t.Fatalf("bulk: %d, want the cost-0 connection", got)
	}
}

func TestParseSteerPath(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "cheap=10.0.1.0/24", want: "cheap=10.0.1.0/24"},
		{in: "exp=10.0.2.2@1", want: "exp=10.0.2.2/32@1"},
		{in: "lte=fd00::1/64@0.5", want: "lte=fd00::/64@0.5"},
		{in: "wifi=10.0.0.1@0", want: "wifi=10.0.0.1/32"},
		{in: "=10.0.0.1", err: "want NAME=PREFIX[@COST]"},
		{in: "10.0.0.1", err: "want NAME=PREFIX[@COST]"},
		{in: "a=10.0.0.300", err: `steer path "a=10.0.0.300"`},
		{in: "a=10.0.0.1@-1", err: "want a number >= 0"},
		{in: "a=10.0.0.1@NaN", err: "want a number >= 0"},
	} {
		p, err := ParseSteerPath(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || p.String() != tc.want {
			t.Errorf("%q: %v %v, want %s", tc.in, p, err, tc.want)
		}
	}
}

// FuzzParseSteerPath: what parses prints back to itself.
func FuzzParseSteerPath(f *testing.F) {
	for _, s := range []string{"cheap=10.0.1.0/24", "exp=10.0.2.2@1", "lte=fd00::1/64@0.5", "a=::ffff:1.2.3.4@1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseSteerPath(s)
		if err != nil {
			return
		}
		q, err := ParseSteerPath(p.String())
		if err != nil || q != p {
			t.Fatalf("%q -> %v -> %v, %v", s, p, q, err)
		}
	})
}
