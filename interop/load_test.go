package interop

import (
	"fmt"
	"testing"
	"time"

	"github.com/shunt-net/shunt/peers"
)

// TestH2loadAgainstShunt: h2load's requests all succeed, over TLS and h2c,
// and every response carries the whole object. h2load's exit code says
// nothing about failed requests, hence the parsed counts.
func TestH2loadAgainstShunt(t *testing.T) {
	needTools(t, "h2load")
	root := t.TempDir()
	writeRandom(t, root, "16k.bin", 16_000)
	for _, tls := range []bool{false, true} {
		srv := startShunt(t, root, tls)
		for _, obj := range []struct {
			path string
			size int64
		}{{"/16k.bin", 16_000}, {"/gen/16KB", 16_000}, {"/gen/1MB", 1_000_000}} {
			t.Run(fmt.Sprintf("tls=%v%s", tls, obj.path), func(t *testing.T) {
				n := 20_000
				if obj.size > 100_000 {
					n = 1_000 // 1 GB in total: enough to cycle every window many times
				}
				l := peers.Load{URLs: []string{srv.url(obj.path)}, Requests: n, Clients: 10, Streams: 10}
				r, out, err := peers.H2load(timeout(t, 2*time.Minute), l)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if r.Succeeded != n || r.Status[0] != n || r.DataBytes != int64(n)*obj.size {
					t.Errorf("h2load -n %d -c 10 -m 10 %s: %d succeeded, %d 2xx, %d body bytes; want %d, %d, %d\n%s",
						n, obj.path, r.Succeeded, r.Status[0], r.DataBytes, n, n, int64(n)*obj.size, out)
				}
				t.Logf("%s tls=%v: %.0f req/s, %.1f MB/s (noisy: shared 2-core machine)", obj.path, tls, r.ReqPerSec, r.BytesPerSec/1e6)
			})
		}
	}
}

// TestH2specShunt: shunt serve passes every h2spec case in strict mode over
// TLS and h2c.
func TestH2specShunt(t *testing.T) {
	needTools(t, "h2spec")
	root := t.TempDir()
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			checkH2spec(t, startShunt(t, root, tls), tls)
		})
	}
}

// checkH2spec runs every h2spec case in strict mode against srv.
func checkH2spec(t *testing.T, srv *shuntServer, tls bool) {
	t.Helper()
	host, port := splitHostPort(t, srv.addr)
	r, out, err := peers.H2spec(timeout(t, 5*time.Minute), peers.Conformance{Host: host, Port: port, TLS: tls, Strict: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Failed != 0 || r.Skipped != 0 || r.Passed != r.Tests {
		t.Errorf("h2spec -S tls=%v: %d tests, %d passed, %d skipped, %d failed: %v\n%s",
			tls, r.Tests, r.Passed, r.Skipped, r.Failed, r.Failures, out)
	}
	t.Logf("h2spec -S tls=%v: %d/%d passed", tls, r.Passed, r.Tests)
}
