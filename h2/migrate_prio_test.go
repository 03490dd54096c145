package h2

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestMigratedStreamKeepsPriority moves two responses from connection A to
// connection B with SMig's hooks while B's connection window is used up,
// then opens it: B must send the continuations at their requests'
// priorities (RFC 9218), not at the default u=3 sequential, which sends
// them one after the other in the order they were moved. A PRIORITY_UPDATE
// for the source stream reaches its continuation.
func TestMigratedStreamKeepsPriority(t *testing.T) {
	const size = 60000 // 4 DATA frames each, within a stream's window
	const extType = http2.FrameType(0xee)
	for _, tc := range []struct {
		name   string
		prio   [2]string // of requests 1 and 3 on A (continuations 2 and 4 on B)
		update string    // PRIORITY_UPDATE for request 3 once it is moved
		check  func(first, last map[uint32]int) error
	}{
		{"incremental", [2]string{"u=2, i", "u=2, i"}, "", func(first, last map[uint32]int) error {
			if last[2] < first[4] || last[4] < first[2] {
				return fmt.Errorf("not interleaved")
			}
			return nil
		}},
		{"urgency", [2]string{"u=5", "u=1"}, "", wantBefore(4, 2)},
		{"update", [2]string{"u=5", "u=5"}, "u=1", wantBefore(4, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns := make(chan *Conn, 2)
			var dst *Conn
			opened := make(chan uint32)
			proceed := make(chan struct{})
			failed := make(chan error, 2) // the handler's
			copied := make(chan error, 2) // CopyTo's
			mux := http.NewServeMux()
			mux.Handle("/gen/", testHandler())
			mux.HandleFunc("/move/", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", itoa64(size))
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				d, err := dst.OpenMigratedStream(func(uint32) Frame { return Frame{Type: extType} })
				if err != nil {
					failed <- err
					return
				}
				tail, err := StreamFromContext(r.Context()).DetachSend(Frame{Type: extType, Flags: 1})
				if err != nil {
					failed <- err
					return
				}
				go func() {
					_, err := tail.CopyTo(d)
					copied <- err
				}()
				opened <- d.ID()
				<-proceed
				writeGen(w, size)
			})
			ts := startServer(t, mux, Config{OnSettings: func(c *Conn) { conns <- c }}, false)
			a := dialRaw(t, ts.addr)
			src := <-conns
			b := dialRaw(t, ts.addr)
			dst = <-conns
			b.useUpWindow(1)
			for i, id := range []uint32{1, 3} {
				blk := a.block(fmt.Sprintf("/move/%d", id), hpack.HeaderField{Name: "priority", Value: tc.prio[i]})
				a.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk, EndStream: true, EndHeaders: true})
				select {
				case d := <-opened:
					if want := uint32(2 * (i + 1)); d != want {
						t.Fatalf("request %d continues on stream %d, want %d", id, d, want)
					}
				case err := <-failed:
					t.Fatalf("moving request %d: %v", id, err)
				case <-time.After(5 * time.Second):
					t.Fatalf("request %d was not moved", id)
				}
				if id == 3 && tc.update != "" {
					a.fr.WritePriorityUpdate(3, tc.update)
					waitPrio(t, src, 3, tc.update)
				}
				proceed <- struct{}{}
			}
			for range 2 {
				select {
				case err := <-copied:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the moved bodies were not queued on B")
				}
			}
			// Both bodies wait whole on B: let them go and record the order.
			b.fr.WriteWindowUpdate(0, 200000)
			order := b.dataOrder(2)
			first, last := map[uint32]int{}, map[uint32]int{}
			for i, id := range order {
				if _, ok := first[id]; !ok {
					first[id] = i
				}
				last[id] = i
			}
			if err := tc.check(first, last); err != nil {
				t.Fatalf("%v: DATA order on B %v", err, order)
			}
		})
	}
}

// wantBefore checks that stream a's DATA all went before b's.
func wantBefore(a, b uint32) func(first, last map[uint32]int) error {
	return func(first, last map[uint32]int) error {
		if last[a] > first[b] {
			return fmt.Errorf("stream %d not sent before %d", a, b)
		}
		return nil
	}
}

// waitPrio waits until the server connection c has taken stream id's
// PRIORITY_UPDATE to want.
func waitPrio(t *testing.T, c *Conn, id uint32, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		st := c.streams.get(id)
		got := st != nil && st.prio.String() == want
		c.mu.Unlock()
		if got {
			return
		}
	}
	t.Fatalf("stream %d never took priority %q", id, want)
}
