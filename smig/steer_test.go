package smig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/internal/syncio"
)

// TestSteer: a Steer that sends responses of 64 KB or more to the client's
// other connection moves exactly those, before their first body byte: the
// pooled connection (opened by PoolDial) reads their bodies, the primary
// only the small ones, and every body is intact. The first, asked for
// before the pooled connection exists, waits for it.
func TestSteer(t *testing.T) {
	const big = 256 << 10
	s := &Server{SteerWait: 5 * time.Second, Steer: func(_ *http.Request, hdr http.Header, from *h2.Conn, conns []*h2.Conn) *h2.Conn {
		if n, _ := strconv.ParseInt(hdr.Get("Content-Length"), 10, 64); n >= 64<<10 {
			if len(conns) == 1 {
				return nil // wait for the other
			}
			return conns[len(conns)-1]
		}
		return from
	}}
	ts := startWith(t, s, true, nil)
	var primary, pooled atomic.Int64
	dial := func(ctx context.Context, addr string, n *atomic.Int64) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return syncio.CountingConn{Conn: c, N: n}, nil
	}
	var poolIDs atomic.Int64
	poolDialed := make(chan struct{})
	var once sync.Once
	tr := &Transport{AllowHTTP: true,
		// The pooled connection is dialed with the primary, not after it.
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			select {
			case <-poolDialed:
			case <-time.After(5 * time.Second):
				return nil, errors.New("the pooled connection was not dialed with the primary")
			}
			return dial(ctx, addr, &primary)
		},
		PoolDial: func(ctx context.Context, id int, _, addr string) (net.Conn, error) {
			poolIDs.Add(int64(id))
			once.Do(func() { close(poolDialed) })
			return dial(ctx, addr, &pooled)
		}}
	defer tr.CloseIdleConnections()
	fetch(t, tr, ts.url+"/gen/262144", big)
	if got := poolIDs.Load(); got != 1 {
		t.Fatalf("PoolDial ids summed to %d, want one call with id 1", got)
	}
	sizes := []int64{1 << 10, big, 10 << 10, big, 20 << 10, big, 5 << 10, big}
	errs := make([]error, len(sizes))
	var wg sync.WaitGroup
	for i, size := range sizes {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", fmt.Sprintf("%s/gen/%d", ts.url, size), nil)
			res, err := tr.RoundTrip(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			n, err := io.Copy(content.NewVerifier(0), res.Body)
			if err == nil && n != size {
				err = fmt.Errorf("%d of %d bytes", n, size)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("object %d (%d bytes): %v", i, sizes[i], err)
		}
	}
	// A HEAD response has no body to move.
	req, _ := http.NewRequest("HEAD", fmt.Sprintf("%s/gen/%d", ts.url, big), nil)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := s.Stats().Migrations.Load(); got != 5 {
		t.Fatalf("server moved %d responses, want the 5 large ones (logs: %v)", got, drain(ts.logs))
	}
	if got := tr.Stats().Migrated.Load(); got != 5 {
		t.Fatalf("client linked %d moved responses, want 5", got)
	}
	if p := pooled.Load(); p < 5*big {
		t.Fatalf("the pooled connection read %d bytes, less than the large bodies' %d", p, 5*big)
	}
	if p := primary.Load(); p >= big {
		t.Fatalf("the primary read %d bytes: large bodies went on it", p)
	}
}

// TestSteerGivesUp: a client that opens no second connection gets its
// response after SteerWait, on its one connection, and the next response
// of that connection does not wait again.
func TestSteerGivesUp(t *testing.T) {
	const big = 256 << 10
	s := &Server{SteerWait: 100 * time.Millisecond, Steer: func(_ *http.Request, _ http.Header, _ *h2.Conn, conns []*h2.Conn) *h2.Conn {
		if len(conns) == 1 {
			return nil
		}
		return conns[1]
	}}
	ts := startWith(t, s, true, nil)
	tr := &Transport{AllowHTTP: true, Pool: PoolConfig{OnDemand: true}}
	defer tr.CloseIdleConnections()
	for range 2 {
		fetch(t, tr, fmt.Sprintf("%s/gen/%d", ts.url, big), big)
	}
	if w, m := s.Stats().SteerWaits.Load(), s.Stats().Migrations.Load(); w != 1 || m != 0 {
		t.Fatalf("%d responses waited, %d moved; want 1 and 0", w, m)
	}
}
