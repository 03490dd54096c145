package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/replay"
)

const figScenario = `
name: f
reps: 3
seed: 1
conditions:
  - {name: rtt0, topology: single, paths: [{name: l, down: {rate: 10Mbit}, up: {rate: 10Mbit}}]}
  - {name: rtt20, topology: single, paths: [{name: l, down: {delay: 10ms, rate: 10Mbit, loss: 1.5%}, up: {delay: 10ms}}]}
  - {name: rtt200, topology: single, paths: [{name: l, down: {delay: 100ms, rate: 2Mbit}, up: {delay: 100ms}}]}
protocols:
  - {name: h1-6, driver: replay}
  - {name: h2, driver: replay}
objects:
  - {name: google}
  - {name: dmm}
plots:
  - {metric: plt, x: rtt}
waterfalls: {condition: rtt20, metric: plt}
`

// figPLT is the synthetic page load time: h2 is twice as fast, dmm ten
// times slower than google, each RTT category adds a second, reps spread it.
func figPLT(r *experiment.Run) float64 {
	v := float64(1+condIndex(r.Condition.Name)) * float64(r.Rep+1)
	if r.Protocol.Name == "h2" {
		v /= 2
	}
	if r.Object.Name == "dmm" {
		v *= 10
	}
	return v
}

func condIndex(name string) int {
	return map[string]int{"rtt0": 0, "rtt20": 1, "rtt200": 2}[name]
}

// synthLoad is a two-object load taking plt seconds: the root, then an image
// queued for a stream, and a computation of the root.
func synthLoad(plt float64, compute bool) *replay.Result {
	ms := func(v float64) time.Duration { return time.Duration(v * plt * float64(time.Second)) }
	return &replay.Result{Page: "p", Compute: compute, PLT: ms(1), Bytes: 3000,
		Objects: []replay.ObjectTiming{
			{ID: "r1", MIME: "text/html", Size: 1000, Ready: 0, Request: 0, FirstByte: ms(0.2), Done: ms(0.3)},
			{ID: "r2", MIME: "image/png", Size: 2000, Ready: ms(0.4), Request: ms(0.5), FirstByte: ms(0.7), Done: ms(1)},
		},
		Comps: []replay.CompTiming{{ID: "r1_c1", Object: "r1", Type: "evalhtml", Start: ms(0.3), Done: ms(0.4)}},
	}
}

func writeFigSweep(t *testing.T) (string, *bench.Scenario) {
	t.Helper()
	dir, sc := newSweepDir(t, figScenario)
	var recs []*experiment.Record
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range bench.Plan(sc) {
		plt := figPLT(r)
		load, err := json.Marshal(synthLoad(plt, false))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &experiment.Record{Run: *r, Start: start.Add(time.Duration(i) * time.Second),
			Metrics: map[string]float64{"plt": plt}, Info: map[string]string{LoadInfo: string(load)}})
	}
	if err := experiment.WriteRecords(filepath.Join(dir, bench.RunsFile), recs); err != nil {
		t.Fatal(err)
	}
	return dir, sc
}

func TestEveryPlotXHasAParameter(t *testing.T) {
	for _, x := range bench.PlotX {
		if _, ok := xParams[x]; !ok {
			t.Errorf("bench.PlotX %q has no xParams entry", x)
		}
	}
	if len(xParams) != len(bench.PlotX) {
		t.Errorf("xParams has %d entries, bench.PlotX %d", len(xParams), len(bench.PlotX))
	}
}

func TestConditionX(t *testing.T) {
	sc, err := bench.Parse("f.yaml", []byte(figScenario))
	if err != nil {
		t.Fatal(err)
	}
	for x, want := range map[string]string{"rtt": "0 20 200", "loss": "0 1.5 0", "rate": "10 10 2"} {
		got, err := conditionX(sc, x)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%s: %v %v, want %s", x, got, err, want)
		}
	}
	sc.Conditions[0].Paths[0].Down.Rate = ""
	if _, err := conditionX(sc, "rate"); err == nil || !strings.Contains(err.Error(), "condition rtt0") {
		t.Errorf("rate of an unshaped link: %v, want an error naming the condition", err)
	}
}

