package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

const bestOfScenario = `
name: best
reps: 3
seed: 1
metrics: [time, ideal]
conditions:
  - {name: c1, topology: single, paths: [{name: p}]}
  - {name: c2, topology: single, paths: [{name: p}]}
protocols:
  - {name: mp, driver: fake}
  - {name: m-128k, driver: fake}
  - {name: m-1m, driver: fake}
  - {name: tcp, driver: fake}
objects:
  - {name: small}
  - {name: big}
best_of:
  - {name: m-best, protocols: [m-128k, m-1m], compare: [mp]}
reference:
  - {protocol: m-best, object: big, metric: time, value: 9, source: paper}
`

// TestBestOf: the derived row takes, per condition and object, the member
// with the lowest median time (not the lowest mean or minimum), carries that
// member's cells for every metric, sits right after its last member, and
// mp's ratio is to that member's median.
func TestBestOf(t *testing.T) {
	s, err := Parse("best.yaml", []byte(bestOfScenario))
	if err != nil {
		t.Fatal(err)
	}
	// time per (condition, protocol, object) and rep.
	times := map[string][3]float64{
		"c1/m-128k/small": {1, 1, 1}, "c1/m-1m/small": {2, 2, 2}, "c1/mp/small": {0.5, 0.5, 0.5},
		// median decides: m-1m's minimum (1) and mean (~3.3) do not
		"c1/m-128k/big": {5, 5, 5}, "c1/m-1m/big": {1, 4, 5}, "c1/mp/big": {3, 3, 3},
		// every run of m-128k failed (NaN): m-1m is best even though slower on paper
		"c2/m-128k/small": {math.NaN(), math.NaN(), math.NaN()}, "c2/m-1m/small": {8, 8, 8}, "c2/mp/small": {6, 6, 6},
		// no member has a run: no derived cell, no comparison
		"c2/m-128k/big": {math.NaN(), math.NaN(), math.NaN()}, "c2/m-1m/big": {math.NaN(), math.NaN(), math.NaN()}, "c2/mp/big": {1, 1, 1},
	}
	var recs []*experiment.Record
	for _, r := range Plan(s) {
		v, ok := times[r.Condition.Name+"/"+r.Protocol.Name+"/"+r.Object.Name]
		if !ok {
			continue
		}
		if math.IsNaN(v[r.Rep]) {
			recs = append(recs, &experiment.Record{Run: *r, Error: "failed"})
			continue
		}
		recs = append(recs, &experiment.Record{Run: *r, Metrics: map[string]float64{"time": v[r.Rep], "ideal": 10 * v[r.Rep]}})
	}
	sum := Summarize(s, recs)

	got := map[Labels]Cell{}
	var c1Protos []string
	for _, c := range sum.Cells {
		got[c.Labels] = c
		if c.Labels.Condition == "c1" && c.Labels.Object == "small" && c.Labels.Metric == "time" {
			c1Protos = append(c1Protos, c.Labels.Protocol)
		}
	}
	if strings.Join(c1Protos, ",") != "mp,m-128k,m-1m,m-best" {
		t.Errorf("c1/small rows %v, want the derived row right after its last member", c1Protos)
	}
	for _, tc := range []struct {
		cond, obj, from string
		p50             float64
	}{
		{"c1", "small", "m-128k", 1},
		{"c1", "big", "m-1m", 4},
		{"c2", "small", "m-1m", 8},
	} {
		for metric, scale := range map[string]float64{"time": 1, "ideal": 10} {
			c, ok := got[Labels{tc.cond, "m-best", tc.obj, metric}]
			if !ok {
				t.Errorf("%s/%s %s: no m-best cell", tc.cond, tc.obj, metric)
				continue
			}
			if c.From != tc.from || c.P50 != tc.p50*scale || c.N != 3 {
				t.Errorf("%s/%s %s: m-best from %q median %v n %d, want %q %v n 3", tc.cond, tc.obj, metric, c.From, c.P50, c.N, tc.from, tc.p50*scale)
			}
		}
	}
	if c := got[Labels{"c1", "m-best", "big", "time"}]; c.Reference == nil || c.Reference.Value != 9 {
		t.Errorf("m-best's reference not matched: %+v", c.Reference)
	}
	if _, ok := got[Labels{"c2", "m-best", "big", "time"}]; ok {
		t.Error("c2/big: a derived cell without any successful member")
	}

	want := []Comparison{
		{"c1", "small", "time", "mp", "m-best", "m-128k", 0.5},
		{"c1", "big", "time", "mp", "m-best", "m-1m", 0.75},
		{"c2", "small", "time", "mp", "m-best", "m-1m", 0.75},
	}
	if len(sum.Comparisons) != len(want) {
		t.Fatalf("comparisons %+v, want %+v", sum.Comparisons, want)
	}
	for i, w := range want {
		if g := sum.Comparisons[i]; g != w {
			t.Errorf("comparison %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestBestOfValidate(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"protocols: [m-128k, m-1m]", "protocols: [m-128k, m-2m]", `best_of[0].protocols[1] "m-2m": no such protocol`},
		{"protocols: [m-128k, m-1m]", "protocols: [m-128k]", "best_of[0].protocols: needs at least 2"},
		{"compare: [mp]", "compare: [mq]", `best_of[0].compare[0] "mq": no such protocol`},
		{"name: m-best", "name: tcp", `best_of[0].name "tcp": names a protocol`},
		{"name: m-best", "name: m best", `best_of[0].name "m best": must not contain spaces`},
		{"{name: m-best,", "{", "best_of[0].name: missing"},
	} {
		_, err := Parse("best.yaml", []byte(strings.Replace(bestOfScenario, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: error %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}
