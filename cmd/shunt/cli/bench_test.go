package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tinyScenario = `
name: tiny
reps: 1
seed: 1
timeout: TIMEOUT
conditions:
  - {name: lan, topology: single, paths: [{name: lan, down: {delay: 1ms}, up: {delay: 1ms}}]}
protocols:
  - {name: tcp, driver: DRIVER}
objects:
  - {name: o, size: 10KB}
`

func writeScenario(t *testing.T, driver, timeout string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tiny.yaml")
	s := strings.NewReplacer("DRIVER", driver, "TIMEOUT", timeout).Replace(tinyScenario)
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// A scenario refused before any run leaves no output directory.
func TestBenchRejectedScenarioLeavesNoOutput(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: shunt bench checks for it before the scenario")
	}
	out := filepath.Join(t.TempDir(), "out")
	err := runBench(context.Background(), []string{writeScenario(t, "nosuchdriver", "10s"), "--out", out})
	if err == nil || !strings.Contains(err.Error(), "unknown driver") {
		t.Fatalf("bench with an unknown driver: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output directory left behind: %v", err)
	}
}

// A sweep whose runs failed exits with an error, after writing its report.
func TestBenchFailedRunsAreAnError(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	out := filepath.Join(t.TempDir(), "out")
	err := runBench(context.Background(), []string{writeScenario(t, "tcp", "1ns"), "--out", out})
	if err == nil || !strings.Contains(err.Error(), "1 of 1 runs failed") {
		t.Errorf("bench whose only run timed out: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Errorf("no report for the failed sweep: %v", err)
	}
}

func TestBenchListTakesNoScenario(t *testing.T) {
	if err := runBench(context.Background(), []string{"--list", "holb"}); err == nil {
		t.Error("bench --list holb: no error")
	}
}

func TestBenchSlurmFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"holb", "--array", "4"}, "go with --slurm"},
		{[]string{"holb", "--", "--partition=x"}, "go with --slurm"},
		{[]string{"holb", "--slurm", "--shard", "1/2"}, "not --shard"},
		{[]string{"holb", "--slurm", "--array", "-1"}, "positive"},
		{[]string{"holb", "--slurm", "--json", "s.json"}, "--json goes with the merge"},
	} {
		err := runBench(context.Background(), tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	args, rest := splitDashDash([]string{"holb", "--slurm", "--", "--time=1", "--", "x"})
	if strings.Join(args, " ") != "holb --slurm" || strings.Join(rest, " ") != "--time=1 -- x" {
		t.Errorf("splitDashDash: %q %q", args, rest)
	}
}
