package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/internal/syncio"
	"github.com/shunt-net/shunt/smig"
)

// TestServeSteer: `shunt serve --steer` with two loopback "paths" (the
// client's connections from 127.0.0.1 and 127.0.0.2) and a rule file that
// sends responses of 64 KB or more to the cheap one: an SMig client that
// asks for everything on its exp connection gets the large bodies on its
// cheap one, every body intact.
func TestServeSteer(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "steer.rules")
	if err := os.WriteFile(rules, []byte("size>=64KB -> path=cheap\n* -> path=exp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServe(t, "--steer", rules, "--steer-path", "exp=127.0.0.1@1", "--steer-path", "cheap=127.0.0.2")
	var exp, cheap atomic.Int64
	dial := func(ctx context.Context, from, addr string, n *atomic.Int64) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return syncio.CountingConn{Conn: c, N: n}, nil
	}
	tr := &smig.Transport{AllowHTTP: true,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, "127.0.0.1", addr, &exp) },
		PoolDial: func(ctx context.Context, _ int, _, addr string) (net.Conn, error) {
			return dial(ctx, "127.0.0.2", addr, &cheap)
		}}
	defer tr.CloseIdleConnections()
	const big = 256 << 10
	for _, size := range []int64{big, 1 << 10, big, 20 << 10} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/gen/%d", url, size), nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(content.NewVerifier(0), res.Body)
		res.Body.Close()
		if err != nil || n != size {
			t.Fatalf("/gen/%d: %d bytes, %v", size, n, err)
		}
	}
	if tr.Stats().Migrated.Load() != 2 || cheap.Load() < 2*big || exp.Load() >= big {
		t.Fatalf("moved %d responses; read on exp %d, on cheap %d bytes (large bodies %d)", tr.Stats().Migrated.Load(), exp.Load(), cheap.Load(), 2*big)
	}
}
