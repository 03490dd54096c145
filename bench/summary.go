package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/shunt-net/shunt/experiment"
)

// Labels name a summary cell.
type Labels struct {
	Condition string `json:"condition"`
	Protocol  string `json:"protocol"`
	Object    string `json:"object"`
	Metric    string `json:"metric"`
}

// Cell summarises one metric of one (condition, protocol, object).
type Cell struct {
	Labels Labels  `json:"labels"`
	N      int     `json:"n"`      // successful runs
	Errors int     `json:"errors"` // failed runs, never dropped silently
	P25    float64 `json:"p25"`
	P50    float64 `json:"p50"`
	P75    float64 `json:"p75"`
	Unit   string  `json:"unit"`
	// Reference is the published figure for this cell, if the scenario has one.
	Reference *Reference `json:"reference,omitempty"`
	// From names the protocol whose cell a derived (BestOf) row shows.
	From string `json:"from,omitempty"`
}

// Summary is what --json writes.
type Summary struct {
	Scenario string `json:"scenario"`
	Cells    []Cell `json:"cells"`
	// Comparisons set protocols against the scenario's BestOf rows.
	Comparisons []Comparison `json:"comparisons,omitempty"`
	// Ratios set protocols against their peers (Scenario.Ratios).
	Ratios []Ratio `json:"ratios,omitempty"`
	// Orders are the protocols' names in the order each repetition of the
	// records ran them, when the scenario rotates (Scenario.Order).
	Orders [][]string `json:"orders,omitempty"`
}

// Summarize computes p25/p50/p75 per cell from run records (one per run ID is
// kept, see Latest). Cells follow the scenario's order of conditions,
// protocols and objects; labels the scenario does not list come after, by name.
// A cell with only failed runs is kept, with N = 0, so failures show.
func Summarize(s *Scenario, recs []*experiment.Record) Summary {
	type acc struct {
		vals   []float64
		errors int
	}
	cells := map[Labels]*acc{}
	get := func(l Labels) *acc {
		a := cells[l]
		if a == nil {
			a = &acc{}
			cells[l] = a
		}
		return a
	}
	// A failed run has no metrics: it is counted in the cells of the metrics
	// its successful siblings have (same condition, protocol and object),
	// else those measured for the same object anywhere, else under metric "".
	cellMetrics := map[[3]string]map[string]bool{}
	objMetrics := map[string]map[string]bool{}
	note := func(m map[string]map[string]bool, k, metric string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][metric] = true
	}
	latest := Latest(recs)
	for _, r := range latest {
		if !r.OK() {
			continue
		}
		k := [3]string{r.Condition.Name, r.Protocol.Name, r.Object.Name}
		for m, v := range r.Metrics {
			if cellMetrics[k] == nil {
				cellMetrics[k] = map[string]bool{}
			}
			cellMetrics[k][m] = true
			note(objMetrics, r.Object.Name, m)
			a := get(labels(&r.Run, m))
			a.vals = append(a.vals, v)
		}
	}
	for _, r := range latest {
		if r.OK() {
			continue
		}
		ms := cellMetrics[[3]string{r.Condition.Name, r.Protocol.Name, r.Object.Name}]
		if len(ms) == 0 {
			ms = objMetrics[r.Object.Name]
		}
		if len(ms) == 0 {
			ms = map[string]bool{"": true}
		}
		for m := range ms {
			get(labels(&r.Run, m)).errors++
		}
	}
	out := Summary{Scenario: s.Name}
	for l, a := range cells {
		c := Cell{Labels: l, N: len(a.vals), Errors: a.errors, Unit: UnitOf(l.Metric)}
		if len(a.vals) > 0 {
			sort.Float64s(a.vals)
			c.P25, c.P50, c.P75 = Quantile(a.vals, 0.25), Quantile(a.vals, 0.5), Quantile(a.vals, 0.75)
		}
		c.Reference = s.referenceFor(l)
		out.Cells = append(out.Cells, c)
	}
	deriveBestOf(s, &out)
	order := scenarioOrder(s)
	sort.Slice(out.Cells, func(i, j int) bool { return order.less(out.Cells[i].Labels, out.Cells[j].Labels) })
	deriveRatios(s, &out, latest)
	if s.Rotate {
		reps := 0
		for _, r := range latest {
			reps = max(reps, r.Rep+1)
		}
		for rep := range reps {
			var names []string
			for _, p := range s.Order(rep) {
				names = append(names, p.Name)
			}
			out.Orders = append(out.Orders, names)
		}
	}
	return out
}

// UnitOf is a metric's unit, read off its name: NAME_per_s is a rate
// ("req_per_s": req/s), NAME_us microseconds, NAME_ms milliseconds, NAME_kb kilobytes,
// NAME_pct a percentage, NAME_mib or NAME_mib_max mebibytes, NAME_count,
// NAME_max, failed and NAME_failed counts (the soak's peaks and failures),
// anything else a time in seconds, as most metrics are.
func UnitOf(metric string) string {
	switch {
	case metric == "mb_per_s":
		return "MB/s"
	case strings.HasSuffix(metric, "_per_s"):
		return strings.TrimSuffix(metric, "_per_s") + "/s"
	case strings.HasSuffix(metric, "_us"):
		return "µs"
	case strings.HasSuffix(metric, "_ms"):
		return "ms"
	case strings.HasSuffix(metric, "_kb"):
		return "KB"
	case strings.HasSuffix(metric, "_pct"):
		return "%"
	case strings.HasSuffix(metric, "_mib") || strings.HasSuffix(metric, "_mib_max"):
		return "MiB"
	case strings.HasSuffix(metric, "_count") || strings.HasSuffix(metric, "_max") ||
		metric == "failed" || strings.HasSuffix(metric, "_failed"):
		return "count"
	}
	return "s"
}

// Quantile is the q-quantile of sorted values, interpolating linearly between
// order statistics (R's type 7, numpy's default).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

type order struct{ cond, proto, obj, metric map[string]int }

func scenarioOrder(s *Scenario) order {
	o := order{map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}}
	for i, m := range s.Metrics {
		o.metric[m] = i + 1
	}
	for i, c := range s.Conditions {
		o.cond[c.Name] = i + 1
	}
	for i, p := range s.Protocols {
		o.proto[p.Name] = 2 * (i + 1) // odd places are for BestOf rows
	}
	for _, b := range s.BestOf {
		last := 0
		for _, p := range b.Protocols {
			last = max(last, o.proto[p])
		}
		o.proto[b.Name] = last + 1 // right after its last member
	}
	for i, ob := range s.Objects {
		o.obj[ob.Name] = i + 1
	}
	return o
}

// less orders by scenario position (unknown names last), then by name.
func (o order) less(a, b Labels) bool {
	cmp := func(idx map[string]int, x, y string) int {
		ix, iy := idx[x], idx[y]
		if ix == 0 {
			ix = math.MaxInt32
		}
		if iy == 0 {
			iy = math.MaxInt32
		}
		switch {
		case ix != iy:
			return ix - iy
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	if c := cmp(o.cond, a.Condition, b.Condition); c != 0 {
		return c < 0
	}
	if c := cmp(o.proto, a.Protocol, b.Protocol); c != 0 {
		return c < 0
	}
	if c := cmp(o.obj, a.Object, b.Object); c != 0 {
		return c < 0
	}
	return cmp(o.metric, a.Metric, b.Metric) < 0
}

// WriteJSON writes the summary as the --json file.
func (s Summary) WriteJSON(file string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding summary: %w", err)
	}
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	return nil
}
