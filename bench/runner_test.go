package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
)

const fakeScenario = `
name: fake
reps: 3
seed: 7
conditions:
  - name: fast
    topology: single
    paths: [{name: p, down: {delay: 5ms, rate: 100Mbit}, up: {delay: 5ms}}]
  - name: slow
    topology: single
    paths: [{name: p, down: {delay: 50ms, rate: 1Mbit}, up: {delay: 50ms}}]
protocols:
  - {name: a, driver: fake, params: {speed: fast}}
  - {name: b, driver: fake}
objects:
  - {name: small, size: 1KB}
  - {name: big, size: 1MB}
reference:
  - {protocol: a, object: small, metric: time, value: 0.05, source: paper}
`

// fakeClock advances one second per reading, so durations are deterministic.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { c.t = c.t.Add(time.Second); return c.t }

func newFakeRunner(t *testing.T, dir string, d *fakeDriver, f *fakeFactory) *Runner {
	t.Helper()
	s, err := Parse("fake.yaml", []byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	reg := Drivers{"fake": d}
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return &Runner{Scenario: s, Source: []byte(fakeScenario), Drivers: reg, Networks: f, OutDir: dir, Now: clk.Now}
}

func readRuns(t *testing.T, dir string) []*experiment.Record {
	t.Helper()
	recs, err := experiment.ReadRecords(filepath.Join(dir, RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestRunnerRecordsEveryRunAndSetsUpOnce(t *testing.T) {
	dir := t.TempDir()
	d, f := &fakeDriver{}, &fakeFactory{}
	r := newFakeRunner(t, dir, d, f)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := readRuns(t, dir)
	if got, want := len(recs), 2*2*2*3; got != want {
		t.Fatalf("%d records, want %d", got, want)
	}
	if !reflect.DeepEqual(f.built, []string{"fast", "slow"}) {
		t.Errorf("networks built %v, want each condition once", f.built)
	}
	if want := []string{"fast/a", "fast/b", "slow/a", "slow/b"}; !reflect.DeepEqual(d.started, want) {
		t.Errorf("sessions started %v, want %v", d.started, want)
	}
	if f.open != 0 || d.open != 0 {
		t.Errorf("left open: %d networks, %d sessions", f.open, d.open)
	}
	ids := map[string]bool{}
	for _, rec := range recs {
		if ids[rec.ID] {
			t.Errorf("duplicate run ID %s", rec.ID)
		}
		ids[rec.ID] = true
		if rec.Error != "" || rec.Metrics["time"] != float64(rec.Seed%1000)/1000 {
			t.Errorf("run %s: error %q metrics %v", rec.ID, rec.Error, rec.Metrics)
		}
		if rec.Sock.CC != "cubic" || rec.Info["server"] != "fake/1.0" || rec.Info["reused"] != "true" {
			t.Errorf("run %s: sock %+v info %v: driver facts not recorded", rec.ID, rec.Sock, rec.Info)
		}
		if rec.EmulatorCPU != 0.01 {
			t.Errorf("run %s: emulator CPU %v, want the 10 ms between two readings", rec.ID, rec.EmulatorCPU)
		}
		if rec.Duration != 1 || rec.Network["emulator"] != "fake" || rec.NetSeed == 0 {
			t.Errorf("run %s: duration %v network %v seed %d", rec.ID, rec.Duration, rec.Network, rec.NetSeed)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ScenarioFile)); err != nil {
		t.Errorf("scenario not kept in the output: %v", err)
	}
}

func TestRunIDsStable(t *testing.T) {
	s, err := Parse("fake.yaml", []byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	a, b := Plan(s), Plan(s)
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Seed != b[i].Seed {
			t.Fatalf("plan not deterministic at %d", i)
		}
	}
	// A change of description or name keeps IDs; a change of link makes new ones.
	s2 := *s
	s2.Name, s2.Description = "renamed", "other words"
	if Plan(&s2)[0].ID != a[0].ID {
		t.Error("renaming the scenario changed run IDs")
	}
	s3 := *s
	s3.Conditions = append([]experiment.Condition(nil), s.Conditions...)
	s3.Conditions[0].Paths = []experiment.PathSpec{{Name: "p", Down: experiment.LinkSpec{Delay: "6ms", Rate: "100Mbit"}, Up: experiment.LinkSpec{Delay: "5ms"}}}
	if Plan(&s3)[0].ID == a[0].ID {
		t.Error("changing the link kept the run ID: resume would reuse a stale measurement")
	}
}

func TestRunnerResumeRetriesOnlyFailures(t *testing.T) {
	dir := t.TempDir()
	d, f := &fakeDriver{fail: func(r *experiment.Run) bool { return r.Object.Name == "big" && r.Rep == 1 }}, &fakeFactory{}
	if err := newFakeRunner(t, dir, d, f).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := readRuns(t, dir)
	var failed []string
	for _, rec := range first {
		if !rec.OK() {
			failed = append(failed, rec.ID)
			if !strings.Contains(rec.Error, "server reset the stream of big") {
				t.Errorf("error not recorded as said: %q", rec.Error)
			}
		}
	}
	if len(failed) != 4 {
		t.Fatalf("%d failed runs, want 4 (2 conditions x 2 protocols)", len(failed))
	}
	sum := Summarize(newFakeRunner(t, dir, d, f).Scenario, first)
	errCells := 0
	for _, c := range sum.Cells {
		if c.Labels.Object == "big" {
			if c.Errors != 1 || c.N != 2 {
				t.Errorf("cell %+v: n=%d errors=%d, want 2 and 1", c.Labels, c.N, c.Errors)
			}
			errCells++
		}
	}
	if errCells == 0 {
		t.Fatal("no cells for the big object")
	}

	d2 := &fakeDriver{}
	if err := newFakeRunner(t, dir, d2, f).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sort.Strings(failed)
	sort.Strings(d2.ran)
	if !reflect.DeepEqual(d2.ran, failed) {
		t.Errorf("resume ran %v, want only the failed %v", d2.ran, failed)
	}
	final := Latest(readRuns(t, dir))
	if len(final) != 24 {
		t.Errorf("%d distinct runs after resume, want 24", len(final))
	}
	for _, rec := range final {
		if !rec.OK() {
			t.Errorf("run %s still failed after resume", rec.ID)
		}
	}
}

func TestRunnerInterruptTearsDownAndRecordsNothingHalfDone(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, f := &fakeDriver{cancelAt: 5, cancel: cancel}, &fakeFactory{}
	err := newFakeRunner(t, dir, d, f).Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("experiment.Run = %v, want context.Canceled", err)
	}
	if n := len(readRuns(t, dir)); n != 4 {
		t.Errorf("%d records, want the 4 runs finished before the interrupt", n)
	}
	if f.open != 0 || d.open != 0 {
		t.Errorf("left open after interrupt: %d networks, %d sessions", f.open, d.open)
	}
}

func TestRunnerNetworkFailureIsRecorded(t *testing.T) {
	dir := t.TempDir()
	d, f := &fakeDriver{}, &fakeFactory{failOn: "slow"}
	if err := newFakeRunner(t, dir, d, f).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, rec := range readRuns(t, dir) {
		if rec.Condition.Name == "slow" {
			if !strings.Contains(rec.Error, "building network for condition slow: no TUN device") {
				t.Errorf("run %s error %q", rec.ID, rec.Error)
			}
			bad++
		}
	}
	if bad != 12 {
		t.Errorf("%d failed records for the broken condition, want 12", bad)
	}
}

// TestShardsMergeToUnsplitSweep: a sweep split in two shards and merged equals
// the unsplit sweep's set of runs.
func TestShardsMergeToUnsplitSweep(t *testing.T) {
	root := t.TempDir()
	whole := filepath.Join(root, "whole")
	if err := newFakeRunner(t, whole, &fakeDriver{}, &fakeFactory{}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var shardDirs []string
	sizes := []int{}
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(root, "shard", string(rune('0'+i)))
		r := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{})
		r.Shard = Shard{I: i, N: 2}
		if err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		shardDirs = append(shardDirs, dir)
		sizes = append(sizes, len(readRuns(t, dir)))
	}
	if sizes[0] == 0 || sizes[1] == 0 || sizes[0]+sizes[1] != 24 {
		t.Fatalf("shard sizes %v: want a partition of 24 runs into two non-empty parts", sizes)
	}
	merged := filepath.Join(root, "merged")
	sc, recs, err := Merge(merged, shardDirs)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "fake" || len(recs) != 24 {
		t.Fatalf("merge: scenario %q, %d records", sc.Name, len(recs))
	}
	type key struct {
		ID     string
		Labels Labels
		Rep    int
		Seed   int64
		Time   float64
	}
	set := func(recs []*experiment.Record) map[key]bool {
		m := map[key]bool{}
		for _, r := range recs {
			m[key{r.ID, labels(&r.Run, "time"), r.Rep, r.Seed, r.Metrics["time"]}] = true
		}
		return m
	}
	want := set(readRuns(t, whole))
	if got := set(readRuns(t, merged)); !reflect.DeepEqual(got, want) {
		t.Errorf("merged shards differ from the unsplit sweep:\n got %v\nwant %v", got, want)
	}
	s1, s2 := Summarize(sc, readRuns(t, merged)), Summarize(sc, readRuns(t, whole))
	if !reflect.DeepEqual(s1, s2) {
		t.Errorf("summaries differ:\n%+v\n%+v", s1, s2)
	}
}

func TestMergeRejectsOtherScenario(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "a")
	b := filepath.Join(root, "b")
	for dir, src := range map[string]string{a: fakeScenario, b: strings.Replace(fakeScenario, "name: fake", "name: other", 1)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ScenarioFile), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := writeSweep(dir, Sweep{Scenario: "x", Reps: 3, Shard: "1/2"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Merge(filepath.Join(root, "m"), []string{a, b}); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("merging two scenarios: err = %v", err)
	}
}

func TestRunnerRefusesOtherScenarioOutput(t *testing.T) {
	dir := t.TempDir()
	if err := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{})
	r.Scenario.Name = "another"
	if err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "use another --out") {
		t.Errorf("resume into another scenario's output: err = %v", err)
	}
}

