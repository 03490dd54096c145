package bench

import (
	"fmt"
	"slices"
	"strings"
)

// BestOf derives a row from a family of protocols that differ in one tuning
// knob, as papers report a baseline at its best setting (MP-H2 §5.3: "the
// best chunk size of mHTTP"): per condition and object, the member with the
// lowest median of By; the derived row carries that member's cells for every
// metric, and Compare's protocols are set against it.
type BestOf struct {
	Name      string   `yaml:"name" json:"name"`                           // the derived row, e.g. mhttp-best
	Protocols []string `yaml:"protocols" json:"protocols"`                 // the members
	By        string   `yaml:"by,omitempty" json:"by,omitempty"`           // default: the scenario's first metric, else time
	Compare   []string `yaml:"compare,omitempty" json:"compare,omitempty"` // protocols whose median is divided by the best's
}

// Comparison is one protocol's median against a BestOf row's, in one
// condition and object, for the BestOf's metric.
type Comparison struct {
	Condition string  `json:"condition"`
	Object    string  `json:"object"`
	Metric    string  `json:"metric"`
	Protocol  string  `json:"protocol"`
	Baseline  string  `json:"baseline"` // the BestOf row
	Best      string  `json:"best"`     // the member it stands for here
	Ratio     float64 `json:"ratio"`    // Protocol's median / Best's
}

// Metric is the one the best member is chosen by.
func (b BestOf) Metric(s *Scenario) string {
	switch {
	case b.By != "":
		return b.By
	case len(s.Metrics) > 0:
		return s.Metrics[0]
	}
	return "time"
}

func (s *Scenario) validateBestOf() []error {
	var errs []error
	protos := map[string]bool{}
	for _, p := range s.Protocols {
		protos[p.Name] = true
	}
	seen := map[string]bool{}
	for i, b := range s.BestOf {
		f := fmt.Sprintf("best_of[%d]", i)
		switch {
		case b.Name == "":
			errs = append(errs, fieldErr(f+".name", "", "missing"))
		case strings.ContainsAny(b.Name, "/\\ \t\n"):
			errs = append(errs, fieldErr(f+".name", b.Name, "must not contain spaces or slashes (it names files)"))
		case protos[b.Name] || seen[b.Name]:
			errs = append(errs, fieldErr(f+".name", b.Name, "names a protocol or another best_of row"))
		}
		seen[b.Name] = true
		if len(b.Protocols) < 2 {
			errs = append(errs, fieldErr(f+".protocols", "", "needs at least 2 protocols to choose from, have %d", len(b.Protocols)))
		}
		for j, p := range b.Protocols {
			if !protos[p] {
				errs = append(errs, fieldErr(fmt.Sprintf("%s.protocols[%d]", f, j), p, "no such protocol"))
			}
		}
		for j, p := range b.Compare {
			if !protos[p] {
				errs = append(errs, fieldErr(fmt.Sprintf("%s.compare[%d]", f, j), p, "no such protocol"))
			}
		}
	}
	return errs
}

// deriveBestOf adds the scenario's BestOf rows and their comparisons to a
// summary. A member without a successful run in a cell cannot be best there;
// if no member has one, the derived row is left out of that cell.
func deriveBestOf(s *Scenario, sum *Summary) {
	type key struct{ cond, proto, obj, metric string }
	cells := map[key]Cell{}
	type place struct{ cond, obj string }
	var places []place
	for _, c := range sum.Cells {
		l := c.Labels
		cells[key{l.Condition, l.Protocol, l.Object, l.Metric}] = c
		if p := (place{l.Condition, l.Object}); !slices.Contains(places, p) {
			places = append(places, p)
		}
	}
	// Cells are not yet in order: comparisons follow the scenario's.
	ord := scenarioOrder(s)
	slices.SortFunc(places, func(a, b place) int {
		la, lb := Labels{Condition: a.cond, Object: a.obj}, Labels{Condition: b.cond, Object: b.obj}
		switch {
		case ord.less(la, lb):
			return -1
		case ord.less(lb, la):
			return 1
		}
		return 0
	})
	var metrics []string
	for _, c := range sum.Cells {
		if !slices.Contains(metrics, c.Labels.Metric) {
			metrics = append(metrics, c.Labels.Metric)
		}
	}
	for _, b := range s.BestOf {
		by := b.Metric(s)
		for _, pl := range places {
			best, found := "", false
			var bestCell Cell
			for _, m := range b.Protocols {
				c, ok := cells[key{pl.cond, m, pl.obj, by}]
				if ok && c.N > 0 && (!found || c.P50 < bestCell.P50) {
					best, bestCell, found = m, c, true
				}
			}
			if !found {
				continue
			}
			for _, m := range metrics {
				c, ok := cells[key{pl.cond, best, pl.obj, m}]
				if !ok {
					continue
				}
				c.Labels.Protocol, c.From = b.Name, best
				c.Reference = s.referenceFor(c.Labels)
				sum.Cells = append(sum.Cells, c)
			}
			for _, p := range b.Compare {
				c, ok := cells[key{pl.cond, p, pl.obj, by}]
				if !ok || c.N == 0 || bestCell.P50 == 0 {
					continue
				}
				sum.Comparisons = append(sum.Comparisons, Comparison{Condition: pl.cond, Object: pl.obj, Metric: by,
					Protocol: p, Baseline: b.Name, Best: best, Ratio: c.P50 / bestCell.P50})
			}
		}
	}
}

// referenceFor is the first published figure matching a cell's labels.
func (s *Scenario) referenceFor(l Labels) *Reference {
	for i := range s.Reference {
		if s.Reference[i].Matches(l) {
			ref := s.Reference[i]
			return &ref
		}
	}
	return nil
}
