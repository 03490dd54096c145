package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// holbReport writes the report of the default job (holb) from records with
// the figures measured on the development machine, nginx's 0.74 s among
// them, and returns its directory and summary.
func holbReport(t *testing.T) (string, bench.Summary) {
	during := map[string]float64{"h1": 0.088, "h2-shunt": 0.122, "h2-shunt-kernelq": 0.524, "h2-nginx": 0.736, "h2-h2o": 0.095}
	return shippedReport(t, "holb", func(r *experiment.Run, rec *experiment.Record) {
		v := 0.059 + 0.001*float64(r.Rep)
		if r.Object.Name == "during" {
			v = during[r.Protocol.Name] * (1 + 0.01*float64(r.Rep))
		}
		rec.Metrics = map[string]float64{"time": v}
		rec.Sock, rec.Info = experiment.SockOpts{CC: "cubic"}, map[string]string{"server_cc": "cubic"}
	})
}

// shippedReport writes the report of a shipped scenario from a record per
// run of its plan, which fill completes, and returns its directory and
// summary.
func shippedReport(t *testing.T, name string, fill func(*experiment.Run, *experiment.Record)) (string, bench.Summary) {
	t.Helper()
	sc, src, err := bench.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, bench.ScenarioFile), src, 0o644); err != nil {
		t.Fatal(err)
	}
	var recs []*experiment.Record
	for i, r := range bench.Plan(sc) {
		rec := &experiment.Record{Run: *r, Start: time.Unix(int64(i), 0)}
		fill(r, rec)
		recs = append(recs, rec)
	}
	if err := experiment.WriteRecords(filepath.Join(dir, bench.RunsFile), recs); err != nil {
		t.Fatal(err)
	}
	_, sum, _, err := Write(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

// Every plotted value (medians, p25-p75 bars) and every published figure
// lies inside the figure's y axis, with its legend in a column of its own.
func TestPlotsHoldEveryValue(t *testing.T) {
	_, sum := holbReport(t)
	ds, err := figures(sum)
	if err != nil || len(ds) == 0 {
		t.Fatalf("%d figures, %v", len(ds), err)
	}
	for _, d := range ds {
		checked := 0
		for _, c := range sum.Cells {
			if d.fig.Name != c.Labels.Condition+"-"+c.Labels.Metric {
				continue
			}
			vals := []float64{c.P25, c.P50, c.P75}
			if c.Reference != nil {
				vals = append(vals, c.Reference.Value)
			}
			for _, v := range vals {
				if v < d.p.Y.Min || v > d.p.Y.Max {
					t.Errorf("%s: %s/%s value %v outside the y axis %v-%v", d.fig.Name, c.Labels.Protocol, c.Labels.Object, v, d.p.Y.Min, d.p.Y.Max)
				}
				checked++
			}
		}
		if checked < 16+8 { // 8 cells of 3 values, 8 references
			t.Errorf("%s: %d values checked", d.fig.Name, checked)
		}
		c := draw.New(vgimg.New(d.w, 4*vg.Inch))
		if r := d.p.Legend.Rectangle(c); d.legW <= 0 || r.Max.X != r.Min.X {
			t.Errorf("%s: the legend is drawn over the data", d.fig.Name)
		}
		if r := d.legend.Rectangle(c); r.Max.X-r.Min.X > d.legW-legendGap {
			t.Errorf("%s: legend %v wide, its column %v", d.fig.Name, r.Max.X-r.Min.X, d.legW-legendGap)
		}
	}
}

// The report a user opens prints parameters and facts as key=value, never
// Go's map or slice syntax.
func TestReportPrintsKeyValue(t *testing.T) {
	dir, _ := holbReport(t)
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"map[", "[cubic]"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("report.html holds %q", bad)
		}
	}
	for _, want := range []string{"proto=h1", "server_cc=cubic"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
