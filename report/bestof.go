package report

import (
	"fmt"
	"strings"

	"github.com/shunt-net/shunt/bench"
)

// comparisonLines says, per object of a condition, which member a BestOf row
// stands for and each compared protocol's median ratio to it, e.g.
// "vs mhttp-best, median time: 4MB (= mhttp-512KB 2.10 s): mph2 0.85 (-15.0%)".
func comparisonLines(sum bench.Summary, cond string) []string {
	type group struct{ baseline, metric, obj, best string }
	var order []group
	parts := map[group][]string{}
	for _, c := range sum.Comparisons {
		if c.Condition != cond {
			continue
		}
		g := group{c.Baseline, c.Metric, c.Object, c.Best}
		if parts[g] == nil {
			order = append(order, g)
		}
		parts[g] = append(parts[g], fmt.Sprintf("%s %.3f (%+.1f%%)", c.Protocol, c.Ratio, 100*(c.Ratio-1)))
	}
	best := map[bench.Labels]bench.Cell{}
	for _, c := range sum.Cells {
		if c.From != "" {
			best[c.Labels] = c
		}
	}
	var out []string
	for _, g := range order {
		b := best[bench.Labels{Condition: cond, Protocol: g.baseline, Object: g.obj, Metric: g.metric}]
		out = append(out, fmt.Sprintf("vs %s, median %s: %s (= %s %s s): %s",
			g.baseline, g.metric, g.obj, g.best, sec(b.P50), strings.Join(parts[g], ", ")))
	}
	return out
}
