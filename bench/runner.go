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
}

// ScenarioFile is the copy of the scenario kept in an output directory.
const ScenarioFile = "scenario.yaml"

// Run executes every run of the shard that runs.jsonl does not already hold
// as a success, appending one record per run. It builds each condition's
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
	var todo []*experiment.Run
	inShard := 0
	for _, run := range Plan(r.Scenario) {
		if !r.Shard.Has(run.ID) {
			continue
		}
		inShard++
		if !done[run.ID] {
			todo = append(todo, run)
		}
	}
	w, err := experiment.OpenRecordWriter(runsFile)
	if err != nil {
		return err
	}
	defer w.Close()
	r.Progress.Start(len(todo), inShard-len(todo))
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

// runCondition runs one condition's runs (consecutive in the plan) on one network.
func (r *Runner) runCondition(ctx context.Context, reg Drivers, w *experiment.RecordWriter, runs []*experiment.Run) (err error) {
	cond := runs[0].Condition
	fail := func(runs []*experiment.Run, what string, cause error) error {
		for _, run := range runs {
			rec := &experiment.Record{Run: *run, Start: r.Now(), Shard: r.shardLabel(), Error: fmt.Sprintf("%s: %v", what, cause)}
			if err := r.record(w, rec); err != nil {
				return err
			}
		}
		return nil
	}
	if r.Networks == nil {
		return fail(runs, "condition "+cond.Name, errors.New("no network factory"))
	}
	seed := conditionSeed(r.Scenario.Seed, cond.Name)
	nw, err := r.Networks.Build(ctx, cond, seed)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(runs, "building network for condition "+cond.Name, err)
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
	env := &experiment.Env{Condition: cond, Net: nw, Objects: r.Scenario.Objects, Dir: dir, Log: r.Log}
	stamp := func(rec *experiment.Record) { rec.NetSeed = seed }
	for len(runs) > 0 {
		n := 1
		for n < len(runs) && runs[n].Protocol.Name == runs[0].Protocol.Name {
			n++
		}
		if err := r.runProtocol(ctx, reg, w, env, stamp, runs[:n], fail); err != nil {
			return err
		}
		runs = runs[n:]
	}
	return nil
}

func (r *Runner) runProtocol(ctx context.Context, reg Drivers, w *experiment.RecordWriter, env *experiment.Env, stamp func(*experiment.Record), runs []*experiment.Run, fail func([]*experiment.Run, string, error) error) (err error) {
	p := runs[0].Protocol
	penv := *env
	penv.Port = r.port(p)
	d, err := reg.Lookup(p.Driver)
	if err != nil {
		return fail(runs, "protocol "+p.Name, err)
	}
	sess, err := d.Start(ctx, &penv, p)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(runs, fmt.Sprintf("starting %s (driver %s)", p.Name, p.Driver), err)
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("stopping %s: %w", p.Name, cerr)
		}
	}()
	for _, run := range runs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rec := r.runOne(ctx, env.Net, sess, run)
		if ctx.Err() != nil {
			return ctx.Err() // interrupted, not measured: resume will redo it
		}
		stamp(rec)
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
	for _, d := range definitionDiff(old, r.Scenario) {
		return fmt.Errorf("%s holds runs of another version of scenario %s (%s changed): use another --out, or remove the directory to start afresh", r.OutDir, r.Scenario.Name, d)
	}
	return nil
}

// definitionDiff names the parts that define runs (seed, conditions,
// protocols, objects) in which a and b differ.
func definitionDiff(a, b *Scenario) []string {
	var diff []string
	for _, part := range []struct {
		name string
		a, b any
	}{{"seed", a.Seed, b.Seed}, {"conditions", a.Conditions, b.Conditions}, {"protocols", a.Protocols, b.Protocols}, {"objects", a.Objects, b.Objects}} {
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
