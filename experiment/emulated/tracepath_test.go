package emulated

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Shipped scenarios name step files from the repository root and traces
// under shared/; from this package's directory neither exists as written.
func TestResolveTrace(t *testing.T) {
	f := &Factory{}
	got, err := f.resolveTrace("step:bench/scenarios/mph2-fig16-lte.step")
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
	if got, err := f.resolveTrace("trace:" + abs); err != nil || got != "trace:"+abs {
		t.Errorf("absolute path: %q, %v; want it unchanged", got, err)
	}
	if got, err := f.resolveTrace("emulated.go"); err != nil || got != "trace:emulated.go" {
		t.Errorf("path existing from the working directory: %q, %v; want it unchanged", got, err)
	}
}

// A built shunt run outside any repository still finds the step files of
// the shipped scenarios: they are built in (Factory.Shipped) and written out
// on demand.
func TestResolveShippedStepOutsideRepository(t *testing.T) {
	want := []byte("0 10Mbit\n1050ms 1Mbit\n")
	f := &Factory{Shipped: func(name string) ([]byte, error) {
		if name != "bench/scenarios/mph2-fig16-lte.step" {
			return nil, os.ErrNotExist
		}
		return want, nil
	}}
	t.Setenv("TMPDIR", t.TempDir())
	t.Chdir(t.TempDir()) // no go.mod above a fresh temporary directory
	for range 2 {        // the second call reuses the first call's copy
		got, err := f.traceFile("bench/scenarios/mph2-fig16-lte.step")
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, want) {
			t.Fatalf("%s: %v; want the shipped step file's %d bytes", got, err, len(want))
		}
	}
	if _, err := f.traceFile("bench/scenarios/nope.step"); err == nil {
		t.Error("a step file that is not shipped resolved")
	}
}