func TestLineDataMediansPerProtocolAndRTT(t *testing.T) {
	dir, sc := writeFigSweep(t)
	recs, err := experiment.ReadRecords(filepath.Join(dir, bench.RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	// h2 at rtt200 failed every run: its line must skip that category.
	for _, r := range recs {
		if r.Protocol.Name == "h2" && r.Condition.Name == "rtt200" {
			r.Metrics, r.Error = nil, "timeout"
		}
	}
	d, err := lineData(sc, bench.Summarize(sc, recs), sc.Plots[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.ticks, ",") != "0,20,200" || strings.Join(d.objs, ",") != "google,dmm" || strings.Join(d.protos, ",") != "h1-6,h2" {
		t.Fatalf("ticks %v objects %v protocols %v", d.ticks, d.objs, d.protos)
	}
	// Reps 0..2 give (k+1)*{1,2,3}: median 2(k+1), p25 1.5(k+1), p75 2.5(k+1).
	h1 := d.pts["dmm"]["h1-6"]
	if len(h1.XYs) != 3 {
		t.Fatalf("dmm h1-6 has %d points, want 3", len(h1.XYs))
	}
	for k, xy := range h1.XYs {
		if xy.Y != 20*float64(k+1) || h1.YErrors[k].Low != 5*float64(k+1) || h1.YErrors[k].High != 5*float64(k+1) {
			t.Errorf("dmm h1-6 point %d: %v %v", k, xy, h1.YErrors[k])
		}
		if int(xy.X+0.5) != k || xy.X >= float64(k) {
			t.Errorf("dmm h1-6 point %d at x %v: want left of category %d", k, xy.X, k)
		}
	}
	h2 := d.pts["google"]["h2"]
	if len(h2.XYs) != 2 || h2.XYs[1].Y != 2 || h2.XYs[1].X <= 1 {
		t.Errorf("google h2: %v, want 2 points, the second median 2 right of category 1", h2.XYs)
	}
	// dmm's lowest p25 is h2's at rtt0 (5, 10, 15), its highest p75 h1-6's at rtt200.
	if lo, hi := slices.Min(d.vals["dmm"]), slices.Max(d.vals["dmm"]); lo != 7.5 || hi != 75 {
		t.Errorf("dmm range %v-%v, want 7.5-75", lo, hi)
	}
	if _, err := lineData(sc, bench.Summarize(sc, recs), bench.PlotSpec{Metric: "ttfb", X: "rtt"}); err == nil {
		t.Error("a metric no run has: no error")
	}
}

func TestWaterfallRects(t *testing.T) {
	r := synthLoad(2, false)
	got := bars{waterfallRows(r)}.rects()
	// Without compute the computation is no row; the root has no queued
	// phase (requested at once).
	want := []rect{{0, replay.Waiting, 0, 0.4}, {0, replay.Receiving, 0.4, 0.6},
		{1, replay.Queued, 0.8, 1}, {1, replay.Waiting, 1, 1.4}, {1, replay.Receiving, 1.4, 2}}
	if len(got) != len(want) {
		t.Fatalf("rects %v, want %v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Row != w.Row || g.Phase != w.Phase || abs(g.X0-w.X0) > 1e-9 || abs(g.X1-w.X1) > 1e-9 {
			t.Errorf("rect %d: %+v, want %+v", i, g, w)
		}
	}
	withComp := bars{waterfallRows(synthLoad(2, true))}.rects()
	if len(withComp) != 6 || withComp[2].Phase != replay.Computing || withComp[2].Row != 1 {
		t.Errorf("with compute: %+v, want the computation as row 1", withComp)
	}
}

func abs(v float64) float64 { return max(v, -v) }

func TestMedianRun(t *testing.T) {
	mk := func(id string, v float64, load bool) *experiment.Record {
		r := &experiment.Record{Run: experiment.Run{ID: id}, Metrics: map[string]float64{"plt": v}, Info: map[string]string{}}
		if load {
			r.Info[LoadInfo] = "{}"
		}
		return r
	}
	recs := []*experiment.Record{mk("a", 3, true), mk("b", 1, true), mk("c", 0.5, false), mk("d", 2, true), mk("e", 4, true)}
	if got := medianRun(recs, "plt", LoadInfo); got == nil || got.ID != "d" {
		t.Errorf("median of 1, 2, 3, 4 (c has no load): %v, want d (the lower middle)", got)
	}
	if got := medianRun(recs, "ttfb", LoadInfo); got != nil {
		t.Errorf("no run has the metric: %v", got.ID)
	}
}

func TestWriteDrawsLinePlotsAndWaterfalls(t *testing.T) {
	dir, _ := writeFigSweep(t)
	if _, _, _, err := Write(dir, Options{Now: func() time.Time { return time.Unix(0, 0) }}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plt-vs-rtt", "waterfall-rtt20-google", "waterfall-rtt20-dmm"} {
		for _, ext := range []string{".png", ".svg"} {
			if fi, err := os.Stat(filepath.Join(dir, PlotsDir, name+ext)); err != nil || fi.Size() < 1000 {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	// The median runs of dmm at rtt20: h1-6 20, 40, 60 s; h2 half that.
	for _, w := range []string{"f: plt against rtt", "Waterfalls at rtt20", "<h3>dmm</h3>", "h1-6: PLT 40.0 s", "h2: PLT 20.0 s", "time since the root request"} {
		if !strings.Contains(html, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if i, j := strings.Index(html, "f: plt against rtt"), strings.Index(html, "rtt0: plt"); i < 0 || j < 0 || i > j {
		t.Error("the scenario's plot does not come before the per-condition ones")
	}
}
