package bench

import (
	"fmt"
	"os"
	"path/filepath"

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
