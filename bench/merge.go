package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/shunt-net/shunt/experiment"
)

// Merge combines the output directories of shards (or of whole sweeps of
// the same scenario) into out: one runs.jsonl holding one record per run ID
// (see Latest) and the scenario file. It refuses, naming them, shards that
// no directory holds, directories that hold no shard (a task that never
// started) and shards with runs not run (a task that timed out), so a
// report is never built from part of a sweep; failed runs are recorded
// runs and go into the report as failures. It returns the scenario and the
// merged records.
func Merge(out string, dirs []string) (*Scenario, []*experiment.Record, error) {
	if len(dirs) == 0 {
		return nil, nil, fmt.Errorf("merge: no input directories")
	}
	var (
		sc      *Scenario
		source  []byte
		first   string
		parts   []part
		noShard []string
	)
	for _, d := range dirs {
		sw, sh, err := ReadSweep(d)
		if errors.Is(err, ErrNoSweep) {
			noShard = append(noShard, d)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		file := filepath.Join(d, ScenarioFile)
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		s, err := Parse(file, data)
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		if sc == nil {
			sc, source, first = s, data, d
		} else if s.Name != sc.Name {
			return nil, nil, fmt.Errorf("merge: %s is scenario %q, %s is %q", first, sc.Name, d, s.Name)
		} else if diff := DefinitionDiff(sc, s); len(diff) > 0 {
			return nil, nil, fmt.Errorf("merge: %s and %s hold two versions of scenario %s (%s changed)", first, d, sc.Name, strings.Join(diff, ", "))
		}
		recs, err := experiment.ReadRecords(filepath.Join(d, RunsFile))
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		parts = append(parts, part{dir: d, sweep: sw, shard: sh, recs: recs})
	}
	if sc == nil {
		return nil, nil, fmt.Errorf("merge: no shard in %s (none has a %s)", strings.Join(dirs, ", "), SweepFile)
	}
	if err := checkComplete(sc, parts, noShard); err != nil {
		return nil, nil, err
	}
	var all []*experiment.Record
	for _, p := range parts {
		all = append(all, p.recs...)
	}
	merged := Latest(all)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(out, ScenarioFile), source, 0o644); err != nil {
		return nil, nil, err
	}
	if err := experiment.WriteRecords(filepath.Join(out, RunsFile), merged); err != nil {
		return nil, nil, err
	}
	return sc, merged, nil
}

// RunsFile is the name of the run log in an output directory.
const RunsFile = "runs.jsonl"

// FromRecords is the scenario records describe, for records that no
// scenario file came with (the --json lines of `shunt replay` and `shunt
// get`): its conditions, protocols and objects in the order the records
// first name them, as many repetitions as the highest rep. The same name
// with two different definitions is an error naming it.
func FromRecords(recs []*experiment.Record) (*Scenario, error) {
	if len(recs) == 0 {
		return nil, errors.New("no records")
	}
	s := &Scenario{Name: recs[0].Scenario}
	conds, protos, objs := map[string]int{}, map[string]int{}, map[string]int{}
	for _, r := range recs {
		if r.Scenario != s.Name {
			s.Name = "records"
		}
		s.Reps = max(s.Reps, r.Rep+1)
		if err := addOnce(conds, &s.Conditions, r.Condition.Name, r.Condition, "condition"); err != nil {
			return nil, err
		}
		if err := addOnce(protos, &s.Protocols, r.Protocol.Name, r.Protocol, "protocol"); err != nil {
			return nil, err
		}
		if err := addOnce(objs, &s.Objects, r.Object.Name, r.Object, "object"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// addOnce appends v to *list under name unless the name is there already,
// in which case it must be the same definition.
func addOnce[T any](seen map[string]int, list *[]T, name string, v T, kind string) error {
	if i, ok := seen[name]; ok {
		if !reflect.DeepEqual((*list)[i], v) {
			return fmt.Errorf("%s %q is defined two ways in the records", kind, name)
		}
		return nil
	}
	seen[name] = len(*list)
	*list = append(*list, v)
	return nil
}
