package report

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/netem"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// xParam computes one of bench.PlotX from a condition's first path.
type xParam struct {
	label string // axis label
	value func(p experiment.PathSpec) (float64, error)
}

var xParams = map[string]xParam{
	"rtt": {"RTT (ms)", func(p experiment.PathSpec) (float64, error) {
		rtt, err := p.RTT()
		return float64(rtt) / float64(time.Millisecond), err
	}},
	"loss": {"loss (%)", func(p experiment.PathSpec) (float64, error) {
		if p.Down.Loss == "" {
			return 0, nil
		}
		l, err := netem.ParseLoss(p.Down.Loss)
		return 100 * l.Mean(), err
	}},
	"rate": {"rate (Mbit/s)", func(p experiment.PathSpec) (float64, error) {
		if p.Down.Rate == "" {
			return 0, fmt.Errorf("down link has no fixed rate")
		}
		r, err := netem.ParseRate(p.Down.Rate)
		return r / 1e6, err
	}},
}

// conditionX is the x tick label of every condition, in scenario order.
func conditionX(sc *bench.Scenario, x string) ([]string, error) {
	xp, ok := xParams[x]
	if !ok {
		return nil, fmt.Errorf("x %q: want one of %v", x, bench.PlotX)
	}
	var ticks []string
	for _, c := range sc.Conditions {
		if len(c.Paths) == 0 {
			return nil, fmt.Errorf("condition %s: no path to read %s from", c.Name, x)
		}
		v, err := xp.value(c.Paths[0])
		if err != nil {
			return nil, fmt.Errorf("condition %s: %s: %w", c.Name, x, err)
		}
		ticks = append(ticks, strconv.FormatFloat(v, 'g', 4, 64))
	}
	return ticks, nil
}

// Panel sizes of line plots.
const (
	panelW   = 3.4 * vg.Inch
	panelH   = 2.8 * vg.Inch
	titleH   = 0.4 * vg.Inch
	defColms = 3
)

// lines is a PlotSpec's data: per object and protocol the medians with
// p25-p75 bars at their condition's category (offset within it per protocol).
type lines struct {
	ticks, objs, protos []string
	pts                 map[string]map[string]pointsWithErr
	vals                map[string][]float64 // per object: every p25 and p75, for the axis
}

func lineData(sc *bench.Scenario, sum bench.Summary, spec bench.PlotSpec) (*lines, error) {
	ticks, err := conditionX(sc, spec.X)
	if err != nil {
		return nil, err
	}
	condIdx := map[string]int{}
	for i, c := range sc.Conditions {
		condIdx[c.Name] = i
	}
	d := &lines{ticks: ticks, pts: map[string]map[string]pointsWithErr{}, vals: map[string][]float64{}}
	var cells []bench.Cell
	for _, c := range sum.Cells {
		l := c.Labels
		if _, ok := condIdx[l.Condition]; !ok || l.Metric != spec.Metric || c.N == 0 {
			continue
		}
		cells = append(cells, c)
		if !slices.Contains(d.objs, l.Object) {
			d.objs = append(d.objs, l.Object)
		}
		if !slices.Contains(d.protos, l.Protocol) {
			d.protos = append(d.protos, l.Protocol)
		}
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("no successful run has metric %q", spec.Metric)
	}
	slices.SortStableFunc(d.protos, func(a, b string) int { return protoIndex(sc, a) - protoIndex(sc, b) })
	// Conditions in scenario order, so each line runs left to right.
	slices.SortStableFunc(cells, func(a, b bench.Cell) int { return condIdx[a.Labels.Condition] - condIdx[b.Labels.Condition] })
	for _, c := range cells {
		l := c.Labels
		pi := slices.Index(d.protos, l.Protocol)
		// Spread the protocols within a category so their bars stay apart.
		x := float64(condIdx[l.Condition]) + (float64(pi)-float64(len(d.protos)-1)/2)*0.5/float64(len(d.protos))
		if d.pts[l.Object] == nil {
			d.pts[l.Object] = map[string]pointsWithErr{}
		}
		pts := d.pts[l.Object][l.Protocol]
		pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: c.P50})
		pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{c.P50 - c.P25, c.P75 - c.P50})
		d.pts[l.Object][l.Protocol] = pts
		d.vals[l.Object] = append(d.vals[l.Object], c.P25, c.P75)
	}
	return d, nil
}

