package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"gopkg.in/yaml.v3"
)

// Section is extra content for the HTML report, such as link-log plots drawn
// from the testbed's per-packet logs. Body must be self-contained (inline SVG).
type Section struct {
	Title string
	Body  template.HTML
}

// Options add to what Write produces.
type Options struct {
	Sections []Section
	Now      func() time.Time // report timestamp; nil: time.Now
}

// Files written by Write into an output directory.
const (
	SummaryCSV  = "summary.csv"
	SummaryJSON = "summary.json"
	TableFile   = "table.txt"
	HTMLFile    = "report.html"
	PlotsDir    = "plots"
)

// scenarioOf is the scenario dir's runs came from: its scenario file, or,
// for records that came without one (--json of shunt replay and shunt get),
// the scenario they describe (bench.FromRecords).
// Its source is the file, or the derived scenario as YAML.
func scenarioOf(dir string, recs []*experiment.Record) (*bench.Scenario, []byte, error) {
	file := filepath.Join(dir, bench.ScenarioFile)
	src, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		sc, err := bench.FromRecords(recs)
		if err != nil {
			return nil, nil, err
		}
		src, err := yaml.Marshal(sc)
		return sc, append([]byte("# no scenario file: the scenario the records describe\n"), src...), err
	}
	if err != nil {
		return nil, nil, err
	}
	sc, err := bench.Parse(file, src)
	return sc, src, err
}

// Write reads dir's runs.jsonl and scenario, and writes summary.csv,
// summary.json, table.txt, matrix.md (a scenario with ratios), plots/ (PNG and SVG) and report.html into dir. It
// returns the summary so callers can also print it.
func Write(dir string, opt Options) (*bench.Scenario, bench.Summary, []*experiment.Record, error) {
	recs, err := experiment.ReadRecords(filepath.Join(dir, bench.RunsFile))
	if err != nil {
		return nil, bench.Summary{}, nil, fmt.Errorf("report: %w", err)
	}
	sc, src, err := scenarioOf(dir, recs)
	if err != nil {
		return nil, bench.Summary{}, nil, fmt.Errorf("report: %w", err)
	}
	sum := bench.Summarize(sc, recs)
	if err := WriteCSV(filepath.Join(dir, SummaryCSV), sum); err != nil {
		return nil, sum, nil, err
	}
	if err := sum.WriteJSON(filepath.Join(dir, SummaryJSON)); err != nil {
		return nil, sum, nil, err
	}
	var table bytes.Buffer
	if err := WriteTable(&table, sc, sum, recs); err != nil {
		return nil, sum, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, TableFile), table.Bytes(), 0o644); err != nil {
		return nil, sum, nil, err
	}
	if sc.Ratios != nil {
		var md bytes.Buffer
		if err := WriteMatrix(&md, sc, sum); err != nil {
			return nil, sum, nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, MatrixFile), md.Bytes(), 0o644); err != nil {
			return nil, sum, nil, err
		}
	}
	// The scenario's own plots (the paper's figures) come first.
	figs, err := WriteLinePlots(filepath.Join(dir, PlotsDir), sc, sum)
	if err != nil {
		return nil, sum, nil, err
	}
	condFigs, err := WritePlots(filepath.Join(dir, PlotsDir), sum)
	if err != nil {
		return nil, sum, nil, err
	}
	figs = append(figs, condFigs...)
	wf, err := WaterfallSection(filepath.Join(dir, PlotsDir), sc, recs)
	if err != nil {
		return nil, sum, nil, err
	}
	if wf != nil {
		opt.Sections = append([]Section{*wf}, opt.Sections...)
	}
	br, err := BitrateSection(filepath.Join(dir, PlotsDir), sc, recs)
	if err != nil {
		return nil, sum, nil, err
	}
	if br != nil {
		opt.Sections = append([]Section{*br}, opt.Sections...)
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	page, err := HTML(htmlData{
		Scenario: sc, Source: string(src), Summary: sum, Runs: len(bench.Latest(recs)),
		Table: table.String(), Figures: figs, Failures: failures(recs), Sections: opt.Sections,
		Generated: now().UTC().Format(time.RFC3339), grids: grids(sum), facts: CollectFacts(recs),
	})
	if err != nil {
		return nil, sum, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, HTMLFile), page, 0o644); err != nil {
		return nil, sum, nil, err
	}
	return sc, sum, recs, nil
}

type htmlData struct {
	Scenario  *bench.Scenario
	Source    string
	Summary   bench.Summary
	Runs      int
	Table     string
	Figures   []Figure
	Failures  []*experiment.Record
	Sections  []Section
	Generated string
	grids     []*grid
	facts     Facts
}

