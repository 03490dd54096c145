package report

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"slices"
	"strings"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/replay"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LoadInfo is the Info key under which a run records its whole page load
// (a replay.Result as JSON; driver replay sets it).
const LoadInfo = "load"

// phaseColors are the waterfall's colours, after browsers' developer tools.
var phaseColors = [...]color.RGBA{
	replay.Queued:    {0xc8, 0xc8, 0xc8, 0xff},
	replay.Waiting:   {0x2c, 0xa0, 0x2c, 0xff},
	replay.Receiving: {0x1f, 0x77, 0xb4, 0xff},
	replay.Computing: {0x94, 0x67, 0xbd, 0xff},
}

var phaseNames = [...]string{replay.Queued: "queued", replay.Waiting: "waiting for first byte", replay.Receiving: "receiving", replay.Computing: "computing"}

// waterfallRows are the rows a graphic waterfall draws: a load without
// computations records them with no duration, so they are left out.
func waterfallRows(r *replay.Result) []replay.Row {
	rows := r.Rows()
	if !r.Compute {
		rows = slices.DeleteFunc(rows, func(rw replay.Row) bool { return rw.Comp })
	}
	return rows
}

// bars draws a waterfall's rows, the first at the top.
type bars struct{ rows []replay.Row }

// rect is one phase of row Row in seconds.
type rect struct {
	Row    int
	Phase  replay.Phase
	X0, X1 float64
}

// rects are the bars to draw; phases with no duration are none.
func (b bars) rects() []rect {
	var out []rect
	for i, rw := range b.rows {
		for _, s := range rw.Spans {
			if s.To > s.From {
				out = append(out, rect{i, s.Phase, s.From.Seconds(), s.To.Seconds()})
			}
		}
	}
	return out
}

func (b bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := float64(len(b.rows))
	for _, r := range b.rects() {
		y := n - 1 - float64(r.Row)
		x0, x1 := trX(r.X0), trX(r.X1)
		// Keep a sliver visible for phases shorter than a point.
		x1 = max(x1, x0+vg.Points(0.5))
		y0, y1 := trY(y-0.38), trY(y+0.38)
		c.FillPolygon(phaseColors[r.Phase], c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
	}
}

func (b bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, rw := range b.rows {
		xmax = max(xmax, rw.Done.Seconds())
	}
	return 0, xmax, -0.5, float64(len(b.rows)) - 0.5
}

// swatch is a legend entry of one colour.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.c, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}})
}

// Waterfall layout.
const (
	wfRowH   = 7 * vg.Length(1) // points per row
	wfMargin = 1.1 * vg.Inch    // axes, title and legend
	wfPanelW = 4.2 * vg.Inch
	wfCols   = 3
)

// waterfallPlot draws one load on a time axis from 0 to tmax (seconds), so
// that the loads of one page compare at a glance.
func waterfallPlot(r *replay.Result, title string, tmax float64) *plot.Plot {
	rows := waterfallRows(r)
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the root request (s)"
	p.X.Min, p.X.Max = 0, tmax
	labels := make([]string, len(rows))
	for i, rw := range rows {
		labels[len(rows)-1-i] = rw.ID
	}
	p.Add(bars{rows})
	p.NominalY(labels...)
	p.Y.Tick.Label.Font.Size = vg.Points(6)
	phases := []replay.Phase{replay.Queued, replay.Waiting, replay.Receiving}
	if r.Compute {
		phases = append(phases, replay.Computing)
	}
	for _, ph := range phases {
		p.Legend.Add(phaseNames[ph], swatch{phaseColors[ph]})
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	return p
}

// loadOf decodes the page load a run recorded; nil if it recorded none.
func loadOf(rec *experiment.Record) (*replay.Result, error) {
	s, ok := rec.Info[LoadInfo]
	if !ok || !rec.OK() {
		return nil, nil
	}
	var r replay.Result
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("run %s: info %s: %w", rec.ID, LoadInfo, err)
	}
	return &r, nil
}

// medianRun picks, among the runs that recorded info and have the metric,
// the one with the median value (the lower of the middle two), ties broken
// by run ID so the choice never depends on file order.
func medianRun(recs []*experiment.Record, metric, info string) *experiment.Record {
	var c []*experiment.Record
	for _, r := range recs {
		if _, ok := r.Metrics[metric]; ok && r.OK() && r.Info[info] != "" {
			c = append(c, r)
		}
	}
	if len(c) == 0 {
		return nil
	}
	slices.SortFunc(c, func(a, b *experiment.Record) int {
		if x, y := a.Metrics[metric], b.Metrics[metric]; x != y {
			if x < y {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return c[(len(c)-1)/2]
}

// WaterfallSection draws the waterfalls a scenario asks for (bench.WaterfallSpec):
// per object one figure with a panel per protocol, each the median run of
// the condition. It returns nil when the scenario asks for none or no run
// recorded a load.
func WaterfallSection(dir string, sc *bench.Scenario, recs []*experiment.Record) (*Section, error) {
	spec := sc.Waterfalls
	if spec == nil {
		return nil, nil
	}
	type key struct{ obj, proto string }
	byCell := map[key][]*experiment.Record{}
	for _, r := range bench.Latest(recs) {
		if r.Condition.Name == spec.Condition {
			k := key{r.Object.Name, r.Protocol.Name}
			byCell[k] = append(byCell[k], r)
		}
	}
	var body strings.Builder
	for _, o := range sc.Objects {
		type panel struct {
			rec  *experiment.Record
			load *replay.Result
		}
		var panels []panel
		tmax := 0.0
		for _, p := range sc.Protocols {
			rec := medianRun(byCell[key{o.Name, p.Name}], spec.Metric, LoadInfo)
			if rec == nil {
				continue
			}
			load, err := loadOf(rec)
			if err != nil {
				return nil, err
			}
			panels = append(panels, panel{rec, load})
			tmax = max(tmax, load.PLT.Seconds())
		}
		if len(panels) == 0 {
			continue
		}
		cols := min(wfCols, len(panels))
		grid := newGrid(len(panels), cols)
		rowsMax := 0
		for i, pn := range panels {
			title := fmt.Sprintf("%s: PLT %s s (run %s)", pn.rec.Protocol.Name, sec(pn.load.PLT.Seconds()), pn.rec.ID)
			grid[i/cols][i%cols] = waterfallPlot(pn.load, title, tmax)
			rowsMax = max(rowsMax, len(waterfallRows(pn.load)))
		}
		name := "waterfall-" + spec.Condition + "-" + o.Name
		figTitle := fmt.Sprintf("%s at %s: the median-%s run per protocol", o.Name, spec.Condition, spec.Metric)
		panelH := wfRowH*vg.Length(rowsMax) + wfMargin
		w, h := wfPanelW*vg.Length(cols), panelH*vg.Length(len(grid))+titleH
		svg, err := saveCanvas(func(dc draw.Canvas) { drawGrid(dc, figTitle, grid) }, w, h, dir, name)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&body, "<h3>%s</h3>\n<figure>%s</figure>\n", html.EscapeString(o.Name), svg)
	}
	if body.Len() == 0 {
		return nil, nil
	}
	return &Section{
		Title: fmt.Sprintf("Waterfalls at %s (median-%s run per page and protocol)", spec.Condition, spec.Metric),
		Body:  template.HTML(body.String()), // our own plotter's SVG and escaped names
	}, nil
}
