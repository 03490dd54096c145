package mph2

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// closeCounter is an HTTP/1.1 transport that only counts its closes.
type closeCounter struct {
	http.RoundTripper
	closes atomic.Int32
}

func (c *closeCounter) CloseIdleConnections() { c.closes.Add(1) }

// A fresh connection whose evFresh is still queued when the download ends
// belongs to no one (the Client adopts it only on the swap): stop closes
// it instead of leaving it open.
func TestStopClosesQueuedFreshConn(t *testing.T) {
	u, err := url.Parse("http://127.0.0.1:1/x")
	if err != nil {
		t.Fatal(err)
	}
	d := newDownload(context.Background(), &Client{Paths: []Path{{Name: "a"}}}, u, nil, Options{}, nil, time.Now())
	h1 := &closeCounter{}
	pc := &pathConn{ready: make(chan struct{}), h1: h1}
	close(pc.ready)
	d.events <- event{kind: evFresh, path: 0, pc: pc}
	d.stop()
	if n := h1.closes.Load(); n != 1 {
		t.Fatalf("queued fresh connection closed %d times at stop, want 1", n)
	}
}
