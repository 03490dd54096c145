package mph2

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/faults"
)

// stuckConn stops delivering after left bytes, as a TCP connection whose
// link came back while its retransmission timer had backed off does
// (h65's testbed: lte's socket stuck for 8-14 s after the gap, its receive
// window full behind 6 lost segments): reads block until it is closed,
// writes still go out.
type stuckConn struct {
	net.Conn
	left   int64 // read by the connection's one reader only
	closed chan struct{}
	once   sync.Once
}

func (c *stuckConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		<-c.closed
		return 0, net.ErrClosed
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	k, err := c.Conn.Read(p)
	c.left -= int64(k)
	return k, err
}

func (c *stuckConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// stuckPath is loopPath at rate whose first connection gets stuck after
// after bytes while the link works: connections dialed later deliver.
func stuckPath(name string, rate float64, after int64) Path {
	p := loopPath(name, rate, 0)
	dial := p.Dial
	var dials atomic.Int32
	p.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil || dials.Add(1) > 1 {
			return c, err
		}
		return &stuckConn{Conn: c, left: after, closed: make(chan struct{})}, nil
	}
	return p
}

// A path whose connection is stuck while its link works is dialed afresh
// once it is suspended, and re-admitted within about a second (a dial each
// freshEvery) instead of after TCP's retransmission timer: beside a
// working path, and alone. Before, the stuck path stayed suspended to the
// end of the download (beside another) or the download failed at its stall
// timeout (alone). Every download is checked by length and SHA-256.
func TestStuckPathDialedAfresh(t *testing.T) {
	const size = 16 << 20
	const stuckAfter = 1 << 20
	tally := faults.New(t)
	url := startServer(t, nil) + fmt.Sprintf("/gen/%d", size)
	for _, c := range []struct {
		name  string
		paths []Path
	}{
		{"beside another", []Path{loopPath("a", 4e6, 0), stuckPath("b", 4e6, stuckAfter)}},
		{"alone", []Path{stuckPath("b", 8e6, stuckAfter)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := &Client{Paths: c.paths, PathTimeout: 500 * time.Millisecond, StallTimeout: 6 * time.Second}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			f := newMemFile(size)
			res, err := cl.Download(ctx, url, f, Options{Size: size})
			if err != nil {
				f.checkWritten(t)
				tally.Count(faults.Failed)
				t.Fatalf("download: %v", err)
			}
			if o, n, err := tally.Read(f.reader(), faults.Gen(size, 0)); o != faults.Verified || res.Size != size {
				t.Fatalf("%v after %d bytes (%d written): %v", o, n, res.Size, err)
			}
			b := res.Paths[len(res.Paths)-1]
			t.Logf("%v; path b: %d suspension(s) for %v, %d redial(s), %d bytes delivered; paths %+v", res.Total, b.Suspensions, b.Suspended, b.Redials, b.Delivered, res.Paths)
			// Suspended 0.5 s after its last byte (PathTimeout), back on a
			// fresh connection within freshEvery: it delivers again.
			if b.Suspensions < 1 || b.Redials < 1 || b.Suspended > 1500*time.Millisecond || b.Delivered <= stuckAfter {
				t.Errorf("path b: %d suspension(s) for %v, %d redial(s), %d bytes delivered: want it suspended, dialed afresh within 1.5 s, and delivering again",
					b.Suspensions, b.Suspended, b.Redials, b.Delivered)
			}
			// Every byte a path delivered came as DATA on one of its
			// connections, the stuck one's last frame read in part
			// included (before, Received counted whole frames only).
			for _, p := range res.Paths {
				if p.Received < p.Delivered {
					t.Errorf("path %s: received %d DATA bytes, fewer than the %d it delivered", p.Name, p.Received, p.Delivered)
				}
			}
		})
	}
}