// TestRunnerRefusesEditedScenario: resuming with the scenario edited where
// it defines runs would pool old and new runs in cells of the same names;
// more repetitions and new notes are fine.
func TestRunnerRefusesEditedScenario(t *testing.T) {
	dir := t.TempDir()
	if err := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	more := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{})
	more.Scenario.Reps++
	more.Scenario.Notes = append(more.Scenario.Notes, "a new note")
	if err := more.Run(context.Background()); err != nil {
		t.Fatalf("more repetitions and a note: %v", err)
	}
	edited := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{})
	edited.Scenario.Conditions[0].Paths[0].Down.Delay = "50ms"
	edited.Source = []byte(strings.Replace(string(edited.Source), "delay: 5ms, rate", "delay: 50ms, rate", 1))
	err := edited.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "another version of scenario") || !strings.Contains(err.Error(), "conditions changed") {
		t.Errorf("resume with an edited link: err = %v", err)
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"1/1", Shard{1, 1}, true}, {"2/4", Shard{2, 4}, true},
		{"0/4", Shard{}, false}, {"5/4", Shard{}, false}, {"1", Shard{}, false}, {"a/b", Shard{}, false}, {"1/0", Shard{}, false},
	} {
		got, err := ParseShard(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v", tc.in, got, err)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("ParseShard(%q).String() = %q", tc.in, got.String())
		}
	}
}

