// Package bench is shunt's experiment runner. A scenario (YAML) declares
// conditions (emulated networks) x protocols (drivers with parameters) x
// objects x repetitions; the runner expands it into runs with stable IDs,
// builds each condition's network once, starts each protocol's servers once
// per condition, and appends every run as one JSON line to runs.jsonl. Tables
// and plots are computed from those lines only (package report).
package bench

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shunt-net/shunt/experiment"
)

// Scenario is one experiment: the cross product of its conditions, protocols
// and objects, each repeated Reps times.
type Scenario struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	Reps        int    `yaml:"reps" json:"reps"`
	// Seed is the root of every run's seed (run seed = hash(seed, run ID)).
	Seed int64 `yaml:"seed" json:"seed"`
	// Timeout bounds one run; a run that exceeds it is recorded as an error.
	Timeout    string                 `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	Conditions []experiment.Condition `yaml:"conditions" json:"conditions"`
	Protocols  []experiment.Protocol  `yaml:"protocols" json:"protocols"`
	Objects    []experiment.Object    `yaml:"objects" json:"objects"`
	// Metrics orders the metrics in tables and plots; unlisted ones follow by name.
	Metrics []string `yaml:"metrics,omitempty" json:"metrics,omitempty"`
	// Reference holds published figures printed beside ours.
	Reference []Reference `yaml:"reference,omitempty" json:"reference,omitempty"`
	// Notes are printed under the table (what was chosen where a paper is silent).
	Notes []string `yaml:"notes,omitempty" json:"notes,omitempty"`
	// Plots and Waterfalls ask the report for figures beyond its
	// per-condition ones (see plotspec.go).
	Plots      []PlotSpec     `yaml:"plots,omitempty" json:"plots,omitempty"`
	Waterfalls *WaterfallSpec `yaml:"waterfalls,omitempty" json:"waterfalls,omitempty"`
	// BestOf derives rows that stand for the best of a family of protocols
	// (see bestof.go).
	BestOf []BestOf `yaml:"best_of,omitempty" json:"best_of,omitempty"`
	// Ratios sets protocols against peers that differ in one param (see
	// ratios.go).
	Ratios *Ratios `yaml:"ratios,omitempty" json:"ratios,omitempty"`
	// Rotate turns the order of the protocols Ratios compares with each
	// repetition (see Order).
	Rotate bool `yaml:"rotate,omitempty" json:"rotate,omitempty"`
}

// Topologies the runner knows, with the number of paths each needs (0: any
// >= 2; -1: none, this machine's loopback without emulation).
var topologies = map[string]int{"single": 1, "twopath": 2, "multihomed": 0, "loopback": -1}

// Reference is a published figure, matched to summary cells by label; an
// empty match field matches any value.
type Reference struct {
	Condition string  `yaml:"condition,omitempty" json:"condition,omitempty"`
	Protocol  string  `yaml:"protocol,omitempty" json:"protocol,omitempty"`
	Object    string  `yaml:"object,omitempty" json:"object,omitempty"`
	Metric    string  `yaml:"metric,omitempty" json:"metric,omitempty"`
	Value     float64 `yaml:"value" json:"value"`
	Source    string  `yaml:"source" json:"source"`
}

// Matches reports whether the reference applies to a cell with these labels.
func (r Reference) Matches(l Labels) bool {
	m := func(want, got string) bool { return want == "" || want == got }
	return m(r.Condition, l.Condition) && m(r.Protocol, l.Protocol) && m(r.Object, l.Object) && m(r.Metric, l.Metric)
}

// DefaultTimeout bounds a run when the scenario sets none.
const DefaultTimeout = 2 * time.Minute

// RunTimeout is the scenario's per-run bound.
func (s *Scenario) RunTimeout() time.Duration {
	if s.Timeout == "" {
		return DefaultTimeout
	}
	d, _ := time.ParseDuration(s.Timeout) // checked by Validate
	return d
}

// Parse decodes a scenario strictly (unknown fields are errors) and validates
// it. file names the source in errors.
func Parse(file string, data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("scenario %s: empty file", file)
		}
		return nil, fmt.Errorf("scenario %s: %w", file, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", file, err)
	}
	return &s, nil
}

func fieldErr(field, value string, format string, a ...any) error {
	return experiment.Errorf(field, value, format, a...)
}

// Validate checks what the runner itself interprets; link texts are checked by
// the NetworkFactory and protocol params and objects by their drivers (Check).
func (s *Scenario) Validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if s.Name == "" {
		add(fieldErr("name", "", "missing"))
	}
	if s.Reps < 1 {
		add(fieldErr("reps", fmt.Sprint(s.Reps), "must be at least 1"))
	}
	if s.Timeout != "" {
		if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 {
			add(fieldErr("timeout", s.Timeout, "not a positive duration"))
		}
	}
	if len(s.Conditions) == 0 {
		add(fieldErr("conditions", "", "at least one condition is needed"))
	}
	if len(s.Protocols) == 0 {
		add(fieldErr("protocols", "", "at least one protocol is needed"))
	}
	if len(s.Objects) == 0 {
		add(fieldErr("objects", "", "at least one object is needed"))
	}
	names := func(kind string, n int, name func(int) string) {
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			f := fmt.Sprintf("%s[%d].name", kind, i)
			switch nm := name(i); {
			case nm == "":
				add(fieldErr(f, "", "missing"))
			case strings.ContainsAny(nm, "/\\ \t\n"):
				add(fieldErr(f, nm, "must not contain spaces or slashes (it names files)"))
			case seen[nm]:
				add(fieldErr(f, nm, "duplicate name"))
			default:
				seen[nm] = true
			}
		}
	}
	names("conditions", len(s.Conditions), func(i int) string { return s.Conditions[i].Name })
	names("protocols", len(s.Protocols), func(i int) string { return s.Protocols[i].Name })
	names("objects", len(s.Objects), func(i int) string { return s.Objects[i].Name })
	for i, c := range s.Conditions {
		f := fmt.Sprintf("conditions[%d]", i)
		want, ok := topologies[c.Topology]
		switch {
		case !ok:
			add(fieldErr(f+".topology", c.Topology, "want single, twopath, multihomed or loopback"))
		case want < 0 && len(c.Paths) > 0:
			add(fieldErr(f+".paths", "", "topology %s has no emulated paths, have %d", c.Topology, len(c.Paths)))
		case want > 0 && len(c.Paths) != want:
			add(fieldErr(f+".paths", "", "topology %s needs %d path(s), have %d", c.Topology, want, len(c.Paths)))
		case want == 0 && len(c.Paths) < 2:
			add(fieldErr(f+".paths", "", "topology %s needs at least 2 paths, have %d", c.Topology, len(c.Paths)))
		}
		for j, p := range c.Paths {
			pf := fmt.Sprintf("%s.paths[%d]", f, j)
			if p.Name == "" {
				add(fieldErr(pf+".name", "", "missing"))
			}
			for dir, l := range map[string]experiment.LinkSpec{"up": p.Up, "down": p.Down} {
				if l.Delay != "" {
					if d, err := time.ParseDuration(l.Delay); err != nil || d < 0 {
						add(fieldErr(pf+"."+dir+".delay", l.Delay, "not a non-negative duration"))
					}
				}
				if l.Rate != "" && l.Trace != "" {
					add(fieldErr(pf+"."+dir, "", "rate and trace are exclusive"))
				}
			}
		}
	}
	for i, p := range s.Protocols {
		if p.Driver == "" {
			add(fieldErr(fmt.Sprintf("protocols[%d].driver", i), "", "missing"))
		}
	}
	for i, o := range s.Objects {
		if o.Page != nil && (o.Size != "" || o.Background != "") {
			add(fieldErr(fmt.Sprintf("objects[%d]", i), "", "page excludes size and background"))
		}
		if o.BackgroundAfter != "" && o.Background == "" {
			add(fieldErr(fmt.Sprintf("objects[%d].background_after", i), o.BackgroundAfter, "needs background"))
		}
	}
	errs = append(errs, s.validateFigures()...)
	errs = append(errs, s.validateBestOf()...)
	errs = append(errs, s.validateRatios()...)
	if s.Rotate && s.Ratios == nil {
		add(fieldErr("rotate", "true", "needs ratios: it turns the order of the protocols ratios compares"))
	}
	sortErrs(errs)
	return errors.Join(errs...)
}

// sortErrs orders errors by text so map iteration order never shows.
func sortErrs(errs []error) {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

// Check validates the scenario against the drivers and the network factory,
// before any run, so a typo fails in a second rather than after an hour.
func (s *Scenario) Check(reg Drivers, nf experiment.NetworkFactory) error {
	var errs []error
	for i, p := range s.Protocols {
		d, err := reg.Lookup(p.Driver)
		if err != nil {
			errs = append(errs, fieldErr(fmt.Sprintf("protocols[%d].driver", i), p.Driver, "%v", err))
			continue
		}
		for j, o := range s.Objects {
			if err := d.Check(p, o); err != nil {
				errs = append(errs, fmt.Errorf("protocols[%d] (%s) with objects[%d] (%s): %w", i, p.Name, j, o.Name, err))
			}
		}
	}
	if nf != nil {
		for i, c := range s.Conditions {
			if err := nf.Check(c); err != nil {
				errs = append(errs, fmt.Errorf("conditions[%d] (%s): %w", i, c.Name, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("scenario %s: %w", s.Name, errors.Join(errs...))
	}
	return nil
}

// Step files travel with the scenarios that name them, so a built shunt
// runs every shipped scenario outside the repository.
//
//go:embed scenarios/*.yaml scenarios/*.step
var shipped embed.FS

// ShippedFile returns a file shipped beside the scenarios, named as the
// scenarios name it from the repository root ("bench/scenarios/NAME").
func ShippedFile(name string) ([]byte, error) {
	rest, ok := strings.CutPrefix(path.Clean(filepath.ToSlash(name)), "bench/scenarios/")
	if !ok || strings.Contains(rest, "/") {
		return nil, fmt.Errorf("%s: not a shipped scenario file", name)
	}
	return shipped.ReadFile(path.Join("scenarios", rest))
}

// Shipped returns the names of the scenarios built into shunt, sorted.
func Shipped() []string {
	ents, _ := fs.ReadDir(shipped, "scenarios")
	var names []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Load returns a shipped scenario by name, or reads a scenario file when
// nameOrFile is not a shipped name (or contains a slash or .yaml).
func Load(nameOrFile string) (*Scenario, []byte, error) {
	if !strings.ContainsAny(nameOrFile, "/\\") && !strings.HasSuffix(nameOrFile, ".yaml") && !strings.HasSuffix(nameOrFile, ".yml") {
		data, err := shipped.ReadFile(path.Join("scenarios", nameOrFile+".yaml"))
		if err != nil {
			return nil, nil, fmt.Errorf("no shipped scenario %q (shunt bench --list shows them); give a file path for your own", nameOrFile)
		}
		s, err := Parse(nameOrFile+".yaml", data)
		return s, data, err
	}
	data, err := os.ReadFile(nameOrFile)
	if err != nil {
		return nil, nil, fmt.Errorf("scenario: %w", err)
	}
	s, err := Parse(nameOrFile, data)
	return s, data, err
}
