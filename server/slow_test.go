package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/internal/faults"
	"github.com/shunt-net/shunt/internal/syncio"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// closedWithin reads c until the server closes it (EOF or reset) and
// reports how long that took; false if it is still open after limit.
func closedWithin(c net.Conn, limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return time.Since(start), false
	}
	return time.Since(start), true
}

// untilLogged waits (at most max) until logs has a line with what for the
// connection from each conn, and returns how long that took, 0 if it ran
// into max.
func untilLogged(logs *syncio.Buffer, conns []net.Conn, what string, max time.Duration) time.Duration {
	start := time.Now()
	for ; time.Since(start) < max; time.Sleep(20 * time.Millisecond) {
		lines := strings.Split(logs.String(), "\n")
		logged := func(c net.Conn) bool {
			from := "from " + c.LocalAddr().String() + ": "
			return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, from) && strings.Contains(l, what) })
		}
		if !slices.ContainsFunc(conns, func(c net.Conn) bool { return !logged(c) }) {
			return time.Since(start)
		}
	}
	return 0
}

// trickle writes b one byte every gap until the write fails or done closes.
func trickle(c net.Conn, b []byte, gap time.Duration, done <-chan struct{}) {
	for i := range b {
		if _, err := c.Write(b[i : i+1]); err != nil {
			return
		}
		select {
		case <-done:
			return
		case <-time.After(gap):
		}
	}
}

// headerBlock is the HPACK encoding of a request for path.
func headerBlock(path string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: path}, {Name: "x-pad", Value: strings.Repeat("p", 200)}} {
		enc.WriteField(f)
	}
	return b.Bytes()
}

// TestSlowHeadersCutOff: slowloris in every form shunt's server meets it
// (a silent TLS client, an HTTP/1.1 header trickled, an HTTP/2 preface
// trickled, a header block whose CONTINUATION frames trickle, one HEADERS
// frame's bytes trickled) loses its connection after HeaderTimeout, while
// a normal client is served alongside 60 of them; the goroutines they held
// are gone afterwards.
func TestSlowHeadersCutOff(t *testing.T) {
	const limit = 400 * time.Millisecond
	h, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	addr := start(t, &Server{Handler: h, HeaderTimeout: limit}, nil)
	tlsAddr := start(t, &Server{Handler: h, HeaderTimeout: limit, TLS: true}, nil)
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()

	settings := func(c net.Conn) {
		c.Write([]byte(http2.ClientPreface))
		http2.NewFramer(c, nil).WriteSettings()
	}
	attacks := map[string]func(c net.Conn, done <-chan struct{}){
		"tls silent": func(net.Conn, <-chan struct{}) {},
		"h1 header trickled": func(c net.Conn, done <-chan struct{}) {
			c.Write([]byte("GET /gen/10 HTTP/1.1\r\nHost: x\r\n"))
			trickle(c, bytes.Repeat([]byte("X-Slow: y\r\n"), 100), 20*time.Millisecond, done)
		},
		"h2 preface trickled": func(c net.Conn, done <-chan struct{}) {
			trickle(c, []byte(http2.ClientPreface), 100*time.Millisecond, done)
		},
		"h2 continuation trickled": func(c net.Conn, done <-chan struct{}) {
			settings(c)
			fr := http2.NewFramer(c, nil)
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("/gen/10")[:10], EndStream: true})
			for {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if fr.WriteContinuation(1, false, nil) != nil {
					return
				}
			}
		},
		"h2 headers bytes trickled": func(c net.Conn, done <-chan struct{}) {
			settings(c)
			var frame bytes.Buffer
			http2.NewFramer(&frame, nil).WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("/gen/10"), EndStream: true, EndHeaders: true})
			trickle(c, frame.Bytes(), 50*time.Millisecond, done)
		},
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	var mu sync.Mutex
	cut := map[string][]time.Duration{}
	for name, attack := range attacks {
		for range 12 {
			a := addr
			if name == "tls silent" {
				a = tlsAddr
			}
			c, err := net.Dial("tcp", a)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			wg.Go(func() { attack(c, done) })
			wg.Go(func() {
				d, closed := closedWithin(c, 10*limit)
				if !closed {
					t.Errorf("%s: still open after %v", name, d)
				}
				mu.Lock()
				cut[name] = append(cut[name], d)
				mu.Unlock()
			})
		}
	}
	// A normal client meanwhile.
	tr := &http2.Transport{AllowHTTP: true, DialTLS: func(n, a string, _ *tls.Config) (net.Conn, error) { return net.Dial(n, a) }}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + addr + "/gen/1MB")
	if err != nil {
		t.Fatalf("a normal client beside the slow ones: %v", err)
	}
	tally := faults.New(t)
	if o, n, err := tally.Read(res.Body, faults.Gen(1e6, 0)); o != faults.Verified {
		t.Errorf("a normal client beside the slow ones: %v after %d bytes: %v", o, n, err)
	}
	res.Body.Close()
	tr.CloseIdleConnections()
	wg.Wait()
	close(done)
	for name, ds := range cut {
		t.Logf("%s: %d connections cut off after %v..%v (header timeout %v)", name, len(ds), minDur(ds), maxDur(ds), limit)
	}
	waitGoroutines(t, before)
}

