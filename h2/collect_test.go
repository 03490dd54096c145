package h2

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/shunt-net/shunt/h2/internal/prio"
)

// TestPacedBatchSendsSmallResponseWhole: on a slow link a paced writer
// takes batches of a few KB. A 10 KB response that arrives while a bulk
// one is being sent goes out in the next batch as one frame, not cut to the
// batch's size and interleaved with the bulk response's frames (holb's 10
// KB during 50 MB: each cut put another bulk frame, 3.3 ms at 10 Mbit/s,
// between its pieces).
func TestPacedBatchSendsSmallResponseWhole(t *testing.T) {
	nc, peer := net.Pipe()
	defer peer.Close()
	cfg := Config{}.withDefaults()
	c := newConn(nc, &cfg, false, context.Background())
	defer c.nc.Close()
	c.takeWriteBuffers()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writerRunning = true // the test plays the writer: none is started
	c.sendWin.Add(1 << 30)
	queue := func(id uint32, n int, end bool) *stream {
		st := c.newStream(id, false)
		st.send.headers = true
		st.prio = prio.Priority{Urgency: 3, Incremental: true}
		st.send.q.Write(make([]byte, n))
		st.send.end = end
		c.releaseLocked(st)
		return st
	}
	const budget = 4 << 10 // half an 8 KB mark, the window full
	queue(1, 256<<10, false)
	if b := c.collectLocked(nil, budget); len(b) != 1 || b[0].id != 1 || len(b[0].data) != budget {
		t.Fatalf("the bulk response's batch: %v", frames(b))
	}
	queue(3, 10_000, true)
	b := c.collectLocked(nil, budget)
	if len(b) == 0 || b[0].id != 3 || len(b[0].data) != 10_000 || !b[0].end {
		t.Fatalf("the batch after a 10,000-byte response arrived: %v, want its whole body first", frames(b))
	}
	// A bulk response is still cut to the budget.
	if b := c.collectLocked(nil, budget); len(b) != 1 || b[0].id != 1 || len(b[0].data) != budget {
		t.Fatalf("the next batch: %v", frames(b))
	}
}

// frames describes a batch's DATA frames for failures.
func frames(b []wframe) []string {
	var out []string
	for _, f := range b {
		out = append(out, itoa64(int64(f.id))+":"+itoa64(int64(len(f.data))))
	}
	return out
}

// TestClosedConnReturnsWriteKit: a connection closed while its writer runs
// gives the writer's kit back (h2load closes 100 connections at the end of
// a run and opens 100 new ones, which otherwise took new kits).
func TestClosedConnReturnsWriteKit(t *testing.T) {
	h, conns := servedConn(testHandler())
	// A grace far longer than the test: the writer is running at the close.
	ts := startServer(t, h, Config{writerGrace: time.Minute}, false)
	tr := newTestTransport(ts)
	res, err := tr.RoundTrip(mustRequest(t, ts.url("/gen/5")))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	c := <-conns
	c.mu.Lock()
	running := c.writerRunning
	c.mu.Unlock()
	if !running {
		t.Fatal("the writer ended before the close; the test needs it running")
	}
	tr.CloseIdleConnections()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the server connection did not end after the client closed")
	}
	c.writers.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kit != nil || c.bw != nil {
		t.Fatal("the closed connection still holds its write kit")
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// servedConn wraps h to pass on the first request's connection.
func servedConn(h http.Handler) (http.Handler, <-chan *Conn) {
	conns := make(chan *Conn, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case conns <- r.Context().Value(ConnContextKey).(*Conn):
		default:
		}
		h.ServeHTTP(w, r)
	}), conns
}

// TestWriteKitKeepsControlQueues: a kit given back keeps the control
// queues' grown arrays (putWriteBuffersLocked calls keepQueuesLocked), and
// the next connection takes them with the kit when its writer starts
// (takeWriteBuffers), so its queue does not grow again: each new
// connection of h2load -c 100 grew its own to 16 frames, its first burst.
func TestWriteKitKeepsControlQueues(t *testing.T) {
	cfg := Config{}.withDefaults()
	conn := func() *Conn {
		nc, peer := net.Pipe()
		t.Cleanup(func() { nc.Close(); peer.Close() })
		c := newConn(nc, &cfg, false, context.Background())
		c.writerRunning = true // the test plays the writer: none is started
		return c
	}
	queue := func(c *Conn, n int) {
		for i := 0; i < n; i++ {
			c.queueLocked(wframe{kind: wPing, ping: [8]byte{byte(i)}})
		}
	}
	a := conn()
	kit := new(writeKit) // not the pool's: its queues would be another connection's
	a.kit = kit
	a.mu.Lock()
	queue(a, 20)
	a.collectLocked(nil, 0)
	queue(a, 20)
	a.collectLocked(nil, 0)
	grown := min(cap(a.ctrl), cap(a.spare))
	kit.keepQueuesLocked(a)
	a.mu.Unlock()
	if grown < 20 || a.ctrl != nil || a.spare != nil || min(cap(kit.queues[0]), cap(kit.queues[1])) != grown {
		t.Fatalf("kept %d and %d frames' arrays of %d, the connection's now %d and %d; want both grown ones in the kit",
			cap(kit.queues[0]), cap(kit.queues[1]), grown, cap(a.ctrl), cap(a.spare))
	}

	b := conn()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ctrl = nil // newConn's SETTINGS: the frame that starts the writer comes next
	b.queueLocked(wframe{kind: wSettings})
	b.kit = kit // as takeWriteBuffers would take it from the pool, when the writer starts
	b.useKitQueuesLocked()
	if cap(b.ctrl) < grown || cap(b.spare) < grown || kit.queues[0] != nil || kit.queues[1] != nil {
		t.Fatalf("with the kit the queues hold %d and %d frames, the kit %d and %d; want the kit's arrays (%d) in use",
			cap(b.ctrl), cap(b.spare), cap(kit.queues[0]), cap(kit.queues[1]), grown)
	}
	for round := 0; round < 2; round++ {
		before := cap(b.ctrl)
		queue(b, 20)
		if cap(b.ctrl) != before {
			t.Fatalf("round %d: the queue grew from %d to %d frames", round, before, cap(b.ctrl))
		}
		got := b.collectLocked(nil, 0)
		if round == 0 {
			if len(got) == 0 || got[0].kind != wSettings {
				t.Fatalf("first batch %v, want the SETTINGS queued before the writer took the kit first", got)
			}
			got = got[1:]
		}
		if len(got) != 20 || got[19].ping[0] != 19 {
			t.Fatalf("round %d: batch of %d frames, want the 20 queued in order", round, len(got))
		}
	}
}
