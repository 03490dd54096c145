package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/shunt-net/shunt/experiment"
)

// Runner executes a scenario's runs into an output directory.
type Runner struct {
	Scenario *Scenario
	// Source is the scenario text, copied to OutDir/scenario.yaml so merge and
	// later readers know what was run.
	Source   []byte
	Drivers  Drivers                   // the experiments scenarios name
	Networks experiment.NetworkFactory // builds each condition's network
	OutDir   string
	Shard    Shard // zero value: the whole sweep
	Progress Progress
	Log      io.Writer        // nil: discard
	Now      func() time.Time // nil: time.Now
	// MaxRuns bounds the runs done in this call (0: all), the next ones in
	// plan order, so a sweep of long runs goes on over measuring holds of
	// fixed length: each call resumes where the last one stopped.
	MaxRuns int
	// Binary is written into every record (experiment.Binary()).
	Binary string
}

// ScenarioFile is the copy of the scenario kept in an output directory.
const ScenarioFile = "scenario.yaml"

// Run executes every run of the shard that runs.jsonl does not already hold
// as a success (the first MaxRuns of them, if set), appending one record per
// run. It builds each condition's
// network once and starts each protocol once per condition, and tears all of
// it down before returning, also when ctx is cancelled (Ctrl-C). Failed runs
// are recorded with their error and the sweep goes on; Run returns an error
// only when the sweep itself could not go on.
func (r *Runner) Run(ctx context.Context) error {
	reg := r.Drivers
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Log == nil {
		r.Log = io.Discard
	}
	if r.Progress == nil {
		r.Progress = nopProgress{}
	}
	if err := r.Scenario.Check(reg, r.Networks); err != nil {
		return err
	}
	if err := r.sameScenario(); err != nil {
		return err
	}
	if err := os.MkdirAll(r.OutDir, 0o755); err != nil {
		return err
	}
	unlock, err := lockDir(r.OutDir)
	if err != nil {
		return err
	}
	defer unlock()
	if r.Source != nil {
		if err := os.WriteFile(filepath.Join(r.OutDir, ScenarioFile), r.Source, 0o644); err != nil {
			return err
		}
	}
	runsFile := filepath.Join(r.OutDir, RunsFile)
	old, err := experiment.ReadRecords(runsFile)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	done := map[string]bool{}
	for _, rec := range old {
		if rec.Scenario != r.Scenario.Name {
			return fmt.Errorf("%s holds runs of scenario %q, not %q: use another --out", runsFile, rec.Scenario, r.Scenario.Name)
		}
		if rec.OK() {
			done[rec.ID] = true
		}
	}
	whole := r.Shard
	if whole.N <= 1 {
		whole = Shard{I: 1, N: 1}
	}
	if sw, _, err := ReadSweep(r.OutDir); err == nil && sw.Shard != whole.String() {
		return fmt.Errorf("%s holds shard %s of the sweep, not %s: use another --out", r.OutDir, sw.Shard, whole)
	}
	if err := writeSweep(r.OutDir, Sweep{Scenario: r.Scenario.Name, Reps: r.Scenario.Reps, Shard: whole.String()}); err != nil {
		return err
	}
	var todo []*experiment.Run
	inShard := 0
	for _, run := range Plan(r.Scenario) {
		if !r.Shard.Has(run) {
			continue
		}
		inShard++
		if !done[run.ID] {
			todo = append(todo, run)
		}
	}
	skipped := inShard - len(todo)
	if r.MaxRuns > 0 && len(todo) > r.MaxRuns {
		todo = todo[:r.MaxRuns]
	}
	w, err := experiment.OpenRecordWriter(runsFile)
	if err != nil {
		return err
	}
	defer w.Close()
	r.Progress.Start(len(todo), skipped)
	defer r.Progress.Finish()
	for len(todo) > 0 {
		n := 1
		for n < len(todo) && todo[n].Condition.Name == todo[0].Condition.Name {
			n++
		}
		if err := r.runCondition(ctx, reg, w, todo[:n]); err != nil {
			return err
		}
		todo = todo[n:]
	}
	return nil
}

// runCondition runs one condition's runs (consecutive in the plan) on one
// network. The plan interleaves protocols pair by pair, so each protocol's
// session starts at its first run and serves the condition's runs until
// the condition is done; sessions listen on ports and scratch directories
// of their own.
func (r *Runner) runCondition(ctx context.Context, reg Drivers, w *experiment.RecordWriter, runs []*experiment.Run) (err error) {
	cond := runs[0].Condition
	if r.Networks == nil {
		return r.fail(w, runs, "condition "+cond.Name, errors.New("no network factory"))
	}
	seed := conditionSeed(r.Scenario.Seed, cond.Name)
	nw, err := r.Networks.Build(ctx, cond, seed)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.fail(w, runs, "building network for condition "+cond.Name, err)
	}
	defer func() {
		if cerr := nw.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("tearing down network of condition %s: %w", cond.Name, cerr)
		}
	}()
	dir, err := os.MkdirTemp("", "shunt-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := &experiment.Env{Condition: cond, Net: nw, Objects: r.Scenario.Objects, Log: r.Log}
	var started []*session
	sessions := map[string]*session{}
	defer func() {
		for _, s := range started {
			if s.sess == nil {
				continue
			}
			if cerr := s.sess.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("stopping %s: %w", s.name, cerr)
			}
		}
	}()
	for _, run := range runs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s := sessions[run.Protocol.Name]
		if s == nil {
			s = r.start(ctx, reg, env, dir, run.Protocol)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			sessions[run.Protocol.Name] = s
			started = append(started, s)
		}
		if s.err != nil {
			if err := r.fail(w, []*experiment.Run{run}, s.what, s.err); err != nil {
				return err
			}
			continue
		}
		rec := r.runOne(ctx, nw, s.sess, run)
		if ctx.Err() != nil {
			return ctx.Err() // interrupted, not measured: resume will redo it
		}
		rec.NetSeed = seed
		if err := r.record(w, rec); err != nil {
			return err
		}
	}
	return nil
}

