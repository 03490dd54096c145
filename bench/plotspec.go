package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shunt-net/shunt/experiment"
)

// PlotSpec asks the report for a line plot in the style of the multistreaming
// paper's Figures 3-5: a metric's median (with p25-p75 bars) against a
// parameter of the conditions, one line per protocol, one panel per object.
// The conditions sit on a categorical axis in the scenario's order.
type PlotSpec struct {
	Name   string `yaml:"name,omitempty" json:"name,omitempty"` // file name; default METRIC-vs-X
	Title  string `yaml:"title,omitempty" json:"title,omitempty"`
	Metric string `yaml:"metric" json:"metric"`
	X      string `yaml:"x" json:"x"` // one of PlotX
	// Columns is the number of panels per row (default 3).
	Columns int `yaml:"columns,omitempty" json:"columns,omitempty"`
}

// PlotX are the condition parameters a PlotSpec can put on its x axis, read
// from each condition's first path (package report computes them):
//
//	rtt   sum of both directions' delays, ms
//	loss  the down link's mean loss rate, %
//	rate  the down link's rate, Mbit/s
var PlotX = []string{"rtt", "loss", "rate"}

// FileName is the plot's file name without extension.
func (p PlotSpec) FileName() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Metric + "-vs-" + p.X
}

// WaterfallSpec asks the report for page-load waterfalls in one condition:
// per object and protocol, the run with the median Metric among those that
// recorded their load (driver replay).
type WaterfallSpec struct {
	Condition string `yaml:"condition" json:"condition"`
	Metric    string `yaml:"metric" json:"metric"`
}

func (s *Scenario) validateFigures() []error {
	var errs []error
	seen := map[string]bool{}
	for i, p := range s.Plots {
		f := fmt.Sprintf("plots[%d]", i)
		if p.Metric == "" {
			errs = append(errs, fieldErr(f+".metric", "", "missing"))
		}
		if !slices.Contains(PlotX, p.X) {
			errs = append(errs, fieldErr(f+".x", p.X, "want one of %s", strings.Join(PlotX, ", ")))
		}
		if p.Columns < 0 {
			errs = append(errs, fieldErr(f+".columns", fmt.Sprint(p.Columns), "must not be negative"))
		}
		switch name := p.FileName(); {
		case strings.ContainsAny(name, "/\\ \t\n"):
			errs = append(errs, fieldErr(f+".name", name, "must not contain spaces or slashes (it names files)"))
		case seen[name]:
			errs = append(errs, fieldErr(f+".name", name, "duplicate plot name"))
		default:
			seen[name] = true
		}
	}
	if w := s.Waterfalls; w != nil {
		if !slices.ContainsFunc(s.Conditions, func(c experiment.Condition) bool { return c.Name == w.Condition }) {
			errs = append(errs, fieldErr("waterfalls.condition", w.Condition, "names no condition of the scenario"))
		}
		if w.Metric == "" {
			errs = append(errs, fieldErr("waterfalls.metric", "", "missing"))
		}
	}
	return errs
}
