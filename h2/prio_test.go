package h2

import (
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestPriorityOrdersData holds two responses behind the connection window,
// then opens it: the urgent one (u=1) must be sent entirely first.
func TestPriorityOrdersData(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false)
	rc := dialRaw(t, ts.addr)
	// Use up the connection window (65535, never replenished by us).
	rc.request(1, "/gen/65535", true)
	if rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		return f.Header().StreamID == 1 && f.Header().Flags.Has(http2.FlagDataEndStream)
	}) == nil {
		t.Fatal("first response did not complete")
	}
	for _, r := range []struct {
		id uint32
		p  string
	}{{3, "u=5"}, {5, "u=1"}} {
		blk := rc.block("/gen/60000", hpack.HeaderField{Name: "priority", Value: r.p})
		rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: r.id, BlockFragment: blk, EndStream: true, EndHeaders: true})
	}
	// Wait until both bodies are queued and blocked on the connection window.
	var c *Conn
	deadline := time.Now().Add(5 * time.Second)
	for ready := false; !ready; {
		if time.Now().After(deadline) {
			t.Fatal("responses never became ready")
		}
		time.Sleep(time.Millisecond)
		ts.srv.mu.Lock()
		for k := range ts.srv.conns {
			c = k
		}
		ts.srv.mu.Unlock()
		c.mu.Lock()
		s3, s5 := c.streams[3], c.streams[5]
		ready = s3 != nil && s5 != nil && s3.send.end && s5.send.end && c.sched.Has(3) && c.sched.Has(5)
		c.mu.Unlock()
	}
	rc.fr.WriteWindowUpdate(0, 200000)
	var order []uint32
	ended := 0
	rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			order = append(order, d.StreamID)
			if d.StreamEnded() {
				ended++
			}
		}
		return ended == 2
	})
	if ended != 2 {
		t.Fatalf("responses incomplete, DATA order %v", order)
	}
	seen3 := false
	for _, id := range order {
		seen3 = seen3 || id == 3
		if id == 5 && seen3 {
			t.Fatalf("u=5 stream 3 sent before u=1 stream 5 finished: %v", order)
		}
	}
}