// htmlGrid is a grid flattened for the template.
type htmlGrid struct {
	Condition string
	Links     string
	Header    []string
	Rows      [][]string
	Network   [][2]string
	Compare   []string // best_of comparisons (comparisonLines)
}

// HTML renders the self-contained report page.
func HTML(d htmlData) ([]byte, error) {
	conds := map[string]experiment.Condition{}
	for _, c := range d.Scenario.Conditions {
		conds[c.Name] = c
	}
	var gs []htmlGrid
	for _, g := range d.grids {
		hg := htmlGrid{Condition: g.Condition, Links: LinkText(conds[g.Condition]), Header: []string{g.RowKind}}
		for _, col := range g.Columns {
			hg.Header = append(hg.Header, col.String())
			if g.hasRef(col) {
				hg.Header = append(hg.Header, "paper")
			}
		}
		for _, r := range g.Rows {
			row := []string{r}
			for _, col := range g.Columns {
				c, ok := g.Cells[r][col]
				if ok {
					row = append(row, FormatCell(c))
				} else {
					row = append(row, "")
				}
				if g.hasRef(col) {
					ref := ""
					if ok && c.Reference != nil {
						ref = sec(c.Reference.Value) + " (" + c.Reference.Source + ")"
					}
					row = append(row, ref)
				}
			}
			hg.Rows = append(hg.Rows, row)
		}
		for _, k := range sortedKeys(d.facts.Condition[g.Condition]) {
			hg.Network = append(hg.Network, [2]string{k, strings.Join(d.facts.Condition[g.Condition][k], "; ")})
		}
		hg.Compare = comparisonLines(d.Summary, g.Condition)
		gs = append(gs, hg)
	}
	var protoFacts [][2]string
	for _, p := range d.Scenario.Protocols {
		protoFacts = append(protoFacts, [2]string{p.Name, "driver " + p.Driver + paramText(p.Params) + factText(d.facts.Protocol[p.Name])})
	}
	var svgs []template.HTML
	for _, f := range d.Figures {
		svgs = append(svgs, template.HTML(f.SVG)) // our own plotter's output
	}
	var buf bytes.Buffer
	err := pageTmpl.Execute(&buf, map[string]any{
		"D": d, "Grids": gs, "Protocols": protoFacts, "SVGs": svgs,
	})
	return buf.Bytes(), err
}

var pageTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>shunt bench {{.D.Scenario.Name}}</title>
<style>
body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
th{background:#f4f4f4}pre{background:#f8f8f8;padding:1em;overflow:auto}.err{color:#a00}
figure{margin:1em 0}svg{max-width:100%;height:auto}
</style></head><body>
<h1>shunt bench: {{.D.Scenario.Name}}</h1>
<p>{{.D.Scenario.Description}}</p>
<p>{{.D.Runs}} runs, generated {{.D.Generated}}. Times in seconds: median [p25-p75], n successful runs; errors are counted in each cell.</p>
{{range .Grids}}
<h2>Condition {{.Condition}}</h2>
<p>{{.Links}}</p>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
{{if .Network}}<table>{{range .Network}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>{{end}}
{{with .Compare}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}
<h2>Plots</h2>
{{range .SVGs}}<figure>{{.}}</figure>{{end}}
<h2>Protocols</h2>
<table>{{range .Protocols}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{with .D.Scenario.Notes}}<h2>Notes</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .D.Failures}}<h2 class="err">Failed runs</h2>
<table><tr><th>run</th><th>cell</th><th>rep</th><th>error</th></tr>
{{range .}}<tr><td>{{.ID}}</td><td>{{.Condition.Name}}/{{.Protocol.Name}}/{{.Object.Name}}</td><td>{{.Rep}}</td><td class="err">{{.Error}}</td></tr>{{end}}</table>{{end}}
{{range .D.Sections}}<h2>{{.Title}}</h2>{{.Body}}{{end}}
<h2>Text table</h2><pre>{{.D.Table}}</pre>
<h2>Configuration</h2><pre>{{.D.Source}}</pre>
</body></html>
`))

// paramText is a protocol's params as ", key=value ...", sorted by key.
func paramText(params map[string]string) string {
	if len(params) == 0 {
		return ""
	}
	var kv []string
	for _, k := range sortedKeys(params) {
		kv = append(kv, k+"="+params[k])
	}
	return ", " + strings.Join(kv, " ")
}

// factText is the facts recorded by a protocol's runs as "; key=value",
// distinct values joined by " | ".
func factText(facts map[string][]string) string {
	var s strings.Builder
	for _, k := range sortedKeys(facts) {
		s.WriteString("; " + k + "=" + strings.Join(facts[k], " | "))
	}
	return s.String()
}
