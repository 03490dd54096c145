package testbed

import (
	"context"
	"fmt"
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
			// A check off target while other processes kept this one's
			// threads waiting for a CPU measured the machine, not the
			// emulator: it is run again, at most twice, and every attempt
			// is logged.
			for attempt := 1; ; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				stall0 := cpuStall(t)
				start := time.Now()
				r, err := c.Run(ctx)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				waited := float64(cpuStall(t)-stall0) / float64(time.Since(start))
				t.Logf("%v; tasks waiting for a CPU %.0f%% of the time", r, 100*waited)
				if r.Pass {
					return
				}
				if waited < 0.05 || attempt == 3 {
					t.Errorf("%s: %.3f %s, want %s", r.Name, r.Measured, r.Unit, r.Target)
					return
				}
			}
		})
	}
}

// cpuStall is the time some task of the machine waited for a CPU (Linux's
// pressure stall information); 0 where the kernel has none, so every
// failure then counts.
func cpuStall(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0
	}
	var avg10, avg60, avg300 float64
	var total int64
	if _, err := fmt.Sscanf(string(b), "some avg10=%f avg60=%f avg300=%f total=%d", &avg10, &avg60, &avg300, &total); err != nil {
		t.Fatalf("/proc/pressure/cpu: %v in %q", err, b)
	}
	return time.Duration(total) * time.Microsecond
}
