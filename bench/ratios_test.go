package bench

import (
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

const ratiosScenario = `
name: ratios
reps: 1
seed: 1
metrics: [rate]
conditions:
  - {name: c, topology: loopback}
protocols:
  - {name: a-1, driver: fake, params: {server: a, load: "1"}}
  - {name: ref-1, driver: fake, params: {server: ref, load: "1"}}
  - {name: a-2, driver: fake, params: {server: a, load: "2"}}
  - {name: ref-2, driver: fake, params: {server: ref, load: "2"}}
  - {name: other-2, driver: other, params: {server: ref, load: "2"}}
objects:
  - {name: o}
ratios: {param: server, to: [ref]}
`

// Each protocol is set against the reference under its own load only, and
// never against a protocol of another driver.
func TestRatios(t *testing.T) {
	sc, err := Parse("r.yaml", []byte(ratiosScenario))
	if err != nil {
		t.Fatal(err)
	}
	rate := map[string]float64{"a-1": 30, "ref-1": 60, "a-2": 10, "ref-2": 40, "other-2": 1}
	var recs []*experiment.Record
	for _, r := range Plan(sc) {
		recs = append(recs, &experiment.Record{Run: *r, Metrics: map[string]float64{"rate": rate[r.Protocol.Name]}})
	}
	sum := Summarize(sc, recs)
	got := map[string]float64{}
	for _, r := range sum.Ratios {
		if r.To != "ref" || r.Labels.Metric != "rate" {
			t.Errorf("ratio %+v", r)
		}
		got[r.Labels.Protocol+"/"+r.Peer] = r.Ratio
	}
	want := map[string]float64{"a-1/ref-1": 0.5, "a-2/ref-2": 0.25}
	if len(got) != len(want) || got["a-1/ref-1"] != 0.5 || got["a-2/ref-2"] != 0.25 {
		t.Errorf("ratios %v, want %v", got, want)
	}
}

func TestRatiosValidate(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"to: [ref]", "to: [nobody]", `ratios.to[0] "nobody": no protocol has server nobody`},
		{"to: [ref]", "to: []", "ratios.to: name at least one"},
		{"param: server, ", "", "ratios.param: missing"},
		{"metrics: [rate]\n", "", "ratios.metrics: name the metrics"},
	} {
		_, err := Parse("r.yaml", []byte(strings.Replace(ratiosScenario, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: error %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}
