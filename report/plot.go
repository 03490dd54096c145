package report

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/shunt-net/shunt/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one plot, written as PNG and SVG; SVG is kept for the HTML report.
type Figure struct {
	Name  string // file name without extension
	Title string
	SVG   []byte
}

// pointsWithErr is medians with p25-p75 bars, for YErrorBars.
type pointsWithErr struct {
	plotter.XYs
	plotter.YErrors
}

// figures draws, per condition and metric, the median of every (protocol,
// object) with its p25-p75 bar: the grid's rows along x (protocols, or
// objects when there are more of them), one series per column key, and the
// published figure of a cell as a cross beside it.
func figures(sum bench.Summary) ([]drawn, error) {
	var out []drawn
	for _, g := range grids(sum) {
		var metrics []string
		for _, col := range g.Columns {
			if !slices.Contains(metrics, col.Metric) {
				metrics = append(metrics, col.Metric)
			}
		}
		for _, m := range metrics {
			d, err := plotMetric(g, m)
			if err != nil {
				return nil, fmt.Errorf("plot %s %s: %w", g.Condition, m, err)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// drawn is a plot with its legend beside it, not over the data.
type drawn struct {
	p      *plot.Plot
	legend plot.Legend
	legW   vg.Length // the legend's column
	w      vg.Length // the whole figure's width
	fig    Figure
}

// legendGap keeps the legend's text off the plot's edge.
const legendGap = 12 * vg.Millimeter / 4

// render draws the plot in the canvas less the legend's column, and the
// legend in that column.
func (d drawn) render(c draw.Canvas) {
	d.p.Draw(draw.Crop(c, 0, -d.legW, 0, 0))
	d.legend.Draw(draw.Crop(c, c.Size().X-d.legW+legendGap, 0, 0, 0))
}

func plotMetric(g *grid, metric string) (drawn, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s (median, p25-p75)", g.Condition, metric)
	p.Y.Label.Text = metric + " (" + bench.UnitOf(metric) + ")"
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.XAlign = draw.XLeft
	var keys []string
	for _, col := range g.Columns {
		if col.Metric == metric {
			keys = append(keys, col.Key)
		}
	}
	var vals []float64 // every value drawn, for the axis
	refs := map[string]plotter.XYs{}
	for ki, key := range keys {
		pts := pointsWithErr{}
		for ri, row := range g.Rows {
			c, ok := g.Cells[row][column{key, metric}]
			if !ok {
				continue
			}
			// Spread a series' points within the row's slot.
			x := float64(ri) + (float64(ki)-float64(len(keys)-1)/2)*0.6/float64(len(keys))
			if c.Reference != nil {
				// Beside the cell's own point, not on it.
				refs[c.Reference.Source] = append(refs[c.Reference.Source], plotter.XY{X: x + 0.08, Y: c.Reference.Value})
				vals = append(vals, c.Reference.Value)
			}
			if c.N == 0 {
				continue
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: c.P50})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{c.P50 - c.P25, c.P75 - c.P50})
			vals = append(vals, c.P25, c.P50, c.P75)
		}
		if len(pts.XYs) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return drawn{}, err
		}
		col := plotutil.Color(ki)
		sc.GlyphStyle.Color = col
		sc.GlyphStyle.Shape = plotutil.Shape(ki)
		sc.GlyphStyle.Radius = vg.Points(3)
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return drawn{}, err
		}
		eb.LineStyle.Color = col
		p.Add(sc, eb)
		leg.Add(key, sc)
	}
	for _, src := range slices.Sorted(maps.Keys(refs)) {
		sc, err := plotter.NewScatter(refs[src])
		if err != nil {
			return drawn{}, err
		}
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Color = color.Black
		p.Add(sc)
		leg.Add("paper: "+src, sc)
	}
	p.NominalX(g.Rows...)
	p.X.Min, p.X.Max = -0.5, float64(len(g.Rows))-0.5 // every row's whole slot
	p.Add(plotter.NewGrid())
	scaleY(p, vals)
	p.X.Tick.Label.Rotation = 0
	p.X.Tick.Label.Color = color.Black
	long := 0
	for _, e := range append(keys, slices.Collect(maps.Keys(refs))...) {
		long = max(long, len(e)+7)
	}
	legW := vg.Length(long)*vg.Points(6) + vg.Points(24)
	// Wide enough for every row's label, plus the legend's column.
	w := vg.Length(3+1.3*float64(len(g.Rows)))*vg.Inch + legW
	return drawn{p: p, legend: leg, legW: legW, w: w, fig: Figure{Name: g.Condition + "-" + metric, Title: p.Title.Text}}, nil
}

// scaleY sets the y axis so that every value drawn (medians, bars,
// published figures) lies inside it with a margin. It starts at zero,
// unless the values span more than 20x (0.05 s alone, 8.40 s blocked):
// then it is logarithmic, or the small ones would all sit on zero; but not
// when a value is 0, which a logarithmic axis cannot show (gonum panics).
func scaleY(p *plot.Plot, vals []float64) {
	lo, hi, zero := math.Inf(1), 0.0, false
	for _, v := range vals {
		if v > 0 {
			lo = min(lo, v)
		}
		zero = zero || v <= 0
		hi = max(hi, v)
	}
	switch {
	case hi == 0:
		p.Y.Min, p.Y.Max = 0, 1
	case hi/lo > 20 && !zero:
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	default:
		p.Y.Min, p.Y.Max = 0, hi*1.08
	}
}

// WritePlots writes every figure as PNG and SVG into dir and returns them
// with their SVG bytes.
func WritePlots(dir string, sum bench.Summary) ([]Figure, error) {
	ds, err := figures(sum)
	if err != nil {
		return nil, err
	}
	var figs []Figure
	for _, d := range ds {
		svg, err := saveCanvas(d.render, d.w, 4*vg.Inch, dir, d.fig.Name)
		if err != nil {
			return nil, err
		}
		d.fig.SVG = svg
		figs = append(figs, d.fig)
	}
	return figs, nil
}

// saveCanvas renders a figure (one plot's Draw, or a grid of panels) as
// dir/name.png and dir/name.svg and returns the SVG.
func saveCanvas(render func(draw.Canvas), w, h vg.Length, dir, name string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	png := vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	render(draw.New(png))
	var pb bytes.Buffer
	if _, err := png.WriteTo(&pb); err != nil {
		return nil, fmt.Errorf("drawing %s: %w", name, err)
	}
	svg := vgsvg.New(w, h)
	render(draw.New(svg))
	var sb bytes.Buffer
	if _, err := svg.WriteTo(&sb); err != nil {
		return nil, fmt.Errorf("drawing %s: %w", name, err)
	}
	for ext, b := range map[string][]byte{".png": pb.Bytes(), ".svg": sb.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name+ext), b, 0o644); err != nil {
			return nil, fmt.Errorf("writing plot %s: %w", name, err)
		}
	}
	return sb.Bytes(), nil
}
