package h2

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

const h2specPath = "/root/go/bin/h2spec"

// TestH2Spec runs h2spec in strict mode against the server over h2c (prior
// knowledge) and over TLS, and fails unless every test passes.
func TestH2Spec(t *testing.T) {
	bin := h2specPath
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("h2spec"); err != nil {
			t.Skip("h2spec not installed: go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible")
		}
	}
	for _, mode := range []struct {
		name string
		tls  bool
	}{{"h2c", false}, {"tls", true}} {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, testHandler(), Config{}, mode.tls)
			_, port, _ := net.SplitHostPort(ts.addr)
			args := []string{"-S", "-h", "127.0.0.1", "-p", port, "-o", "2"}
			if mode.tls {
				args = append(args, "-t", "-k")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			m := regexp.MustCompile(`(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("h2spec output has no summary:\n%s", out)
			}
			total, _ := strconv.Atoi(string(m[1]))
			passed, _ := strconv.Atoi(string(m[2]))
			t.Logf("h2spec strict %s: %d/%d passed", mode.name, passed, total)
			if os.Getenv("H2SPEC_VERBOSE") != "" {
				t.Logf("%s", out)
			}
			if passed != total {
				t.Errorf("h2spec strict %s: %d of %d passed:\n%s", mode.name, passed, total, failures(out))
			}
		})
	}
}

// failures keeps the failure section of h2spec's output.
func failures(out []byte) []byte {
	if i := regexp.MustCompile(`(?m)^Failures:`).FindIndex(out); i != nil {
		return out[i[0]:]
	}
	return out
}
