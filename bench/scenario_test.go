package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

func TestShippedScenariosParse(t *testing.T) {
	names := Shipped()
	for _, want := range []string{"holb", "mobile-conns", "mobile-page"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("scenario %s not shipped (have %v)", want, names)
		}
	}
	for _, n := range names {
		s, _, err := Load(n)
		if err != nil {
			t.Errorf("shipped scenario %s: %v", n, err)
			continue
		}
		if s.Name != n {
			t.Errorf("shipped file %s.yaml names itself %q", n, s.Name)
		}
	}
}

func TestParseErrorsNameFileAndField(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown field", strings.Replace(fakeScenario, "seed: 7", "seed: 7\nrepz: 3", 1), []string{"x.yaml", "repz", "not found"}},
		{"unknown link field", strings.Replace(fakeScenario, "delay: 5ms, rate: 100Mbit", "delay: 5ms, rait: 100Mbit", 1), []string{"x.yaml", "rait"}},
		{"bad delay", strings.Replace(fakeScenario, "delay: 5ms, rate", "delay: 5, rate", 1), []string{"x.yaml", "conditions[0].paths[0].down.delay", `"5"`}},
		{"bad topology", strings.Replace(fakeScenario, "topology: single", "topology: ring", 1), []string{"conditions[0].topology", "ring"}},
		{"two paths on single", strings.Replace(fakeScenario, "paths: [{name: p, down: {delay: 5ms, rate: 100Mbit}, up: {delay: 5ms}}]", "paths: [{name: p}, {name: q}]", 1), []string{"conditions[0].paths", "needs 1 path"}},
		{"zero reps", strings.Replace(fakeScenario, "reps: 3", "reps: 0", 1), []string{"reps", "at least 1"}},
		{"duplicate protocol", strings.Replace(fakeScenario, "{name: b, driver: fake}", "{name: a, driver: fake}", 1), []string{"protocols[1].name", "duplicate"}},
		{"slash in name", strings.Replace(fakeScenario, "name: small", "name: a/b", 1), []string{"objects[0].name", "slashes"}},
		{"background_after alone", strings.Replace(fakeScenario, "{name: big, size: 1MB}", "{name: big, size: 1MB, background_after: 1MB}", 1), []string{"objects[1].background_after", "needs background"}},
		{"bad timeout", strings.Replace(fakeScenario, "seed: 7", "seed: 7\ntimeout: soon", 1), []string{"timeout", "soon"}},
		{"empty", "", []string{"x.yaml", "empty"}},
		// Without a delay too: the check must not hide behind the delay's.
		{"rate and trace, no delay", strings.Replace(fakeScenario, "up: {delay: 5ms}", "up: {rate: 10Mbit, trace: x.down}", 1), []string{"conditions[0].paths[0].up", "rate and trace are exclusive"}},
	} {
		_, err := Parse("x.yaml", []byte(tc.yaml))
		wantErrorMentioning(t, tc.name, err, tc.want)
	}
}

