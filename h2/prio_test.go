package h2

import (
	"context"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestPriorityOrdersData holds two responses behind the connection window,
// then opens it: the urgent one (u=1) must be sent entirely first.
func TestPriorityOrdersData(t *testing.T) {
	// A response is fully queued when its handler's context ends: the
	// engine ends it after the response is finished.
	queued := make(chan struct{}, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gen/60000" {
			context.AfterFunc(r.Context(), func() { queued <- struct{}{} })
		}
		testHandler().ServeHTTP(w, r)
	})
	ts := startServer(t, h, Config{}, false)
	rc := dialRaw(t, ts.addr)
	rc.useUpWindow(1)
	rc.requestUrgencies("/gen/60000")
	// Wait until both bodies are queued, blocked on the connection window.
	for range 2 {
		select {
		case <-queued:
		case <-time.After(5 * time.Second):
			t.Fatal("responses never became ready")
		}
	}
	rc.fr.WriteWindowUpdate(0, 200000)
	urgentFirst(t, rc.dataOrder(2))
}

// requestUrgencies asks for path on stream 3 at u=5, then on stream 5 at u=1.
func (rc *rawClient) requestUrgencies(path string) {
	for _, r := range []struct {
		id uint32
		p  string
	}{{3, "u=5"}, {5, "u=1"}} {
		blk := rc.block(path, hpack.HeaderField{Name: "priority", Value: r.p})
		rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: r.id, BlockFragment: blk, EndStream: true, EndHeaders: true})
	}
}

// urgentFirst checks that requestUrgencies' u=1 stream 5 was sent whole
// before any DATA of u=5 stream 3.
func urgentFirst(t *testing.T, order []uint32) {
	t.Helper()
	seen3 := false
	for _, id := range order {
		seen3 = seen3 || id == 3
		if id == 5 && seen3 {
			t.Fatalf("u=5 stream 3 sent before u=1 stream 5 finished: %v", order)
		}
	}
}
