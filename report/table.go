// Package report turns a sweep's run records (runs.jsonl, via bench.Summarize)
// into what people read: a text table, summary.csv, PNG/SVG plots and one
// self-contained HTML report. It computes nothing from in-memory state of a
// sweep: every figure comes from the records.
package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

// column is one (key, metric) of a condition's table, where key is an object
// (rows are protocols) or a protocol (rows are objects).
type column struct{ Key, Metric string }

func (c column) String() string {
	if c.Metric == "" {
		return c.Key
	}
	return c.Key + " " + c.Metric
}

// grid is one condition's cells as a table. The dimension with more values
// (protocols or objects) runs down the rows, so that a sweep of six sizes
// over two protocols reads as six rows rather than eighteen columns.
type grid struct {
	Condition string
	RowKind   string // "protocol" or "object"
	Rows      []string
	Columns   []column
	Cells     map[string]map[column]bench.Cell // row -> column -> cell
}

// grids groups a summary by condition, keeping the summary's order.
func grids(sum bench.Summary) []*grid {
	var out []*grid
	byCond := map[string]*grid{}
	protos, objs := map[string][]string{}, map[string][]string{}
	for _, c := range sum.Cells {
		l := c.Labels
		if byCond[l.Condition] == nil {
			byCond[l.Condition] = &grid{Condition: l.Condition, Cells: map[string]map[column]bench.Cell{}}
			out = append(out, byCond[l.Condition])
		}
		if !slices.Contains(protos[l.Condition], l.Protocol) {
			protos[l.Condition] = append(protos[l.Condition], l.Protocol)
		}
		if !slices.Contains(objs[l.Condition], l.Object) {
			objs[l.Condition] = append(objs[l.Condition], l.Object)
		}
	}
	for _, g := range out {
		g.RowKind = "protocol"
		if len(objs[g.Condition]) > len(protos[g.Condition]) {
			g.RowKind = "object"
		}
	}
	for _, c := range sum.Cells {
		l := c.Labels
		g := byCond[l.Condition]
		row, col := l.Protocol, column{l.Object, l.Metric}
		if g.RowKind == "object" {
			row, col = l.Object, column{l.Protocol, l.Metric}
		}
		if g.Cells[row] == nil {
			g.Cells[row] = map[column]bench.Cell{}
			g.Rows = append(g.Rows, row)
		}
		if !slices.Contains(g.Columns, col) {
			g.Columns = append(g.Columns, col)
		}
		g.Cells[row][col] = c
	}
	return out
}

// hasRef reports whether any cell of the column has a published figure.
func (g *grid) hasRef(col column) bool {
	for _, r := range g.Rows {
		if c, ok := g.Cells[r][col]; ok && c.Reference != nil {
			return true
		}
	}
	return false
}

// FormatCell prints a cell as "median [p25-p75]" with its run count and errors.
func FormatCell(c bench.Cell) string {
	if c.N == 0 {
		return fmt.Sprintf("- (%d errors)", c.Errors)
	}
	v := func(x float64) string { return inUnit(x, c.Unit) }
	s := fmt.Sprintf("%s [%s-%s] n=%d", v(c.P50), v(c.P25), v(c.P75), c.N)
	if c.Unit != "s" && c.Unit != "" {
		s = fmt.Sprintf("%s %s [%s-%s] n=%d", v(c.P50), c.Unit, v(c.P25), v(c.P75), c.N)
	}
	if c.From != "" {
		s += " = " + c.From // a best_of row names the protocol it stands for
	}
	if c.Errors > 0 {
		s += fmt.Sprintf(" (%d errors)", c.Errors)
	}
	return s
}