func minDur(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = min(m, d)
	}
	return m.Round(time.Millisecond)
}

func maxDur(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = max(m, d)
	}
	return m.Round(time.Millisecond)
}

// waitGoroutines waits (5 s at most) for the goroutine count to come back
// to within a few of before: what slow or stalled peers held is released.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	var now int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if now = runtime.NumGoroutine(); now <= before+5 {
			t.Logf("goroutines: %d before, %d after", before, now)
			return
		}
	}
	buf := make([]byte, 1<<20)
	t.Errorf("goroutines: %d before, %d 5 s after the peers were cut off\n%s", before, now, buf[:runtime.Stack(buf, true)])
}

// TestStalledPeer: HTTP/2 clients that stop taking what they asked for.
// One never sends WINDOW_UPDATE (its stream stalls at its window), one
// never reads its socket at all (the server's socket writes block). Against
// 20 of each (64 MiB and 1 GiB downloads), the server resets the stalled streams and
// closes the unread connections after SendTimeout, holds little memory
// meanwhile, and its goroutines come back down.
func TestStalledPeer(t *testing.T) {
	const limit = 500 * time.Millisecond
	h, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, SendTimeout: limit}
	addr := start(t, s, nil)
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapInuse

	open := func(window uint32, path string) (net.Conn, *http2.Framer) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.Write([]byte(http2.ClientPreface))
		fr := http2.NewFramer(c, c)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
		if window > 65535 {
			fr.WriteWindowUpdate(0, 1<<31-1-65535)
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock(path), EndStream: true, EndHeaders: true})
		return c, fr
	}
	var noWindow, noRead []net.Conn
	var frs []*http2.Framer
	for range 20 {
		c, fr := open(65535, "/gen/64MiB") // reads, never grants more window
		noWindow, frs = append(noWindow, c), append(frs, fr)
		// Grants everything, reads nothing: more than loopback's socket
		// buffers hold (up to 32 MiB received, 4 MiB sent).
		c, _ = open(1<<31-1, "/gen/1GiB")
		noRead = append(noRead, c)
	}
	time.Sleep(limit / 2)
	runtime.ReadMemStats(&ms)
	during := int64(ms.HeapInuse) - int64(heapBefore)
	t.Logf("heap in use while 40 peers stall: %+.1f MiB", float64(during)/(1<<20))
	if during > 64<<20 {
		t.Errorf("heap grew %.1f MiB with 40 stalled peers", float64(during)/(1<<20))
	}
	// The stalled-window peers read their frames: the stream ends in RST_STREAM(CANCEL).
	var wg sync.WaitGroup
	for i, c := range noWindow {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(10 * limit))
			for {
				f, err := frs[i].ReadFrame()
				if err != nil {
					t.Errorf("no-window peer %d: %v before RST_STREAM", i, err)
					return
				}
				if rst, ok := f.(*http2.RSTStreamFrame); ok {
					if rst.StreamID != 1 || rst.ErrCode != http2.ErrCodeCancel {
						t.Errorf("no-window peer %d: %v", i, rst)
					}
					return
				}
			}
		})
	}
	// The unread connections are closed: the server logs a send timeout
	// for each, and reading them then (reading earlier would let the
	// server go on) they end. On a loaded machine filling 20 connections'
	// socket buffers can take seconds, and a still receive queue can be a
	// server short of CPU rather than stuck, so the log is what says when.
	logs := s.ErrorLog.Writer().(*syncio.Buffer)
	if d := untilLogged(logs, noRead, "(send timeout)", 30*time.Second); d > 0 {
		t.Logf("send timeouts of the %d no-read peers logged after %v", len(noRead), d)
	} else {
		t.Errorf("no send timeout logged within 30 s for some of the %d no-read peers", len(noRead))
	}
	for i, c := range noRead {
		wg.Go(func() {
			if d, closed := closedWithin(c, 20*limit); !closed {
				t.Errorf("no-read peer %d: still open after %v", i, d)
			}
		})
	}
	wg.Wait()
	for _, c := range noWindow {
		c.Close()
	}
	waitGoroutines(t, before)
}