func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"1/1", "2/4", "10/10", "0/1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err != nil {
			return
		}
		if sh.I < 1 || sh.I > sh.N {
			t.Fatalf("ParseShard(%q) = %v accepted out of range", s, sh)
		}
		back, err := ParseShard(sh.String())
		if err != nil || back != sh {
			t.Fatalf("round trip %q -> %v -> %v, %v", s, sh, back, err)
		}
	})
}

func TestLineProgressETA(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	p := &LineProgress{W: &buf, Now: clk.Now}
	p.Start(4, 2)
	rec := &experiment.Record{Run: experiment.Run{Condition: experiment.Condition{Name: "c"}, Protocol: experiment.Protocol{Name: "p"}, Object: experiment.Object{Name: "o"}}, Metrics: map[string]float64{"time": 0.25, "kbit_per_s": 5622, "switches_count": 3}}
	p.Step(rec) // 1 s elapsed for 1 run: 3 left, eta 3 s
	rec2 := *rec
	rec2.Error = "refused"
	p.Step(&rec2)
	got := buf.String()
	for _, want := range []string{"4 runs to do (2 already done)", "[1/4 eta 3s] c/p/o#0: kbit_per_s=5622.000 kbit/s switches_count=3 time=0.250s", "[2/4 eta 2s] c/p/o#0: error: refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress output lacks %q:\n%s", want, got)
		}
	}
}

func TestRunnerMaxRunsGoesOnWhereItStopped(t *testing.T) {
	dir := t.TempDir()
	f := &fakeFactory{}
	var ran []string
	for call := 0; call < 13; call++ {
		d := &fakeDriver{}
		r := newFakeRunner(t, dir, d, f)
		r.MaxRuns, r.Binary = 2, "abc123"
		if err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if want := min(2, 24-len(ran)); len(d.ran) != want {
			t.Fatalf("call %d ran %d runs, want %d", call, len(d.ran), want)
		}
		ran = append(ran, d.ran...)
	}
	var plan []string
	for _, run := range Plan(newFakeRunner(t, dir, &fakeDriver{}, f).Scenario) {
		plan = append(plan, run.ID)
	}
	if !reflect.DeepEqual(ran, plan) {
		t.Errorf("calls of 2 runs ran %v, want the plan's order %v", ran, plan)
	}
	for _, rec := range readRuns(t, dir) {
		if rec.Binary != "abc123" {
			t.Errorf("run %s recorded binary %q, want the runner's", rec.ID, rec.Binary)
		}
	}
	if f.open != 0 {
		t.Errorf("%d networks left open", f.open)
	}
}
