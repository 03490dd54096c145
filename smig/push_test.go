package smig

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
)

// pushRoot answers /push/N with a short page and pushes /gen/N with it.
func pushRoot(t *testing.T) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, ok := strings.CutPrefix(r.URL.Path, "/push/")
			if !ok {
				h.ServeHTTP(w, r)
				return
			}
			if err := w.(http.Pusher).Push("/gen/"+n, nil); err != nil {
				t.Errorf("push /gen/%s: %v", n, err)
			}
			io.WriteString(w, "page")
		})
	}
}

type pushResult struct {
	path string
	n    int64
	err  error
}

// A pushed response migrates like a requested one: the server moves the
// pushed stream (MigSW) to the client's idle connection and the client's
// push handler reads one in-order body.
func TestPushedStreamMigrates(t *testing.T) {
	const size = 4 << 20
	for _, useTLS := range []bool{false, true} {
		name := "h2c"
		if useTLS {
			name = "TLS"
		}
		t.Run(name, func(t *testing.T) {
			var srvCfg, cliCfg *tls.Config
			if useTLS {
				srvCfg, cliCfg = tlsPair(t, 0)
			}
			ts := startServerTLS(t, Policy{Kind: MigSW, Threshold: 1 << 20}, true, srvCfg, pushRoot(t))
			got := make(chan pushResult, 1)
			tr := &Transport{AllowHTTP: true, TLSClientConfig: cliCfg, Config: h2.Config{
				OnPush: func(c *h2.Conn, req *http.Request, res *http.Response) {
					defer res.Body.Close()
					n, err := io.Copy(content.NewVerifier(0), res.Body)
					got <- pushResult{req.URL.Path, n, err}
				},
			}}
			defer tr.CloseIdleConnections()
			fetch(t, tr, ts.url+"/gen/10240", 10<<10)
			waitBound(t, tr)
			req, _ := http.NewRequest("GET", ts.url+"/push/4194304", nil)
			res, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			page, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || string(page) != "page" {
				t.Fatalf("page: %q, %v", page, err)
			}
			select {
			case p := <-got:
				if p.path != "/gen/4194304" || p.n != size || p.err != nil {
					t.Fatalf("pushed %s: %d of %d bytes, %v", p.path, p.n, size, p.err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("pushed response not received within 20 s")
			}
			if ts.s.Stats().Migrations.Load() != 1 || tr.Stats().Migrated.Load() != 1 {
				t.Fatalf("server migrated %d, client linked %d, want 1 each (logs: %v)",
					ts.s.Stats().Migrations.Load(), tr.Stats().Migrated.Load(), drain(ts.logs))
			}
			// Counted when the server's copy returns, which may be after
			// the client read the last byte.
			waitCount(t, "moved bytes", ts.s.Stats().MovedBytes.Load, 1)
			if moved := ts.s.Stats().MovedBytes.Load(); moved > size {
				t.Fatalf("moved %d bytes of %d", moved, size)
			}
		})
	}
}
