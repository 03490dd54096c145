package report

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

const scenario = `
name: t
description: test sweep
reps: 4
seed: 1
conditions:
  - name: wired
    topology: single
    paths: [{name: w, down: {delay: 25ms, rate: 10Mbit, queue: droptail 64KB}, up: {delay: 25ms}}]
protocols:
  - {name: h1, driver: http}
  - {name: h2, driver: http}
objects:
  - {name: alone, size: 10KB}
  - {name: during, size: 10KB, background: 50MB}
reference:
  - {protocol: h2, object: during, metric: time, value: 8.40, source: smig-slides}
notes: ["a note"]
`

// writeSweep makes an output directory as a sweep would: scenario and runs.
// h2/during takes 8 s and more, everything else 0.25 s times rep+1; one run fails.
func writeSweep(t *testing.T) string {
	t.Helper()
	dir, sc := newSweepDir(t, scenario)
	var recs []*experiment.Record
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range bench.Plan(sc) {
		v := 0.25 * float64(r.Rep+1) // exact in binary, so the CSV is too
		if r.Protocol.Name == "h2" && r.Object.Name == "during" {
			v = 8 + float64(r.Rep)
		}
		rec := &experiment.Record{Run: *r, Start: start.Add(time.Duration(i) * time.Second), Metrics: map[string]float64{"time": v},
			Sock: experiment.SockOpts{CC: "cubic"}, Info: map[string]string{"server": "shunt/dev"}, Network: map[string]string{"mtu": "1500"}}
		if r.Protocol.Name == "h1" && r.Object.Name == "during" && r.Rep == 3 {
			rec.Metrics, rec.Error = nil, "connection refused"
		}
		recs = append(recs, rec)
	}
	if err := experiment.WriteRecords(filepath.Join(dir, bench.RunsFile), recs); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWriteProducesEveryOutput(t *testing.T) {
	dir := writeSweep(t)
	_, sum, _, err := Write(dir, Options{Now: func() time.Time { return time.Unix(0, 0) }, Sections: []Section{{Title: "Link log", Body: "<svg id=linklog></svg>"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(sum.Cells))
	}

	f, err := os.Open(filepath.Join(dir, SummaryCSV))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"t", "wired", "h1", "alone", "time", "4", "0", "0.4375", "0.625", "0.8125", "s", "", ""},
		{"t", "wired", "h1", "during", "time", "3", "1", "0.375", "0.5", "0.625", "s", "", ""},
		{"t", "wired", "h2", "alone", "time", "4", "0", "0.4375", "0.625", "0.8125", "s", "", ""},
		{"t", "wired", "h2", "during", "time", "4", "0", "8.75", "9.5", "10.25", "s", "8.4", "smig-slides"},
	}
	if len(rows) != 5 {
		t.Fatalf("csv has %d rows, want header + 4", len(rows))
	}
	for i, w := range want {
		if strings.Join(rows[i+1], ",") != strings.Join(w, ",") {
			t.Errorf("csv row %d:\n got %v\nwant %v", i+1, rows[i+1], w)
		}
	}

	var js struct {
		Scenario string `json:"scenario"`
		Cells    []struct {
			Labels map[string]string `json:"labels"`
			N      int               `json:"n"`
			P50    float64           `json:"p50"`
			Unit   string            `json:"unit"`
		} `json:"cells"`
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	if js.Scenario != "t" || len(js.Cells) != 4 || js.Cells[3].Labels["protocol"] != "h2" || js.Cells[3].Labels["object"] != "during" ||
		js.Cells[3].Labels["condition"] != "wired" || js.Cells[3].P50 != 9.5 || js.Cells[3].Unit != "s" {
		t.Errorf("summary.json: %s", b)
	}

	table, err := os.ReadFile(filepath.Join(dir, TableFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"during time", "paper", "9.50 [8.75-10.2] n=4", "8.40", "(1 errors)", "client cc cubic", "server shunt/dev",
		"wired (w: down delay 25ms, rate 10Mbit, queue droptail 64KB; up delay 25ms)", "note: a note", "error: run", "connection refused", "network mtu: 1500"} {
		if !strings.Contains(string(table), w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}

	for _, ext := range []string{".png", ".svg"} {
		if fi, err := os.Stat(filepath.Join(dir, PlotsDir, "wired-time"+ext)); err != nil || fi.Size() == 0 {
			t.Errorf("plot wired-time%s: %v", ext, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"<svg", "connection refused", "<svg id=linklog>", "name: t", "8.40 (smig-slides)", "Condition wired"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if strings.Contains(string(page), "src=") || strings.Contains(string(page), "href=") {
		t.Error("report.html links to other files: it must be self-contained")
	}
}

// newSweepDir makes an output directory holding the scenario file, as a
// sweep would before its first run, and returns it with the parsed scenario.
func newSweepDir(t *testing.T, yaml string) (string, *bench.Scenario) {
	t.Helper()
	dir := t.TempDir()
	sc, err := bench.Parse("s.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bench.ScenarioFile), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, sc
}
