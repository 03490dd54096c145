package report

import (
	"fmt"
	"html"
	"html/template"
	"strconv"
	"strings"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/video"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// bitrateMetric picks the run a playback's line shows: the median one.
const bitrateMetric = "kbit_per_s"

// segmentSteps reads a playback's segments off its record as a step line:
// each segment's rung from its fetch start to the next one's, the last one
// as long as the one before it (so it is drawn at all).
func segmentSteps(rec *experiment.Record) (plotter.XYs, error) {
	rungs := strings.Split(rec.Info[video.SegmentKbpsInfo], ",")
	starts := strings.Split(rec.Info[video.SegmentStartInfo], ",")
	if len(rungs) != len(starts) {
		return nil, fmt.Errorf("run %s: %d segment rungs but %d start times", rec.ID, len(rungs), len(starts))
	}
	pts := make(plotter.XYs, len(rungs))
	for i := range rungs {
		y, err := strconv.ParseFloat(rungs[i], 64)
		if err != nil {
			return nil, fmt.Errorf("run %s: segment %d rung: %w", rec.ID, i, err)
		}
		x, err := strconv.ParseFloat(starts[i], 64)
		if err != nil {
			return nil, fmt.Errorf("run %s: segment %d start: %w", rec.ID, i, err)
		}
		pts[i] = plotter.XY{X: x, Y: y}
	}
	if n := len(pts); n >= 2 {
		pts = append(pts, plotter.XY{X: 2*pts[n-1].X - pts[n-2].X, Y: pts[n-1].Y})
	}
	return pts, nil
}

// BitrateSection draws the bitrate over time of DASH playbacks (driver
// dash): per condition a panel with one step line per protocol, each the
// median-bitrate run of the cell (the first object's). Nil when no run
// recorded its segments.
func BitrateSection(dir string, sc *bench.Scenario, recs []*experiment.Record) (*Section, error) {
	type key struct{ cond, proto string }
	byCell := map[key][]*experiment.Record{}
	for _, r := range bench.Latest(recs) {
		k := key{r.Condition.Name, r.Protocol.Name}
		byCell[k] = append(byCell[k], r)
	}
	var panels []*plot.Plot
	for _, c := range sc.Conditions {
		p := plot.New()
		p.Title.Text = c.Name
		p.X.Label.Text = "segment fetch start (s since the player started)"
		p.Y.Label.Text = "segment bitrate (kbit/s)"
		p.Y.Min = 0
		drawn := false
		for pi, proto := range sc.Protocols {
			rec := medianRun(byCell[key{c.Name, proto.Name}], bitrateMetric, video.SegmentKbpsInfo)
			if rec == nil {
				continue
			}
			pts, err := segmentSteps(rec)
			if err != nil {
				return nil, err
			}
			ln, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			ln.StepStyle = plotter.PostStep
			ln.Color = plotutil.Color(pi)
			ln.Dashes = plotutil.Dashes(pi)
			p.Add(ln)
			p.Legend.Add(fmt.Sprintf("%s (run %s, %.0f kbit/s)", proto.Name, rec.ID, rec.Metrics[bitrateMetric]), ln)
			drawn = true
		}
		if !drawn {
			continue
		}
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return nil, nil
	}
	cols := min(defColms, len(panels))
	grid := newGrid(len(panels), cols)
	for i, p := range panels {
		grid[i/cols][i%cols] = p
	}
	name := "bitrate-" + sc.Name
	title := sc.Name + ": bitrate over time (median run)"
	w, h := panelW*vg.Length(max(cols, 2)), panelH*vg.Length(len(grid))+titleH
	svg, err := saveCanvas(func(dc draw.Canvas) { drawGrid(dc, title, grid) }, w, h, dir, name)
	if err != nil {
		return nil, err
	}
	return &Section{
		Title: fmt.Sprintf("Bitrate over time (the median-%s run per condition and protocol)", bitrateMetric),
		Body:  template.HTML("<figure>" + string(svg) + "</figure>\n<p>" + html.EscapeString("Each line is one run's segments: the rung it fetched, from the segment's fetch start to the next one's.") + "</p>\n"),
	}, nil
}
