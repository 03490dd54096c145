package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// inlineBody is what /inline/N serves (its first N bytes), as a static
// file server serves a cached file: shared, never modified.
var inlineBody = bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz"), 4000)

// inlineTest answers /inline/N on the reader and declines everything else;
// /panic panics there. ServeHTTP answers /inline/N too (a request with a
// body is never offered inline) and holds /decline until its context ends.
type inlineTest struct {
	inline, handler atomic.Int32
	cancelled       chan struct{}
}

func (h *inlineTest) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path == "/panic" {
		panic("inline handler panics")
	}
	if !strings.HasPrefix(r.URL.Path, "/inline/") {
		return false
	}
	if r.Context().Value(ConnContextKey) == nil {
		panic("no Conn in an inline request's context")
	}
	h.inline.Add(1)
	h.serve(w, r)
	return true
}

func (h *inlineTest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.handler.Add(1)
	if r.URL.Path == "/decline" {
		<-r.Context().Done()
		close(h.cancelled)
		return
	}
	io.Copy(io.Discard, r.Body)
	h.serve(w, r)
}

func (h *inlineTest) serve(w http.ResponseWriter, r *http.Request) {
	n := int(parseSize(strings.TrimPrefix(r.URL.Path, "/inline/")))
	w.Header().Set("Content-Length", itoa64(int64(n)))
	w.(SharedWriter).WriteShared(inlineBody[:n])
}

// readBody reads stream id's response body until END_STREAM.
func (rc *rawClient) readBody(id uint32) []byte {
	rc.t.Helper()
	var body []byte
	if rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == id {
			body = append(body, d.Data()...)
			return d.StreamEnded()
		}
		return false
	}) == nil {
		rc.t.Fatalf("stream %d: response incomplete after %d bytes", id, len(body))
	}
	return body
}

// TestInlineHandler: bodiless requests an InlineHandler accepts are answered
// without ServeHTTP; one with a body, and one it declines, go to ServeHTTP,
// and a declined one's context is cancelled with its stream; a panic
// resets only its stream.
func TestInlineHandler(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		h := &inlineTest{cancelled: make(chan struct{})}
		ts := startServer(t, h, Config{}, useTLS)
		rc := dialRawTS(t, ts)
		rc.fr.WriteWindowUpdate(0, 1<<20) // 140,000 is over the RFC's 65,535
		for i, size := range []int{0, 100, 20000, 140000} {
			id := uint32(1 + 2*i)
			rc.request(id, "/inline/"+itoa64(int64(size)), true)
			rc.fr.WriteWindowUpdate(id, 1<<20)
			if size == 0 {
				if rc.readUntil(5*time.Second, isStatus(id, "200")) == nil {
					t.Fatalf("tls %v: no 200 for an empty inline response", useTLS)
				}
				continue
			}
			if got := rc.readBody(id); !bytes.Equal(got, inlineBody[:size]) {
				t.Fatalf("tls %v: inline response of %d bytes: got %d bytes, not the body", useTLS, size, len(got))
			}
		}
		if h.inline.Load() != 4 || h.handler.Load() != 0 {
			t.Fatalf("tls %v: %d inline, %d by ServeHTTP; want 4, 0", useTLS, h.inline.Load(), h.handler.Load())
		}
		// With a body: ServeHTTP.
		rc.request(9, "/inline/50", false)
		rc.fr.WriteData(9, true, []byte("body"))
		if got := rc.readBody(9); !bytes.Equal(got, inlineBody[:50]) || h.handler.Load() != 1 {
			t.Fatalf("tls %v: request with a body: %d bytes, %d by ServeHTTP", useTLS, len(got), h.handler.Load())
		}
		// Declined: ServeHTTP, whose context the client's reset cancels.
		rc.request(11, "/decline", true)
		waitFor(t, "the declined request's handler", func() bool { return h.handler.Load() == 2 })
		rc.fr.WriteRSTStream(11, http2.ErrCodeCancel)
		select {
		case <-h.cancelled:
		case <-time.After(5 * time.Second):
			t.Fatalf("tls %v: a declined request's context not cancelled by RST_STREAM", useTLS)
		}
		// A panic resets its stream; the connection serves on.
		rc.request(13, "/panic", true)
		if rc.readUntil(5*time.Second, isRST(13, http2.ErrCodeInternal)) == nil {
			t.Fatalf("tls %v: no RST_STREAM(INTERNAL_ERROR) after an inline panic", useTLS)
		}
		rc.request(15, "/inline/10", true)
		if got := rc.readBody(15); !bytes.Equal(got, inlineBody[:10]) {
			t.Fatalf("tls %v: after a panic: %q", useTLS, got)
		}
	}
}

// TestInlinePriority: inline responses held behind the connection window
// leave in RFC 9218 order when it opens, as handlers' do.
func TestInlinePriority(t *testing.T) {
	h := &inlineTest{}
	ts := startServer(t, h, Config{}, false)
	rc := dialRaw(t, ts.addr)
	rc.request(1, "/inline/65535", true) // uses up the connection window
	rc.readBody(1)
	// The reader answers both before it reads the WINDOW_UPDATE after them.
	rc.requestUrgencies("/inline/60000")
	rc.fr.WriteWindowUpdate(0, 200000)
	urgentFirst(t, rc.dataOrder(2))
	if h.inline.Load() != 3 {
		t.Fatalf("%d responses inline, want 3", h.inline.Load())
	}
}

