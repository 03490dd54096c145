package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

const bestOfScenario = `
name: b
reps: 3
seed: 1
conditions:
  - {name: w5, topology: twopath, paths: [{name: wifi}, {name: lte}]}
protocols:
  - {name: mp, driver: mph2}
  - {name: mhttp-128KB, driver: mph2}
  - {name: mhttp-1MB, driver: mph2}
objects:
  - {name: 1MB, size: 1MB}
  - {name: 4MB, size: 4MB}
best_of:
  - {name: mhttp-best, protocols: [mhttp-128KB, mhttp-1MB], compare: [mp]}
`

// The table and the HTML report name the member each best_of cell stands
// for and print the compared protocol's ratio to it.
func TestBestOfReport(t *testing.T) {
	dir, sc := newSweepDir(t, bestOfScenario)
	times := map[string]float64{ // protocol/object -> time of every rep
		"mp/1MB": 0.75, "mhttp-128KB/1MB": 1, "mhttp-1MB/1MB": 1.5,
		"mp/4MB": 3, "mhttp-128KB/4MB": 5, "mhttp-1MB/4MB": 4,
	}
	var recs []*experiment.Record
	for _, r := range bench.Plan(sc) {
		recs = append(recs, &experiment.Record{Run: *r, Metrics: map[string]float64{"time": times[r.Protocol.Name+"/"+r.Object.Name]}})
	}
	if err := experiment.WriteRecords(filepath.Join(dir, bench.RunsFile), recs); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Write(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, TableFile))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"1.00 [1.00-1.00] n=3 = mhttp-128KB",
		"4.00 [4.00-4.00] n=3 = mhttp-1MB",
		"vs mhttp-best, median time: 1MB (= mhttp-128KB 1.00 s): mp 0.750 (-25.0%)",
		"vs mhttp-best, median time: 4MB (= mhttp-1MB 4.00 s): mp 0.750 (-25.0%)",
	} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