// session is one protocol's session in a condition, or why it did not start.
type session struct {
	name string
	sess experiment.Session
	what string // what failed, with err
	err  error
}

// start starts protocol p's session in env, in a scratch directory of its own under dir.
func (r *Runner) start(ctx context.Context, reg Drivers, env *experiment.Env, dir string, p experiment.Protocol) *session {
	s := &session{name: p.Name, what: "protocol " + p.Name}
	penv := *env
	penv.Port = r.port(p)
	penv.Dir = filepath.Join(dir, strconv.Itoa(penv.Port))
	d, err := reg.Lookup(p.Driver)
	if err == nil {
		err = os.Mkdir(penv.Dir, 0o755)
	}
	if err != nil {
		s.err = err
		return s
	}
	s.sess, s.err = d.Start(ctx, &penv, p)
	if s.err != nil {
		s.what = fmt.Sprintf("starting %s (driver %s)", p.Name, p.Driver)
	}
	return s
}

// fail records runs as failed before they could run, with what failed and why.
func (r *Runner) fail(w *experiment.RecordWriter, runs []*experiment.Run, what string, cause error) error {
	for _, run := range runs {
		rec := &experiment.Record{Run: *run, Start: r.Now(), Shard: r.shardLabel(), Error: fmt.Sprintf("%s: %v", what, cause)}
		if err := r.record(w, rec); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) runOne(ctx context.Context, nw experiment.Network, sess experiment.Session, run *experiment.Run) *experiment.Record {
	rec := experiment.RunOnce(ctx, nw, sess, run, r.Scenario.RunTimeout(), r.Now)
	rec.Shard = r.shardLabel()
	return rec
}

func (r *Runner) record(w *experiment.RecordWriter, rec *experiment.Record) error {
	rec.Binary = r.Binary
	if err := w.Write(rec); err != nil {
		return err
	}
	r.Progress.Step(rec)
	return nil
}

// FirstPort is the server port of a scenario's first protocol; protocol i
// gets FirstPort+i, so sessions of different protocols never meet on one
// listener.
const FirstPort = 8000

func (r *Runner) port(p experiment.Protocol) int {
	for i, q := range r.Scenario.Protocols {
		if q.Name == p.Name {
			return FirstPort + i
		}
	}
	return FirstPort
}

func (r *Runner) shardLabel() string {
	if r.Shard.N <= 1 {
		return ""
	}
	return r.Shard.String()
}

// sameScenario refuses to resume an output directory whose runs came from
// another definition of the scenario: their records would be pooled with
// the new ones in cells of the same names. Renaming, notes, plots,
// references and the count of repetitions may change (more repetitions
// extend a sweep); what defines runs may not.
func (r *Runner) sameScenario() error {
	file := filepath.Join(r.OutDir, ScenarioFile)
	src, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	old, err := Parse(file, src)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	for _, d := range DefinitionDiff(old, r.Scenario) {
		return fmt.Errorf("%s holds runs of another version of scenario %s (%s changed): use another --out, or remove the directory to start afresh", r.OutDir, r.Scenario.Name, d)
	}
	return nil
}

// DefinitionDiff names the parts that define runs (seed, conditions,
// protocols, objects, and the order they run in) in which a and b differ.
func DefinitionDiff(a, b *Scenario) []string {
	var diff []string
	for _, part := range []struct {
		name string
		a, b any
	}{{"seed", a.Seed, b.Seed}, {"conditions", a.Conditions, b.Conditions}, {"protocols", a.Protocols, b.Protocols}, {"objects", a.Objects, b.Objects}, {"rotate", a.Rotate, b.Rotate}} {
		ja, _ := json.Marshal(part.a)
		jb, _ := json.Marshal(part.b)
		if !bytes.Equal(ja, jb) {
			diff = append(diff, part.name)
		}
	}
	return diff
}

// conditionSeed seeds a condition's network (its loss models). It depends on
// the condition's name only, so every shard builds the same network.
func conditionSeed(seed int64, cond string) int64 {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d/condition/%s", seed, cond)))
	return int64(binary.BigEndian.Uint64(h[:8]) >> 1)
}
