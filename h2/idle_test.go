package h2

import (
	"context"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/http2"
)

// TestIdleConnHoldsNoWriter: a server connection past the handshake with no
// stream has no writer goroutine, no write buffers and no grace timer (one
// goroutine per idle connection: its reader), and a request on it later
// starts a writer again and is answered in full.
func TestIdleConnHoldsNoWriter(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false)
	const n = 50
	before := runtime.NumGoroutine()
	rcs := idleClients(t, ts, n)
	conns := serverConns(ts)
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
		running, kit, timer := c.writerRunning, c.kit, c.graceTimer
		c.mu.Unlock()
		if running || kit != nil || timer != nil {
			t.Fatalf("idle connection: writer running %v, write buffers %v, grace timer %v", running, kit != nil, timer != nil)
		}
	}
	if d := runtime.NumGoroutine() - before; d > n+n/5 {
		t.Errorf("%d more goroutines for %d idle connections, want about one each", d, n)
	}
	getGen(t, rcs[n/2], 1, 60000)
}

// idleClients opens n connections past the handshake: the server's
// SETTINGS, then its ACK of ours (its writer has run).
func idleClients(t *testing.T, ts *testServer, n int) []*rawClient {
	t.Helper()
	rcs := make([]*rawClient, n)
	for i := range rcs {
		rcs[i] = dialRawTS(t, ts)
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
	return rcs
}

func serverConns(ts *testServer) []*Conn {
	ts.srv.mu.Lock()
	defer ts.srv.mu.Unlock()
	conns := make([]*Conn, 0, len(ts.srv.conns))
	for c := range ts.srv.conns {
		conns = append(conns, c)
	}
	return conns
}

// getGen asks for /gen/size on stream id and checks the body's length.
func getGen(t *testing.T, rc *rawClient, id uint32, size int) {
	t.Helper()
	rc.request(id, "/gen/"+strconv.Itoa(size), true)
	var got int
	if rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == id {
			got += len(d.Data())
			return d.StreamEnded()
		}
		return false
	}) == nil || got != size {
		t.Fatalf("the request on a connection that was idle got %d of %d bytes", got, size)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after 5 s: %s", what)
		}
	}
}

// parkedCount is how many of conns are parked, having given up their
// read Framer (and its buffer).
func parkedCount(conns []*Conn) int {
	n := 0
	for _, c := range conns {
		c.mu.Lock()
		if c.parkedNow && c.rfr == nil {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// TestIdleConnParks: quiet connections served detached, h2c and TLS, hold
// no goroutine (their sockets wait in the parker's epoll set); a request
// on one is answered in full, and it parks again after; a client's close
// ends a parked connection on the server, and Shutdown ends the rest.
func TestIdleConnParks(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "h2c", true: "tls"}[useTLS], func(t *testing.T) { testIdleConnParks(t, useTLS) })
	}
}

func testIdleConnParks(t *testing.T, useTLS bool) {
	ts := startServer(t, testHandler(), Config{}, useTLS)
	const n = 50
	before := runtime.NumGoroutine()
	rcs := idleClients(t, ts, n)
	conns := serverConns(ts)
	waitFor(t, "every idle connection parked", func() bool { return parkedCount(conns) == n })
	if d := runtime.NumGoroutine() - before; d > n/5 {
		t.Errorf("%d more goroutines for %d parked connections, want none", d, n)
	}
	for id := uint32(1); id <= 5; id += 2 {
		getGen(t, rcs[n/2], id, 20000) // three of them within the connection window
		waitFor(t, "the connection parked again after its request", func() bool { return parkedCount(conns) == n })
	}
	rcs[0].nc.Close()
	waitFor(t, "a parked connection the client closed ended", func() bool { return len(serverConns(ts)) == n-1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(ctx) }()
	for _, rc := range rcs[1:] {
		if f := rc.readUntil(5*time.Second, func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }); f == nil {
			t.Fatal("a parked connection got no GOAWAY from Shutdown")
		}
		rc.nc.Close()
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown with %d parked connections: %v", n-1, err)
	}
}

