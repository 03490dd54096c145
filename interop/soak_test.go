package interop

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/experiment/soak"
)

// TestSoak runs experiment soak (driver "soak": shunt serve, without and
// with --smig migsw, under rounds of h2load with mixed object sizes and
// connection counts, 100 idle h2c connections held open, and with SMig a
// shunt SMig client checking 4 MB downloads beside the load) on loopback
// for SHUNT_SOAK (default 25 s each: the CI version). It fails as a run of
// the experiment does: a failed request or download, a lost idle
// connection, goroutines or open files that do not come back down once the
// load stops, or RSS that keeps growing (soak.Summary.Check).
//
//	SHUNT_SOAK=10m go test -run 'TestSoak/smig=false' -v -timeout 30m ./interop
func TestSoak(t *testing.T) {
	needTools(t, "h2load")
	needShunt(t)
	dur := 25 * time.Second
	if v := os.Getenv("SHUNT_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SHUNT_SOAK=%q: want a duration", v)
		}
		dur = d
	}
	for _, policy := range []string{"", "migsw:1048576"} {
		t.Run(fmt.Sprintf("smig=%v", policy != ""), func(t *testing.T) {
			c := soak.DefaultConfig()
			c.Duration, c.SMig, c.Binary = dur, policy, shuntBin
			env, err := emulated.LocalEnv(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			env.Log = logWriter{t}
			ctx := context.Background()
			sess, err := soak.Kind.Start(ctx, env, c)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			res, err := sess.Run(ctx, &experiment.Run{})
			n := res.Counts
			for k, v := range res.Metrics {
				n[k] = v
			}
			t.Logf("soak smig=%q: %.0f s, %.0f h2load rounds, %.0f requests (%.1f GB of bodies), %.0f failed; SMig client: %.0f downloads of 4 MB verified, %.0f failed, %.0f migrated; idle h2c connections alive at the end %.0f/%.0f",
				policy, n["duration_s"], n["rounds"], n["requests"], n["body_bytes"]/1e9, n["failed"], n["smig_done"], n["smig_failed"], n["smig_migrated"], n["idle_alive"], n["idle"])
			t.Logf("soak smig=%q: RSS MiB start %.1f end %.1f max %.1f (first third's peak %.1f, last third's %.1f); goroutines start %.0f end %.0f max %.0f; open files start %.0f end %.0f max %.0f; %.0f samples",
				policy, n["rss_mib_start"], n["rss_mib_end"], n["rss_mib_max"], n["rss_mib_first_third_peak"], n["rss_mib_last_third_peak"],
				n["goroutines_start"], n["goroutines_end"], n["goroutines_max"], n["fds_start"], n["fds_end"], n["fds_max"], n["samples"])
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// logWriter sends an experiment's diagnostics to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