// inUnit prints a value of a unit: seconds as sec does, other values with
// three significant digits at least, and no decimals beyond 1000.
func inUnit(v float64, unit string) string {
	if unit == "s" || unit == "" || math.IsNaN(v) {
		return sec(v)
	}
	switch {
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// sec prints seconds with three significant digits at least to the millisecond.
func sec(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Facts collects, per protocol, the distinct values of what the records say
// about the setup (server versions, congestion control, MPTCP), and per
// condition the network description, so the table says what was measured.
type Facts struct {
	Protocol  map[string]map[string][]string // protocol -> key -> distinct values
	Condition map[string]map[string][]string
}

// CollectFacts reads the facts from run records.
func CollectFacts(recs []*experiment.Record) Facts {
	f := Facts{Protocol: map[string]map[string][]string{}, Condition: map[string]map[string][]string{}}
	add := func(m map[string]map[string][]string, k1, k2, v string) {
		if v == "" {
			return
		}
		if m[k1] == nil {
			m[k1] = map[string][]string{}
		}
		for _, x := range m[k1][k2] {
			if x == v {
				return
			}
		}
		m[k1][k2] = append(m[k1][k2], v)
	}
	for _, r := range recs {
		p := r.Protocol.Name
		add(f.Protocol, p, "client cc", r.Sock.CC)
		if r.OK() {
			add(f.Protocol, p, "client mptcp", strconv.FormatBool(r.Sock.MPTCP))
			add(f.Protocol, p, "client notsent_lowat", strconv.Itoa(r.Sock.NotSentLowat))
		}
		for k, v := range r.Info {
			if strings.HasPrefix(k, "server") {
				add(f.Protocol, p, k, v)
			}
		}
		for k, v := range r.Network {
			add(f.Condition, r.Condition.Name, k, v)
		}
	}
	return f
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// LinkText describes a condition's links as configured.
func LinkText(c experiment.Condition) string {
	if len(c.Paths) == 0 {
		return c.Topology + ": no emulated link"
	}
	var parts []string
	for _, p := range c.Paths {
		parts = append(parts, fmt.Sprintf("%s: down %s; up %s", p.Name, linkSpec(p.Down), linkSpec(p.Up)))
	}
	return strings.Join(parts, " | ")
}

func linkSpec(l experiment.LinkSpec) string {
	var f []string
	for _, kv := range [][2]string{{"delay", l.Delay}, {"rate", l.Rate}, {"trace", l.Trace}, {"loss", l.Loss}, {"queue", l.Queue}} {
		if kv[1] != "" {
			f = append(f, kv[0]+" "+kv[1])
		}
	}
	if len(f) == 0 {
		return "unshaped"
	}
	return strings.Join(f, ", ")
}

// WriteTable prints the summary as one table per condition: protocols as
// rows, (object, metric) as columns with the published figure beside ours,
// then the setup facts, errors and the scenario's notes.
func WriteTable(w io.Writer, sc *bench.Scenario, sum bench.Summary, recs []*experiment.Record) error {
	facts := CollectFacts(recs)
	conds := map[string]experiment.Condition{}
	for _, c := range sc.Conditions {
		conds[c.Name] = c
	}
	fmt.Fprintf(w, "scenario %s: %s\n", sc.Name, sc.Description)
	fmt.Fprintln(w, "median [p25-p75], n runs; times in seconds where no unit is named")
	for _, g := range grids(sum) {
		fmt.Fprintf(w, "\ncondition %s (%s)\n", g.Condition, LinkText(conds[g.Condition]))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		hdr := []string{g.RowKind}
		for _, col := range g.Columns {
			hdr = append(hdr, col.String())
			if g.hasRef(col) {
				hdr = append(hdr, "paper")
			}
		}
		fmt.Fprintln(tw, strings.Join(hdr, "\t"))
		for _, r := range g.Rows {
			row := []string{r}
			for _, col := range g.Columns {
				c, ok := g.Cells[r][col]
				if !ok {
					row = append(row, "")
				} else {
					row = append(row, FormatCell(c))
				}
				if g.hasRef(col) {
					ref := ""
					if ok && c.Reference != nil {
						ref = sec(c.Reference.Value)
					}
					row = append(row, ref)
				}
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, k := range sortedKeys(facts.Condition[g.Condition]) {
			fmt.Fprintf(w, "  network %s: %s\n", k, strings.Join(facts.Condition[g.Condition][k], "; "))
		}
		for _, l := range comparisonLines(sum, g.Condition) {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w)
	for _, p := range sc.Protocols {
		var kv []string
		for _, k := range sortedKeys(facts.Protocol[p.Name]) {
			kv = append(kv, k+" "+strings.Join(facts.Protocol[p.Name][k], "/"))
		}
		fmt.Fprintf(w, "%s: %s\n", p.Name, strings.Join(kv, ", "))
	}
	if srcs := refSources(sum); len(srcs) > 0 {
		fmt.Fprintf(w, "paper: %s\n", strings.Join(srcs, ", "))
	}
	for _, n := range sc.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, r := range failures(recs) {
		fmt.Fprintf(w, "error: run %s (%s/%s/%s rep %d): %s\n", r.ID, r.Condition.Name, r.Protocol.Name, r.Object.Name, r.Rep, r.Error)
	}
	return writeNodes(w, sc, recs)
}

func refSources(sum bench.Summary) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range sum.Cells {
		if c.Reference != nil && !seen[c.Reference.Source] {
			seen[c.Reference.Source] = true
			out = append(out, c.Reference.Source)
		}
	}
	return out
}

// failures are the runs whose latest record is an error.
func failures(recs []*experiment.Record) []*experiment.Record {
	var out []*experiment.Record
	for _, r := range bench.Latest(recs) {
		if !r.OK() {
			out = append(out, r)
		}
	}
	return out
}

// WriteCSV writes summary.csv: one row per cell.
func WriteCSV(file string, sum bench.Summary) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"scenario", "condition", "protocol", "object", "metric", "n", "errors", "p25", "p50", "p75", "unit", "reference", "reference_source"})
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, c := range sum.Cells {
		ref, src := "", ""
		if c.Reference != nil {
			ref, src = num(c.Reference.Value), c.Reference.Source
		}
		p25, p50, p75 := "", "", ""
		if c.N > 0 {
			p25, p50, p75 = num(c.P25), num(c.P50), num(c.P75)
		}
		w.Write([]string{sum.Scenario, c.Labels.Condition, c.Labels.Protocol, c.Labels.Object, c.Labels.Metric,
			strconv.Itoa(c.N), strconv.Itoa(c.Errors), p25, p50, p75, c.Unit, ref, src})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return f.Close()
}
