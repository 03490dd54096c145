package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/shunt-net/shunt/experiment"
)

// Merge combines the output directories of shards (or of any sweeps of the
// same scenario) into out: one runs.jsonl holding one record per run ID (see
// Latest) and the scenario file. It returns the scenario and the merged records.
func Merge(out string, dirs []string) (*Scenario, []*experiment.Record, error) {
	if len(dirs) == 0 {
		return nil, nil, fmt.Errorf("merge: no input directories")
	}
	var (
		sc     *Scenario
		source []byte
		all    []*experiment.Record
	)
	for _, d := range dirs {
		file := filepath.Join(d, ScenarioFile)
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		s, err := Parse(file, data)
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		if sc != nil && s.Name != sc.Name {
			return nil, nil, fmt.Errorf("merge: %s is scenario %q, %s is %q", dirs[0], sc.Name, d, s.Name)
		}
		if sc == nil {
			sc, source = s, data
		}
		recs, err := experiment.ReadRecords(filepath.Join(d, RunsFile))
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		all = append(all, recs...)
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
