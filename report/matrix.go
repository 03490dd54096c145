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
// peer's median), then the ratios per repetition (median [min-max] of the
// runs back to back, and in how many the protocol did better), and the
// order each repetition ran the protocols in when they rotate, for pasting
// into documents.
func WriteMatrix(w io.Writer, sc *bench.Scenario, sum bench.Summary) error {
	cells := map[row]map[string]bench.Cell{}
	ratios := map[row]map[string]bench.Ratio{}
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
			ratios[r] = map[string]bench.Ratio{}
		}
		ratios[r][x.Labels.Metric+" / "+x.To] = x
	}
	fmt.Fprintf(w, "scenario %s: median [p25-p75] of the runs per cell", sc.Name)
	if sc.Ratios != nil {
		fmt.Fprintf(w, "; ratios are medians over the median of the protocol that differs only in %s", sc.Ratios.Param)
	}
	fmt.Fprintln(w)
	writeOrders(w, sc, sum.Orders)
	for _, cond := range conds {
		fmt.Fprintf(w, "\n%s\n\n", cond)
		hdr := []string{"object", "protocol", "runs"}
		for _, m := range metrics {
			hdr = append(hdr, fmt.Sprintf("%s (%s)", m, bench.UnitOf(m)))
		}
		writeHead(w, append(hdr, ratioCols...))
		for _, r := range rows(sc, cond) {
			if cells[r] == nil {
				continue
			}
			n, errs := 0, 0
			line := []string{r.obj, r.proto, ""}
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
					line = append(line, fmt.Sprintf("%.2f", x.Ratio))
				} else {
					line = append(line, "")
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(line, " | "))
		}
		if len(ratioCols) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, per repetition: median [min-max] of the protocol's value over its peer's in the same repetition (runs back to back), and in how many repetitions the protocol did better (higher rate, lower time, CPU or memory)\n\n", cond)
		writeHead(w, append([]string{"object", "protocol"}, ratioCols...))
		for _, r := range rows(sc, cond) {
			if ratios[r] == nil {
				continue
			}
			line := []string{r.obj, r.proto}
			for _, col := range ratioCols {
				switch x, ok := ratios[r][col]; {
				case !ok || x.Pairs == 0:
					line = append(line, "")
				default:
					line = append(line, fmt.Sprintf("%.2f [%.2f-%.2f] %d/%d better", x.PairMedian, x.PairMin, x.PairMax, x.Ahead, x.Pairs))
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(line, " | "))
		}
	}
	return nil
}

// row is a line of the matrix: a condition, an object and a protocol.
type row struct{ cond, obj, proto string }

// rows are a condition's lines, object by object in the scenario's order.
func rows(sc *bench.Scenario, cond string) []row {
	var rs []row
	for _, o := range sc.Objects {
		for _, p := range sc.Protocols {
			rs = append(rs, row{cond, o.Name, p.Name})
		}
	}
	return rs
}

// writeHead prints a markdown table's header and rule.
func writeHead(w io.Writer, hdr []string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(hdr, " | "), strings.Repeat("---|", len(hdr)))
}

// writeOrders says which order each repetition ran the protocols in: the
// sequence of Ratios.Param's values when every ratio family ran in the
// same one (a family's places hold the rotated members), else the names.
func writeOrders(w io.Writer, sc *bench.Scenario, orders [][]string) {
	if len(orders) == 0 {
		return
	}
	param := map[string]string{}
	for _, p := range sc.Protocols {
		param[p.Name] = p.Params[sc.Ratios.Param]
	}
	fmt.Fprintf(w, "\nThe protocols' order rotates with the repetition:\n")
	for rep, names := range orders {
		fmt.Fprintf(w, "- repetition %d: %s\n", rep, orderText(sc, names, param))
	}
}

// orderText is one repetition's order: "server shunt, h2o, nginx in every
// group of 3" when the values of Ratios.Param repeat in groups of the same
// sequence, else the protocols' names.
func orderText(sc *bench.Scenario, names []string, param map[string]string) string {
	var seq []string
	for _, n := range names {
		if slices.Contains(seq, param[n]) {
			break
		}
		seq = append(seq, param[n])
	}
	for i, n := range names {
		if len(seq) < 2 || len(names)%len(seq) != 0 || param[n] != seq[i%len(seq)] {
			return strings.Join(names, ", ")
		}
	}
	return fmt.Sprintf("%s %s in every group of %d", sc.Ratios.Param, strings.Join(seq, ", "), len(seq))
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
