package report

import (
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shunt-net/shunt/netem"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxPlotPoints bounds each series of a link-log plot: a 50 MB transfer is
// 35,000 packets a run, too many points for an inline SVG.
const maxPlotPoints = 2000

// LinkLogSections plots every link log (*.log) under dir, as written by the
// testbed: throughput in and out of the bottleneck and each packet's
// queueing delay over time, with the delay percentiles and drops by cause.
// The PNG/SVG files go to plotDir; the sections embed the SVGs.
func LinkLogSections(dir, plotDir string) ([]Section, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // the run had no --link-log
	}
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".log") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, nil
	}
	var secs []Section
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		name := "linklog-" + strings.NewReplacer("/", "-", ".log", "").Replace(rel)
		s, err := linkLogSection(f, rel, plotDir, name)
		if err != nil {
			return nil, err
		}
		secs = append(secs, s)
	}
	return secs, nil
}

func linkLogSection(file, title, plotDir, name string) (Section, error) {
	f, err := os.Open(file)
	if err != nil {
		return Section{}, err
	}
	defer f.Close()
	log, err := netem.ReadLog(f)
	if err != nil {
		return Section{}, fmt.Errorf("link log %s: %w", file, err)
	}
	p, err := linkLogPlot(log, title)
	if err != nil {
		return Section{}, fmt.Errorf("link log %s: %w", file, err)
	}
	svg, err := saveCanvas(p.Draw, 9*vg.Inch, 4*vg.Inch, plotDir, name)
	if err != nil {
		return Section{}, err
	}
	pc := log.DelayPercentiles(50, 99, 100)
	summary := fmt.Sprintf("<p>link %s; %d packets in, %d out; queueing delay p50 %.3f ms, p99 %.3f ms, max %.3f ms; drops by cause %v</p>",
		html.EscapeString(log.Link), len(log.Arrivals), len(log.Departures), pc[0]*1e3, pc[1]*1e3, pc[2]*1e3, log.DropsByCause())
	return Section{Title: "Link log " + title, Body: template.HTML(summary + string(svg))}, nil
}

// linkLogPlot draws throughput (Mbit/s, 100 ms windows) and queueing delay
// (ms) against time on one axis: at the rates emulated here (<= 100 Mbit/s)
// and delays of interest (ms to s) both read well on one scale.
func linkLogPlot(log *netem.LogSummary, title string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title + ": throughput (Mbit/s) and queueing delay (ms)"
	p.X.Label.Text = "time (s)"
	in, out := log.Throughput(100 * time.Millisecond)
	series := []struct {
		label string
		pts   []netem.Point
		scale float64
	}{
		{"arrivals Mbit/s", in, 1e-6},
		{"departures Mbit/s", out, 1e-6},
		{"queueing delay ms", log.QueueDelays(), 1e3},
	}
	for i, s := range series {
		xy := thin(s.pts, s.scale)
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(s.label, l)
	}
	p.Legend.Top = true
	p.Legend.TextStyle.XAlign = draw.XLeft
	p.Add(plotter.NewGrid())
	return p, nil
}

// thin keeps at most maxPlotPoints points, each bucket's largest value, so
// that delay spikes survive the reduction.
func thin(pts []netem.Point, scale float64) plotter.XYs {
	step := (len(pts) + maxPlotPoints - 1) / maxPlotPoints
	if step < 1 {
		step = 1
	}
	var xy plotter.XYs
	for i := 0; i < len(pts); i += step {
		best := pts[i]
		for _, q := range pts[i:min(i+step, len(pts))] {
			if q.V > best.V {
				best = q
			}
		}
		xy = append(xy, plotter.XY{X: best.T, Y: best.V * scale})
	}
	return xy
}
