package experiment

import (
	"strings"
	"testing"
)

func TestParseLoadavg(t *testing.T) {
	for _, tc := range []struct {
		in          string
		l1, l5, l15 float64
		err         string
	}{
		{in: "0.52 0.58 0.59 1/467 12345\n", l1: 0.52, l5: 0.58, l15: 0.59},
		{in: "3.00 2.5 1", l1: 3, l5: 2.5, l15: 1},
		{in: "0.52 0.58", err: "want three"},
		{in: "0.52 x 0.59 1/2 3", err: `parsing "x"`},
		{in: "", err: "want three"},
	} {
		l1, l5, l15, err := parseLoadavg(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || l1 != tc.l1 || l5 != tc.l5 || l15 != tc.l15 {
			t.Errorf("%q: %v %v %v %v", tc.in, l1, l5, l15, err)
		}
	}
}

func FuzzParseLoadavg(f *testing.F) {
	f.Add("0.52 0.58 0.59 1/467 12345\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _, _, _ = parseLoadavg(s) // must not panic
	})
}

func TestReadNodeNames(t *testing.T) {
	t.Setenv("SHUNT_NODE", "")
	t.Setenv("SLURMD_NODENAME", "n17")
	if n, _ := ReadNode(); n.Name != "n17" {
		t.Errorf("under Slurm: node %q, want the Slurm node n17", n.Name)
	}
	t.Setenv("SHUNT_NODE", "k8s-node-3")
	n, err := ReadNode()
	if n.Name != "k8s-node-3" {
		t.Errorf("with SHUNT_NODE: node %q", n.Name)
	}
	if err != nil || n.Kernel == "" || n.CPUs < 1 {
		t.Errorf("this Linux machine: %+v, %v", n, err)
	}
}
