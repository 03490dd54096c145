package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shunt-net/shunt/experiment"
)

// SweepFile says what part of which sweep an output directory holds, so
// merge can tell a complete set of shards from one with shards or runs
// missing.
const SweepFile = "sweep.json"

// Sweep is the content of SweepFile.
type Sweep struct {
	Scenario string `json:"scenario"`
	Reps     int    `json:"reps"`
	Shard    string `json:"shard"` // "i/n"; "1/1" for a whole sweep
}

func writeSweep(dir string, s Sweep) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SweepFile), append(b, '\n'), 0o644)
}

// ErrNoSweep: a directory has no SweepFile.
var ErrNoSweep = errors.New("no " + SweepFile)

// ReadSweep reads dir's SweepFile.
func ReadSweep(dir string) (Sweep, Shard, error) {
	file := filepath.Join(dir, SweepFile)
	var s Sweep
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return s, Shard{}, fmt.Errorf("%s: %w", dir, ErrNoSweep)
	}
	if err != nil {
		return s, Shard{}, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, Shard{}, fmt.Errorf("%s: %w", file, err)
	}
	sh, err := ParseShard(s.Shard)
	if err != nil {
		return s, Shard{}, fmt.Errorf("%s: %w", file, err)
	}
	if s.Reps < 1 {
		return s, Shard{}, fmt.Errorf("%s: reps %d", file, s.Reps)
	}
	return s, sh, nil
}

// Missing returns the runs of sc (with reps repetitions) in shard that recs
// holds no record of, failed or not.
func Missing(sc *Scenario, reps int, shard Shard, recs []*experiment.Record) []*experiment.Run {
	have := map[string]bool{}
	for _, r := range recs {
		have[r.ID] = true
	}
	s := *sc
	s.Reps = reps
	var out []*experiment.Run
	for _, run := range Plan(&s) {
		if shard.Has(run) && !have[run.ID] {
			out = append(out, run)
		}
	}
	return out
}

// part is one input directory of a merge.
type part struct {
	dir   string
	sweep Sweep
	shard Shard
	recs  []*experiment.Record
}

// IncompleteError is merge's refusal: shards no directory holds, and
// shards whose runs are not all recorded.
type IncompleteError struct {
	Scenario string
	NoShard  []string // directories without a SweepFile
	Absent   []string // "i/n (reps R)"
	Short    []string // "i/n (DIR): k of m runs not run"
}

func (e *IncompleteError) Error() string {
	var parts []string
	if len(e.NoShard) > 0 {
		parts = append(parts, "no shard in "+strings.Join(e.NoShard, ", ")+" (no "+SweepFile+": its task never started, or shunt bench before it wrote one ran there)")
	}
	if len(e.Absent) > 0 {
		parts = append(parts, "missing shards "+strings.Join(e.Absent, ", ")+" (no directory given holds them)")
	}
	if len(e.Short) > 0 {
		parts = append(parts, "incomplete shards "+strings.Join(e.Short, "; "))
	}
	return fmt.Sprintf("merge: sweep of %s incomplete, no report built: %s; resume a shard with shunt bench %s --shard i/n --reps R --out DIR, then merge again", e.Scenario, strings.Join(parts, "; "), e.Scenario)
}

// checkComplete refuses parts that do not add up to whole sweeps: for every
// shard count n among them (with one repetition count each), shards 1..n
// must all be there, each with a record of every run of its plan.
func checkComplete(sc *Scenario, parts []part, noShard []string) error {
	type set struct {
		reps int
		have map[int]bool
	}
	sets := map[int]*set{}
	e := &IncompleteError{Scenario: sc.Name, NoShard: noShard}
	for _, p := range parts {
		s := sets[p.shard.N]
		if s == nil {
			s = &set{reps: p.sweep.Reps, have: map[int]bool{}}
			sets[p.shard.N] = s
		}
		if s.reps != p.sweep.Reps {
			return fmt.Errorf("merge: shards of %d ran %d and %d repetitions (%s): one split of one sweep at a time", p.shard.N, s.reps, p.sweep.Reps, p.dir)
		}
		s.have[p.shard.I] = true
		if miss := Missing(sc, p.sweep.Reps, p.shard, p.recs); len(miss) > 0 {
			total := len(Missing(sc, p.sweep.Reps, p.shard, nil))
			e.Short = append(e.Short, fmt.Sprintf("%s (%s): %d of %d runs not run", p.shard, p.dir, len(miss), total))
		}
	}
	ns := make([]int, 0, len(sets))
	for n := range sets {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for _, n := range ns {
		for i := 1; i <= n; i++ {
			if !sets[n].have[i] {
				e.Absent = append(e.Absent, fmt.Sprintf("%d/%d (reps %d)", i, n, sets[n].reps))
			}
		}
	}
	if len(e.NoShard) > 0 || len(e.Absent) > 0 || len(e.Short) > 0 {
		return e
	}
	return nil
}
