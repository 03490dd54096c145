package emulated

import (
	"os"
	"path/filepath"
	"testing"
)

// Shipped scenarios name step files from the repository root and traces
// under shared/; from this package's directory neither exists as written.
func TestResolveTrace(t *testing.T) {
	got, err := resolveTrace("step:bench/scenarios/mph2-fig16-lte.step")
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(got[len("step:"):]) || filepath.Base(got) != "mph2-fig16-lte.step" || got[:len("step:")] != "step:" {
		t.Errorf("step file resolved to %q, want step:/.../bench/scenarios/mph2-fig16-lte.step", got)
	}
	if _, err := os.Stat(got[len("step:"):]); err != nil {
		t.Errorf("resolved step file: %v", err)
	}
	abs := filepath.Join(t.TempDir(), "x.down")
	if got, err := resolveTrace("trace:" + abs); err != nil || got != "trace:"+abs {
		t.Errorf("absolute path: %q, %v; want it unchanged", got, err)
	}
	if got, err := resolveTrace("emulated.go"); err != nil || got != "emulated.go" {
		t.Errorf("path existing from the working directory: %q, %v; want it unchanged", got, err)
	}
}