func TestCheckUsesDriversAndNetworks(t *testing.T) {
	s, err := Parse("fake.yaml", []byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	reg := Drivers{"fake": &fakeDriver{}}
	if err := s.Check(reg, &fakeFactory{}); err != nil {
		t.Fatalf("valid scenario: %v", err)
	}
	s.Protocols[1].Driver = "nope"
	s.Protocols[0].Params = map[string]string{"speed": "warp"}
	s.Conditions[1].Paths[0].Down.Rate = "bogus"
	err = s.Check(reg, &fakeFactory{})
	for _, w := range []string{`protocols[1].driver "nope": unknown driver`, `protocols[0] (a) with objects[0] (small): params.speed "warp"`, `conditions[1] (slow): paths[0].down.rate "bogus"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Check error %v lacks %q", err, w)
		}
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.25, 2}, {0.5, 3}, {0.75, 4}, {1, 5}} {
		if got := Quantile(v, tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := Quantile([]float64{1, 2}, 0.25); got != 1.25 {
		t.Errorf("interpolated p25 of {1,2} = %v, want 1.25", got)
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("quantile of nothing must be NaN")
	}
}

func TestSummarizeOrderAndReference(t *testing.T) {
	s, err := Parse("fake.yaml", []byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*experiment.Record
	for i, r := range Plan(s) {
		recs = append(recs, &experiment.Record{Run: *r, Metrics: map[string]float64{"time": float64(r.Rep + 1)}})
		if i == 0 { // a duplicate failed record of a run that succeeded: ignored
			recs = append(recs, &experiment.Record{Run: *r, Error: "old failure"})
		}
	}
	sum := Summarize(s, recs)
	if len(sum.Cells) != 8 {
		t.Fatalf("%d cells, want 8", len(sum.Cells))
	}
	first := sum.Cells[0]
	if first.Labels != (Labels{"fast", "a", "small", "time"}) || first.N != 3 || first.Errors != 0 || first.P25 != 1.5 || first.P50 != 2 || first.P75 != 2.5 {
		t.Errorf("first cell %+v", first)
	}
	if first.Reference == nil || first.Reference.Value != 0.05 {
		t.Errorf("reference not matched: %+v", first.Reference)
	}
	if sum.Cells[1].Labels.Object != "big" || sum.Cells[1].Reference != nil {
		t.Errorf("second cell %+v: want fast/a/big without reference", sum.Cells[1])
	}
	if last := sum.Cells[7].Labels; last != (Labels{"slow", "b", "big", "time"}) {
		t.Errorf("last cell %+v", last)
	}
	s.Metrics = []string{"time", "open"}
	var order []string
	for _, c := range Summarize(s, []*experiment.Record{{Run: *Plan(s)[0], Metrics: map[string]float64{"a": 1, "open": 1, "time": 1, "b": 1}}}).Cells {
		order = append(order, c.Labels.Metric)
	}
	if strings.Join(order, ",") != "time,open,a,b" {
		t.Errorf("metric order %v, want the scenario's then by name", order)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(fakeScenario))
	for _, n := range Shipped() {
		data, err := shipped.ReadFile("scenarios/" + n + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		// A valid scenario plans reps x the cross product, with distinct IDs.
		n := s.Reps * len(s.Conditions) * len(s.Protocols) * len(s.Objects)
		if s.Reps > 10000 || n > 10000 {
			return
		}
		runs := Plan(s)
		if len(runs) != n {
			t.Fatalf("plan has %d runs, want %d", len(runs), n)
		}
		ids := map[string]bool{}
		for _, r := range runs {
			if ids[r.ID] {
				t.Fatalf("duplicate run ID for %+v", r)
			}
			ids[r.ID] = true
		}
	})
}

func TestSummarizeFailedCellTakesTheObjectsMetric(t *testing.T) {
	s, err := Parse("fake.yaml", []byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*experiment.Record
	for _, r := range Plan(s) {
		rec := &experiment.Record{Run: *r, Metrics: map[string]float64{"time": 1}}
		if r.Protocol.Name == "b" && r.Object.Name == "big" {
			rec.Metrics, rec.Error = nil, "stalled"
		}
		recs = append(recs, rec)
	}
	for _, c := range Summarize(s, recs).Cells {
		if c.Labels.Metric != "time" {
			t.Errorf("cell %+v: failed runs not filed under the object's metric", c.Labels)
		}
		if c.Labels.Protocol == "b" && c.Labels.Object == "big" && (c.N != 0 || c.Errors != 3) {
			t.Errorf("cell %+v: n=%d errors=%d, want 0 and 3", c.Labels, c.N, c.Errors)
		}
	}
}

// wantErrorMentioning fails the test unless err is an error whose text
// contains every string of want: rejections must say what is wrong.
func wantErrorMentioning(t *testing.T, name string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", name)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", name, err, w)
		}
	}
}

func TestUnitOf(t *testing.T) {
	for metric, want := range map[string]string{
		"time": "s", "plt": "s", "kbit_per_s": "kbit/s", "mb_per_s": "MB/s", "cpu_per_req_us": "µs",
		"latency_p99_ms": "ms", "rss_kb": "KB", "dup_pct": "%", "switches_count": "count",
		"failed": "count", "smig_failed": "count", "goroutines_max": "count", "fds_max": "count",
		"rss_mib_max": "MiB",
	} {
		if got := UnitOf(metric); got != want {
			t.Errorf("UnitOf(%q) = %q, want %q", metric, got, want)
		}
	}
}
