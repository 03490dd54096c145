package bench

import (
	"slices"
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

// Per repetition a ratio pairs the runs of one repetition: medians of 4
// and 2 make 2.0, but the repetitions' own ratios are 0.8, 3 and 0.5, and
// the protocol did better in the one above 1 (a rate) or the two below (a
// time).
func TestRatiosPerRepetition(t *testing.T) {
	sc, err := Parse("r.yaml", []byte(strings.Replace(ratiosScenario, "metrics: [rate]", "metrics: [rate_per_s, time]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	sc.Reps = 3
	val := map[string][3]float64{"a-1": {4, 6, 1}, "ref-1": {5, 2, 2}}
	var recs []*experiment.Record
	for _, r := range Plan(sc) {
		if v, ok := val[r.Protocol.Name]; ok {
			recs = append(recs, &experiment.Record{Run: *r, Metrics: map[string]float64{"rate_per_s": v[r.Rep], "time": v[r.Rep]}})
		}
	}
	got := map[string]Ratio{}
	for _, r := range Summarize(sc, recs).Ratios {
		got[r.Labels.Protocol+" "+r.Labels.Metric] = r
	}
	for _, tc := range []struct {
		key   string
		ahead int
	}{{"a-1 rate_per_s", 1}, {"a-1 time", 2}} {
		r := got[tc.key]
		if r.Ratio != 2 || r.Pairs != 3 || r.PairMedian != 0.8 || r.PairMin != 0.5 || r.PairMax != 3 || r.Ahead != tc.ahead {
			t.Errorf("%s: %+v, want ratio 2, 3 pairs, median 0.8 [0.5-3], %d better", tc.key, r, tc.ahead)
		}
	}
}

// With rotate, each family (protocols differing only in the ratios' param)
// takes turns in its places, the others keep theirs: over 2 repetitions
// each of a and ref runs first once under each load.
func TestRotate(t *testing.T) {
	sc, err := Parse("r.yaml", []byte(ratiosScenario+"rotate: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Reps = 4
	var got [][]string
	for _, r := range Plan(sc) {
		if len(got) <= r.Rep {
			got = append(got, nil)
		}
		got[r.Rep] = append(got[r.Rep], r.Protocol.Name)
	}
	even := []string{"a-1", "ref-1", "a-2", "ref-2", "other-2"}
	odd := []string{"ref-1", "a-1", "ref-2", "a-2", "other-2"}
	for rep, want := range [][]string{even, odd, even, odd} {
		if !slices.Equal(got[rep], want) {
			t.Errorf("repetition %d: %v, want %v", rep, got[rep], want)
		}
	}
	if _, err := Parse("r.yaml", []byte(strings.Replace(ratiosScenario, "ratios: {param: server, to: [ref]}", "rotate: true", 1))); err == nil || !strings.Contains(err.Error(), "rotate \"true\": needs ratios") {
		t.Errorf("rotate without ratios: %v", err)
	}
}
