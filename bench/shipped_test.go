package bench_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment/emulated"
)

// Every shipped scenario's links parse, and their trace files are found.
func TestShippedScenariosLinksParse(t *testing.T) {
	f := &emulated.Factory{Shipped: bench.ShippedFile}
	for _, n := range bench.Shipped() {
		s, _, err := bench.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Conditions {
			if err := f.Check(c); err != nil {
				t.Errorf("scenario %s condition %s: %v", n, c.Name, err)
			}
		}
	}
}

// The step files shipped scenarios name are built in, byte for byte, so a
// built shunt finds them outside the repository (emulated.Factory.Shipped).
func TestShippedStepFileBuiltIn(t *testing.T) {
	want, err := os.ReadFile("scenarios/mph2-fig16-lte.step")
	if err != nil {
		t.Fatal(err)
	}
	got, err := bench.ShippedFile("bench/scenarios/mph2-fig16-lte.step")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("ShippedFile: %d bytes, %v; want the file's %d", len(got), err, len(want))
	}
	if _, err := bench.ShippedFile("bench/scenarios/nope.step"); err == nil {
		t.Error("a file that is not shipped was found")
	}
}
