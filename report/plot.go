package report

import (
	"bytes"
	"fmt"
	"image/color"
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
// objects when there are more of them), one series per column key.
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
			p, err := plotMetric(g, m)
			if err != nil {
				return nil, fmt.Errorf("plot %s %s: %w", g.Condition, m, err)
			}
			// Wide enough for every row's label.
			w := vg.Length(3+1.3*float64(len(g.Rows))) * vg.Inch
			out = append(out, drawn{p, w, Figure{Name: g.Condition + "-" + m, Title: p.Title.Text}})
		}
	}
	return out, nil
}

type drawn struct {
	p   *plot.Plot
	w   vg.Length
	fig Figure
}

func plotMetric(g *grid, metric string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s (median, p25-p75)", g.Condition, metric)
	p.Y.Label.Text = metric + " (" + bench.UnitOf(metric) + ")"
	p.Legend.Top = true
	var keys []string
	for _, col := range g.Columns {
		if col.Metric == metric {
			keys = append(keys, col.Key)
		}
	}
	lo, hi := 0.0, 0.0
	for ki, key := range keys {
		pts := pointsWithErr{}
		for ri, row := range g.Rows {
			c, ok := g.Cells[row][column{key, metric}]
			if !ok || c.N == 0 {
				continue
			}
			// Spread a series' points within the row's slot.
			x := float64(ri) + (float64(ki)-float64(len(keys)-1)/2)*0.6/float64(len(keys))
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: c.P50})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{c.P50 - c.P25, c.P75 - c.P50})
			if lo == 0 || c.P25 < lo {
				lo = c.P25
			}
			hi = max(hi, c.P75)
		}
		if len(pts.XYs) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		col := plotutil.Color(ki)
		sc.GlyphStyle.Color = col
		sc.GlyphStyle.Shape = plotutil.Shape(ki)
		sc.GlyphStyle.Radius = vg.Points(3)
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Color = col
		p.Add(sc, eb)
		p.Legend.Add(key, sc)
	}
	p.NominalX(g.Rows...)
	p.Add(plotter.NewGrid())
	scaleY(p, lo, hi)
	p.X.Tick.Label.Rotation = 0
	p.X.Tick.Label.Color = color.Black
	p.Legend.TextStyle.XAlign = draw.XLeft
	return p, nil
}

// scaleY starts the y axis at zero, unless the values (lo to hi) span more
// than a decade (0.05 s alone, 8 s blocked): then the axis is logarithmic, or
// the small ones would all sit on zero.
func scaleY(p *plot.Plot, lo, hi float64) {
	if lo > 0 && hi/lo > 20 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
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
		svg, err := saveCanvas(d.p.Draw, d.w, 4*vg.Inch, dir, d.fig.Name)
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
