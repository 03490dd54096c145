package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

func TestWriteNodes(t *testing.T) {
	sc := &bench.Scenario{Name: "s", Protocols: []experiment.Protocol{{Name: "a"}, {Name: "b"}}, Metrics: []string{"time"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id, shard, node string, start time.Duration, v float64) *experiment.Record {
		return &experiment.Record{
			Run:   experiment.Run{ID: id, Protocol: experiment.Protocol{Name: "a"}, Condition: experiment.Condition{Name: "c"}, Object: experiment.Object{Name: "o"}},
			Start: t0.Add(start), Duration: 60, Shard: shard, Metrics: map[string]float64{"time": v},
			Node: &experiment.Node{Name: node, Kernel: "6.1.0", Load1: v},
		}
	}
	recs := []*experiment.Record{mk("1", "1/3", "n1", 0, 1), mk("2", "2/3", "n2", 0, 2), mk("3", "3/3", "n1", time.Hour, 3)}
	var b bytes.Buffer
	if err := writeNodes(&b, sc, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"nodes: a time,",
		"n1    6.1.0   2     0.750  1.000  1.250  1.00-3.00", // ratios 0.5 and 1.5 to the median 2
		"n2    6.1.0   1     1.000  1.000  1.000  2.00-2.00",
		"3/3    n1     1     1m0s  1m0s",
		"projected wall time on N nodes (the tasks in index order, as Slurm starts an array; merge excluded): 1: 3m0s, 2: 2m0s, 3: 1m0s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	for _, r := range recs {
		r.Node = nil
	}
	if err := writeNodes(&b, sc, recs); err != nil || b.Len() != 0 {
		t.Errorf("records without nodes printed %q (%v)", b.String(), err)
	}
}