// linePlots draws a spec's panels, one per object, Columns to a row.
func linePlots(sc *bench.Scenario, sum bench.Summary, spec bench.PlotSpec) ([][]*plot.Plot, error) {
	d, err := lineData(sc, sum, spec)
	if err != nil {
		return nil, err
	}
	cols := spec.Columns
	if cols == 0 {
		cols = defColms
	}
	cols = min(cols, len(d.objs))
	grid := newGrid(len(d.objs), cols)
	for oi, obj := range d.objs {
		p := plot.New()
		p.Title.Text = obj
		p.X.Label.Text = xParams[spec.X].label
		p.Y.Label.Text = spec.Metric + " (" + bench.UnitOf(spec.Metric) + ")"
		for pi, proto := range d.protos {
			pts, ok := d.pts[obj][proto]
			if !ok {
				continue
			}
			ln, pt, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, err
			}
			col := plotutil.Color(pi)
			ln.Color, pt.Color, pt.Shape = col, col, plotutil.Shape(pi)
			eb, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return nil, err
			}
			eb.LineStyle.Color = col
			p.Add(ln, pt, eb)
			p.Legend.Add(proto, ln, pt)
		}
		p.NominalX(d.ticks...)
		p.Add(plotter.NewGrid())
		scaleY(p, d.vals[obj])
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		grid[oi/cols][oi%cols] = p
	}
	return grid, nil
}

func protoIndex(sc *bench.Scenario, name string) int {
	i := slices.IndexFunc(sc.Protocols, func(p experiment.Protocol) bool { return p.Name == name })
	if i < 0 {
		return len(sc.Protocols)
	}
	return i
}

// WriteLinePlots draws the scenario's PlotSpecs into dir as PNG and SVG.
func WriteLinePlots(dir string, sc *bench.Scenario, sum bench.Summary) ([]Figure, error) {
	var figs []Figure
	for _, spec := range sc.Plots {
		grid, err := linePlots(sc, sum, spec)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", spec.FileName(), err)
		}
		title := spec.Title
		if title == "" {
			title = fmt.Sprintf("%s: %s against %s (median, p25-p75)", sc.Name, spec.Metric, spec.X)
		}
		w, h := panelW*vg.Length(len(grid[0])), panelH*vg.Length(len(grid))+titleH
		svg, err := saveCanvas(func(dc draw.Canvas) { drawGrid(dc, title, grid) }, w, h, dir, spec.FileName())
		if err != nil {
			return nil, err
		}
		figs = append(figs, Figure{Name: spec.FileName(), Title: title, SVG: svg})
	}
	return figs, nil
}

// newGrid makes rows of cols panels for n panels, the last row padded
// with nil.
func newGrid(n, cols int) [][]*plot.Plot {
	grid := make([][]*plot.Plot, (n+cols-1)/cols)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	return grid
}

// drawGrid draws a title and under it a grid of panels (nil ones stay empty).
func drawGrid(dc draw.Canvas, title string, grid [][]*plot.Plot) {
	titled(dc, title)
	dc.Max.Y -= titleH
	tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 4}
	for j, row := range plot.Align(grid, tiles, dc) {
		for i, c := range row {
			if grid[j][i] != nil {
				grid[j][i].Draw(c)
			}
		}
	}
}

// titled writes a figure's title centred at the top of dc.
func titled(dc draw.Canvas, title string) {
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(13)), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Millimeter*2}, title)
}
