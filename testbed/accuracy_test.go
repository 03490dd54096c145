package testbed

import (
	"context"
	"os"
	"testing"
	"time"
)

// requireNet skips tests that need root and /dev/net/tun.
func requireNet(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testbed: needs root (network namespaces, TUN devices)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("testbed: needs /dev/net/tun: %v", err)
	}
}

// TestAccuracy runs every check of Checks and fails on a figure off target;
// -v prints the figures with their configuration.
func TestAccuracy(t *testing.T) {
	requireNet(t)
	if testing.Short() {
		t.Skip("testbed: accuracy checks take about 30 s; skipped with -short")
	}
	if raceEnabled {
		t.Skip("testbed: accuracy is measured without -race (scripts/test runs it in a step of its own)")
	}
	for _, c := range Checks {
		t.Run(c.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := c.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r)
			if !r.Pass {
				t.Errorf("%s: %.3f %s, want %s", r.Name, r.Measured, r.Unit, r.Target)
			}
		})
	}
}