// reuseTest answers /inline/N/OFF inline with inlineBody[OFF:OFF+N] and
// notes each stream it answered on; ServeHTTP answers /handler/N/OFF the
// same way after a pause, on a handler goroutine.
type reuseTest struct {
	mu   sync.Mutex
	seen map[*stream]int // inline answers per stream object
}

func (h *reuseTest) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/inline/") {
		return false
	}
	h.mu.Lock()
	h.seen[StreamFromContext(r.Context()).st]++
	h.mu.Unlock()
	h.serve(w, r)
	return true
}

func (h *reuseTest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(time.Millisecond)
	h.serve(w, r)
}

func (h *reuseTest) serve(w http.ResponseWriter, r *http.Request) {
	var n, off int
	fmt.Sscanf(r.URL.Path[strings.IndexByte(r.URL.Path[1:], '/')+1:], "/%d/%d", &n, &off)
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.(SharedWriter).WriteShared(inlineBody[off : off+n])
}

// TestInlineStreamReuse: streams answered inline are reused for the
// connection's next requests, and under concurrent inline and handler
// requests, some reset by the client mid-response, every completed body is
// the one asked for (run it with -race).
func TestInlineStreamReuse(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		h := &reuseTest{seen: map[*stream]int{}}
		ts := startServer(t, h, Config{}, useTLS)
		tr := &Transport{AllowHTTP: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		var wg sync.WaitGroup
		var completed atomic.Int32
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 40; i++ {
					n, off := (g*977+i*4099)%40000, (g*31+i*7)%1000
					kind := "inline"
					if i%5 == 4 {
						kind = "handler"
					}
					ctx, cancel := context.WithCancel(context.Background())
					req, _ := http.NewRequestWithContext(ctx, "GET", ts.url(fmt.Sprintf("/%s/%d/%d", kind, n, off)), nil)
					res, err := tr.RoundTrip(req)
					if err != nil {
						cancel()
						t.Errorf("tls %v: %v", useTLS, err)
						return
					}
					if i%7 == 3 { // reset mid-response
						res.Body.Read(make([]byte, 10))
						cancel()
						res.Body.Close()
						continue
					}
					b, err := io.ReadAll(res.Body)
					res.Body.Close()
					cancel()
					if err != nil || !bytes.Equal(b, inlineBody[off:off+n]) {
						t.Errorf("tls %v: %s %d bytes at %d: got %d bytes (equal %v), %v", useTLS, kind, n, off, len(b), bytes.Equal(b, inlineBody[off:off+n]), err)
						return
					}
					completed.Add(1)
				}
			}()
		}
		wg.Wait()
		tr.CloseIdleConnections()
		// A request its client cancelled may still be answered now.
		h.mu.Lock()
		reused := 0
		for _, k := range h.seen {
			if k > 1 {
				reused++
			}
		}
		streams := len(h.seen)
		h.mu.Unlock()
		if completed.Load() == 0 || reused == 0 {
			t.Errorf("tls %v: %d requests completed; %d of %d stream objects answered more than one inline request, want some", useTLS, completed.Load(), reused, streams)
		}
	}
}

// connReuseTest answers /inline/N/OFF as reuseTest does and notes, per
// stream object, the connections it answered on.
type connReuseTest struct {
	reuseTest
	conns map[*stream]map[*Conn]bool
}

func (h *connReuseTest) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	h.mu.Lock()
	st := StreamFromContext(r.Context()).st
	if h.conns[st] == nil {
		h.conns[st] = map[*Conn]bool{}
	}
	h.conns[st][r.Context().Value(ConnContextKey).(*Conn)] = true
	h.mu.Unlock()
	h.serve(w, r)
	return true
}

// TestStreamReuseAcrossConnections: the streams a connection kept for
// reuse serve the first requests of the next connection once it closed
// (h2load opens 100 new connections a run), and that one's bodies are
// right.
func TestStreamReuseAcrossConnections(t *testing.T) {
	h := &connReuseTest{conns: map[*stream]map[*Conn]bool{}}
	ts := startServer(t, h, Config{}, false)
	get := func(tr *Transport, round int) {
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, off := 100+i*37+round, i*11
				res, err := tr.RoundTrip(mustRequest(t, ts.url(fmt.Sprintf("/inline/%d/%d", n, off))))
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || !bytes.Equal(b, inlineBody[off:off+n]) {
					t.Errorf("round %d: %d bytes at %d: got %d bytes, %v", round, n, off, len(b), err)
				}
			}()
		}
		wg.Wait()
	}
	first := &Transport{AllowHTTP: true}
	for round := 0; round < 4; round++ {
		get(first, round)
	}
	first.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.srv.mu.Lock()
		n := len(ts.srv.conns)
		ts.srv.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first connection still served after 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	second := &Transport{AllowHTTP: true}
	defer second.CloseIdleConnections()
	get(second, 4)
	h.mu.Lock()
	defer h.mu.Unlock()
	across := 0
	for _, cs := range h.conns {
		if len(cs) > 1 {
			across++
		}
	}
	if across == 0 {
		t.Errorf("none of %d stream objects served both connections, want some (the first connection's, pooled)", len(h.conns))
	}
}
