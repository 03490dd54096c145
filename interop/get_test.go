package interop

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/peers"
)

// TestShuntGetAgainstPeers: shunt get downloads whole files and ranges from
// nginx and h2o over TLS and h2c; every body is compared with the file.
func TestShuntGetAgainstPeers(t *testing.T) {
	needShunt(t)
	root := t.TempDir()
	small := object{"/small.bin", writeRandom(t, root, "small.bin", 20_000)}
	// Larger than the default stream and connection windows (65535), so
	// the client's WINDOW_UPDATEs are exercised too.
	big := object{"/big.bin", writeRandom(t, root, "big.bin", 5_000_000)}
	cases := []fetchCase{
		{obj: small}, {obj: small, rng: "0-99"}, {obj: small, rng: "-1"},
		{obj: big}, {obj: big, rng: "65535-4000000"}, {obj: big, rng: "4999000-"},
	}
	eachPeer(t, root, func(t *testing.T, p *peers.Peer, _ string, tls bool) {
		for _, c := range cases {
			c.checkGet(t, p.URL(""), tls)
		}
		// -v traces frames: proof the download spoke HTTP/2, not a
		// fallback to HTTP/1.1 after ALPN.
		args := getArgs(p.URL(small.path), filepath.Join(t.TempDir(), "body"), "", tls, "-v")
		b, err := exec.CommandContext(timeout(t, time.Minute), shuntBin, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(b), "SETTINGS") {
			t.Errorf("shunt %s: %v; want a frame trace with SETTINGS, got:\n%s", strings.Join(args, " "), err, b)
		}
	})
}

// eachPeer runs fn in a subtest per server (nginx, h2o) and per TLS
// setting, the server serving root.
func eachPeer(t *testing.T, root string, fn func(t *testing.T, p *peers.Peer, server string, tls bool)) {
	for _, server := range []string{peers.Nginx, peers.H2O} {
		for _, tls := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", server, tls), func(t *testing.T) {
				needTools(t, server)
				p, err := peers.Start(timeout(t, 20*time.Second), server, peers.Options{Root: root, TLS: tls})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Stop() })
				fn(t, p, server, tls)
			})
		}
	}
}

// checkGet downloads c from base (scheme://host:port) with shunt get
// [extra...], checks the body (length and SHA-256) and returns what shunt
// get printed (with -v, its frame trace).
func (c fetchCase) checkGet(t *testing.T, base string, tls bool, extra ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "body")
	args := getArgs(base+c.obj.path, out, c.rng, tls, extra...)
	cmd := exec.CommandContext(timeout(t, time.Minute), shuntBin, args...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("shunt %s: %v\n%s", strings.Join(args, " "), err, b)
		return string(b)
	}
	want := c.obj.body
	if c.rng != "" {
		if want, _, err = peers.RangeOf(c.obj.body, c.rng); err != nil {
			t.Fatal(err)
		}
	}
	if err := peers.VerifyFile(out, want); err != nil {
		t.Errorf("shunt %s: %v", strings.Join(args, " "), err)
	}
	return string(b)
}

// getArgs builds a shunt get command line: h2 over TLS for https (the
// peers' certificates are self-signed), h2c with prior knowledge for http.
// Flags go before the URL, which every flag parser accepts.
func getArgs(url, out, rng string, tls bool, extra ...string) []string {
	args := append([]string{"get", "-o", out}, extra...)
	if tls {
		args = append(args, "--insecure")
	} else {
		args = append(args, "--h2c")
	}
	if rng != "" {
		args = append(args, "--range", rng)
	}
	return append(args, url)
}
