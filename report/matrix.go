package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/shunt-net/shunt/bench"
)

// MatrixFile is the markdown table of a scenario with ratios.
const MatrixFile = "matrix.md"

// WriteMatrix prints a scenario's cells as one markdown table per
// condition, a row per object and protocol, a column per metric (median
// [p25-p75]) and a column per ratio (Scenario.Ratios: median over the
// peer's median), for pasting into documents.
func WriteMatrix(w io.Writer, sc *bench.Scenario, sum bench.Summary) error {
	type row struct{ cond, obj, proto string }
	cells := map[row]map[string]bench.Cell{}
	ratios := map[row]map[string]float64{}
	var conds, metrics []string
	for _, c := range sum.Cells {
		l := c.Labels
		r := row{l.Condition, l.Object, l.Protocol}
		if cells[r] == nil {
			cells[r] = map[string]bench.Cell{}
		}
		cells[r][l.Metric] = c
		conds = appendNew(conds, l.Condition)
		metrics = appendNew(metrics, l.Metric)
	}
	var ratioCols []string
	if sc.Ratios != nil {
		for _, m := range sc.RatioMetrics() {
			for _, t := range sc.Ratios.To {
				ratioCols = append(ratioCols, m+" / "+t)
			}
		}
	}
	for _, x := range sum.Ratios {
		r := row{x.Labels.Condition, x.Labels.Object, x.Labels.Protocol}
		if ratios[r] == nil {
			ratios[r] = map[string]float64{}
		}
		ratios[r][x.Labels.Metric+" / "+x.To] = x.Ratio
	}
	fmt.Fprintf(w, "scenario %s: median [p25-p75] of the runs per cell", sc.Name)
	if sc.Ratios != nil {
		fmt.Fprintf(w, "; ratios are medians over the median of the protocol that differs only in %s", sc.Ratios.Param)
	}
	fmt.Fprintln(w)
	for _, cond := range conds {
		fmt.Fprintf(w, "\n%s\n\n", cond)
		hdr := []string{"object", "protocol", "runs"}
		for _, m := range metrics {
			hdr = append(hdr, fmt.Sprintf("%s (%s)", m, bench.UnitOf(m)))
		}
		hdr = append(hdr, ratioCols...)
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(hdr, " | "), strings.Repeat("---|", len(hdr)))
		for _, o := range sc.Objects {
			for _, p := range sc.Protocols {
				r := row{cond, o.Name, p.Name}
				if cells[r] == nil {
					continue
				}
				n, errs := 0, 0
				line := []string{o.Name, p.Name, ""}
				for _, m := range metrics {
					c, ok := cells[r][m]
					n, errs = max(n, c.N), max(errs, c.Errors)
					switch {
					case !ok || c.N == 0:
						line = append(line, "-")
					default:
						v := func(x float64) string { return inUnit(x, c.Unit) }
						line = append(line, fmt.Sprintf("%s [%s-%s]", v(c.P50), v(c.P25), v(c.P75)))
					}
				}
				line[2] = fmt.Sprint(n)
				if errs > 0 {
					line[2] += fmt.Sprintf(" (%d failed)", errs)
				}
				for _, col := range ratioCols {
					if x, ok := ratios[r][col]; ok {
						line = append(line, fmt.Sprintf("%.2f", x))
					} else {
						line = append(line, "")
					}
				}
				fmt.Fprintf(w, "| %s |\n", strings.Join(line, " | "))
			}
		}
	}
	return nil
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