// TestParkedConnIdleTimeout: the idle timeout still ends a parked
// connection (GOAWAY, then the server closes).
func TestParkedConnIdleTimeout(t *testing.T) {
	ts := startServer(t, testHandler(), Config{IdleTimeout: 300 * time.Millisecond}, false)
	rc := idleClients(t, ts, 1)[0]
	conns := serverConns(ts)
	waitFor(t, "the idle connection parked", func() bool { return parkedCount(conns) == 1 })
	if f := rc.readUntil(5*time.Second, func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }); f == nil {
		t.Fatal("no GOAWAY after the idle timeout")
	}
	rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, rc.nc); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
	waitFor(t, "the server forgot the connection", func() bool { return len(serverConns(ts)) == 0 })
}

// TestWriterOutlivesBurst: the writer stays, with its buffers, for
// the grace (Config.writerGrace) after the connection's last stream closes, so a client that
// opens the next stream at once does not start a new writer per burst.
func TestWriterOutlivesBurst(t *testing.T) {
	ts := startServer(t, testHandler(), Config{writerGrace: time.Hour}, false)
	rc := dialRaw(t, ts.addr)
	for id := uint32(1); id <= 5; id += 2 {
		getGen(t, rc, id, 20000)
		conns := serverConns(ts)
		if len(conns) != 1 {
			t.Fatalf("%d server connections, want 1", len(conns))
		}
		c := conns[0]
		// END_STREAM was collected, so the stream is closed by now.
		c.mu.Lock()
		active, running, kit := c.activePeer, c.writerRunning, c.kit
		c.mu.Unlock()
		if active != 0 || !running || kit == nil {
			t.Fatalf("after stream %d: %d open streams, writer running %v, write buffers %v; want 0, true, true", id, active, running, kit != nil)
		}
	}
}

// TestGraceGrowsForReturningClient: a client that opens a stream soon
// after its connection's writer ended for want of streams finds the
// writer, its buffers and its reader kept longer the next time it turns
// quiet (quietGrace), and the connection still lets them go and parks
// once quiet for longer.
func TestGraceGrowsForReturningClient(t *testing.T) {
	const base = 200 * time.Millisecond
	ts := startServer(t, testHandler(), Config{writerGrace: base}, false)
	rc := dialRaw(t, ts.addr)
	getGen(t, rc, 1, 20000)
	conns := serverConns(ts)
	if len(conns) != 1 {
		t.Fatalf("%d server connections, want 1", len(conns))
	}
	c := conns[0]
	writerEnded := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.writerRunning && c.kit == nil
	}
	waitFor(t, "the writer ended after the base grace", writerEnded)
	getGen(t, rc, 3, 20000) // back at once: the grace becomes twice that quiet spell, 400 ms or more
	// The stream closed before its last DATA reached us; a loaded machine
	// only makes the writer end later.
	answered := time.Now()
	waitFor(t, "the writer ended after the longer grace", writerEnded)
	if lived := time.Since(answered); lived < base*5/4 {
		t.Fatalf("the writer ended %v after the stream's answer, within about the base grace (%v), though its client came back just after the last one", lived, base)
	}
	waitFor(t, "the connection parked after the longer grace", func() bool { return parkedCount(conns) == 1 })
}

// TestConnSizeClass: the Conn is most of an idle connection's heap, and the
// allocator rounds it up to its size class. It fits 1,536 bytes; with a
// copy of the Config in each (144 bytes) it was 1,600, in the 1,792 class.
// State an idle connection does not need can go behind a pointer.
func TestConnSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > 1536 {
		t.Errorf("Conn is %d bytes, over the 1,536-byte size class", n)
	}
}

// TestBusyPublishesOnlyChanges: busy mirrors whether busyN is above zero,
// and is written only when that changes (two atomic adds per request,
// on a line the reader and writer share, cost ~6 % of the CPU at 1 KB).
func TestBusyPublishesOnlyChanges(t *testing.T) {
	var c Conn
	c.addBusyLocked(1)
	if c.busy.Load() != 1 {
		t.Fatalf("one stream open: busy %d, want 1", c.busy.Load())
	}
	c.busy.Store(7) // marks whether the next changes write it
	c.addBusyLocked(1)
	c.addBusyLocked(-1)
	if c.busy.Load() != 7 {
		t.Fatalf("busy written (%d) while the count stayed above zero", c.busy.Load())
	}
	c.addBusyLocked(-1)
	if c.busy.Load() != 0 || c.busyN != 0 {
		t.Fatalf("quiet: busy %d, count %d, want 0 and 0", c.busy.Load(), c.busyN)
	}
}
