package h2

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestIdleConnHoldsNoWriter: a server connection past the handshake with no
// stream has no writer goroutine and no write buffers (one goroutine per
// idle connection: its reader), and a request on it later starts a writer
// again and is answered in full.
func TestIdleConnHoldsNoWriter(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false)
	const n = 50
	before := runtime.NumGoroutine()
	rcs := make([]*rawClient, n)
	for i := range rcs {
		rcs[i] = dialRaw(t, ts.addr)
		// The server's SETTINGS, then its ACK of ours: the writer has run.
		acked := false
		rcs[i].readUntil(5*time.Second, func(f http2.Frame) bool {
			if sf, ok := f.(*http2.SettingsFrame); ok {
				if !sf.IsAck() {
					rcs[i].fr.WriteSettingsAck()
				}
				acked = acked || sf.IsAck()
			}
			return acked
		})
		if !acked {
			t.Fatal("no SETTINGS ACK from the server")
		}
	}
	ts.srv.mu.Lock()
	conns := make([]*Conn, 0, len(ts.srv.conns))
	for c := range ts.srv.conns {
		conns = append(conns, c)
	}
	ts.srv.mu.Unlock()
	if len(conns) != n {
		t.Fatalf("%d server connections, want %d", len(conns), n)
	}
	for _, c := range conns {
		ended := make(chan struct{})
		go func() { c.writers.Wait(); close(ended) }() // an idle writer ends by itself
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Fatal("the writer of an idle connection still runs after 5 s")
		}
		c.mu.Lock()
		running, kit := c.writerRunning, c.kit
		c.mu.Unlock()
		if running || kit != nil {
			t.Fatalf("idle connection: writer running %v, write buffers %v", running, kit != nil)
		}
	}
	if d := runtime.NumGoroutine() - before; d > n+n/5 {
		t.Errorf("%d more goroutines for %d idle connections, want about one each", d, n)
	}
	rc := rcs[n/2]
	rc.request(1, "/gen/60000", true)
	var got int
	if rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
			got += len(d.Data())
			return d.StreamEnded()
		}
		return false
	}) == nil || got != 60000 {
		t.Fatalf("the request on a connection that was idle got %d of 60000 bytes", got)
	}
}
