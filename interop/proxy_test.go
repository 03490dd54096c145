package interop

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/peers"
)

// TestCurlThroughProxy: curl -x through shunt proxy (two paths: source
// addresses 127.0.0.1 and 127.0.0.2) fetches from nginx, h2o and shunt
// serve in cleartext (MP-H2: the large object split, the small one on one
// path) and over TLS (CONNECT, passed through); every body is compared with
// the file by length and SHA-256, and an unreachable origin is a 502.
func TestCurlThroughProxy(t *testing.T) {
	needShunt(t)
	needTools(t, "curl")
	root := t.TempDir()
	objs := []object{
		{"/small.bin", writeRandom(t, root, "small.bin", 20_000)},
		{"/big.bin", writeRandom(t, root, "big.bin", 6_000_000)},
	}
	px := startListening(t, "http", "proxy", "--listen", "127.0.0.1:0", "--path", "a=127.0.0.1", "--path", "b=127.0.0.2")
	check := func(t *testing.T, base string) {
		for _, o := range objs {
			out := filepath.Join(t.TempDir(), "body")
			args := []string{"-sS", "--fail", "-k", "-x", "http://" + px.addr, "-o", out, base + o.path}
			if b, err := exec.CommandContext(timeout(t, time.Minute), "curl", args...).CombinedOutput(); err != nil {
				t.Errorf("curl %s: %v\n%s", strings.Join(args, " "), err, b)
				continue
			}
			if err := peers.VerifyFile(out, o.body); err != nil {
				t.Errorf("curl -x %s %s: %v", px.addr, base+o.path, err)
			}
		}
	}
	t.Run("shunt", func(t *testing.T) { check(t, startShunt(t, root, false).base) })
	t.Run("shunt/tls=true", func(t *testing.T) { check(t, startShunt(t, root, true).base) })
	eachPeer(t, root, func(t *testing.T, p *peers.Peer, _ string, _ bool) { check(t, p.URL("")) })

	t.Run("origin-down", func(t *testing.T) {
		args := []string{"-s", "-x", "http://" + px.addr, "-w", "\n%{http_code}", "http://127.0.0.1:1/x"}
		b, err := exec.CommandContext(timeout(t, time.Minute), "curl", args...).Output()
		if out := string(b); err != nil || !strings.HasSuffix(out, "\n502") || !strings.Contains(out, "127.0.0.1:1") {
			t.Errorf("curl %s: %v\n%s\nwant a 502 naming the origin", strings.Join(args, " "), err, b)
		}
	})
}
