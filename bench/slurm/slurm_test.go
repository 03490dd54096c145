package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

const scenario = `
name: tiny
reps: 3
seed: 1
conditions:
  - {name: lo, topology: loopback}
protocols:
  - {name: a, driver: http, params: {proto: h1}}
  - {name: b, driver: http, params: {proto: h2}}
objects:
  - {name: x, size: 1KB}
  - {name: y, size: 2KB}
`

func testJob(t *testing.T) (*Job, *bench.Scenario) {
	t.Helper()
	sc, err := bench.Parse("tiny.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "it's here")
	return &Job{Root: root, Scenario: sc.Name, Shards: 3, Reps: sc.Reps, Throttle: 2, Chdir: "/work",
		Shared: "/data/shared", Options: []string{"--partition=fast", "--time=2:00:00"}}, sc
}

func TestScripts(t *testing.T) {
	j, _ := testJob(t)
	a := j.ArrayScript()
	for _, want := range []string{
		"#SBATCH --array=1-3%2\n", "#SBATCH --exclusive\n", "#SBATCH --chdir=/work\n",
		"#SBATCH --partition=fast\n#SBATCH --time=2:00:00\n",
		"#SBATCH --output=" + j.Root + "/slurm/logs/task-%a-%A.out\n",
		"export SHUNT_SHARED='/data/shared'\n",
		// The root has a quote in it: quoted for the shell.
		`exec '` + strings.ReplaceAll(j.Root, "'", `'\''`) + `/slurm/shunt' bench`,
		`--reps 3 --shard "$i/3" --out '` + strings.ReplaceAll(j.Root, "'", `'\''`) + `/shards'/"$i-of-3"`,
	} {
		if !strings.Contains(a, want) {
			t.Errorf("array script lacks %q:\n%s", want, a)
		}
	}
	m := j.MergeScript()
	for _, want := range []string{"bench merge", "#SBATCH --partition=fast\n", "/shards/1-of-3'", "/shards/3-of-3'\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("merge script lacks %q:\n%s", want, m)
		}
	}
	if strings.Contains(m, "--exclusive") || strings.Contains(m, "--array") {
		t.Errorf("merge script takes a whole node or is an array:\n%s", m)
	}
}

func TestCheckRefusesOptionsShuntSets(t *testing.T) {
	for _, o := range []string{"--array=1-9", "-a", "--dependency=afterany:3", "-d3", "--output=x", "-J", "partition=x", "--time=1\n#SBATCH --array=1"} {
		j, _ := testJob(t)
		j.Options = []string{o}
		if err := j.Check(); err == nil {
			t.Errorf("option %q accepted", o)
		}
	}
	j, _ := testJob(t)
	j.Options = []string{"--account=lab", "--partition=debug", "--nice=10"}
	if err := j.Check(); err != nil {
		t.Errorf("plain options refused: %v", err)
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{{[]int{1, 2, 3, 5}, "1-3,5"}, {[]int{4}, "4"}, {[]int{1, 3, 4, 5, 7, 8}, "1,3-5,7-8"}, {nil, ""}} {
		if got := Ranges(tc.in); got != tc.want {
			t.Errorf("Ranges(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestPreparePendingAndResubmission: a fresh job has every shard pending; a
// shard with all runs recorded as successes is not; a failure or a missing
// run makes it pending again; the same root refuses another split or an
// edited scenario.
func TestPreparePendingAndResubmission(t *testing.T) {
	j, sc := testJob(t)
	bin := filepath.Join(t.TempDir(), "shunt")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := j.Prepare(bin, sc, []byte(scenario)); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(j.path(binaryFile)); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("binary not copied as an executable: %v", err)
	}
	pending, err := j.Pending(sc)
	if err != nil || Ranges(pending) != "1-3" {
		t.Fatalf("fresh job: pending %v, %v", pending, err)
	}
	// Shard 2 complete, shard 3 with one failure, shard 1 with a run missing.
	for i := 1; i <= 3; i++ {
		dir := j.ShardDir(i)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, bench.SweepFile), []byte(`{"scenario":"tiny","reps":3,"shard":"`+bench.Shard{I: i, N: 3}.String()+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		var recs []*experiment.Record
		for k, run := range bench.Plan(sc) {
			if !(bench.Shard{I: i, N: 3}).Has(run) {
				continue
			}
			r := &experiment.Record{Run: *run}
			if i == 3 && k%2 == 0 {
				r.Error = "reset"
			}
			recs = append(recs, r)
		}
		if i == 1 {
			recs = recs[1:]
		}
		if err := experiment.WriteRecords(filepath.Join(dir, bench.RunsFile), recs); err != nil {
			t.Fatal(err)
		}
	}
	if pending, err = j.Pending(sc); err != nil || Ranges(pending) != "1,3" {
		t.Errorf("pending %v (%v), want shards 1 (a run missing) and 3 (a failure)", pending, err)
	}

	other := *j
	other.Shards = 4
	if err := other.Prepare(bin, sc, []byte(scenario)); err == nil || !strings.Contains(err.Error(), "in 3 shards") {
		t.Errorf("same root, 4 shards: err = %v", err)
	}
	edited := strings.Replace(scenario, "seed: 1", "seed: 2", 1)
	sc2, _ := bench.Parse("tiny.yaml", []byte(edited))
	if err := j.Prepare(bin, sc2, []byte(edited)); err == nil || !strings.Contains(err.Error(), "seed changed") {
		t.Errorf("same root, edited seed: err = %v", err)
	}
	if err := j.Prepare(bin, sc, []byte(scenario)); err != nil {
		t.Errorf("same job again: %v", err)
	}
}

func TestSubmitWithoutSlurm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	j, _ := testJob(t)
	if _, err := j.Submit(context.Background(), []int{1}, false); err == nil || !strings.Contains(err.Error(), "sbatch not found") {
		t.Errorf("no sbatch: err = %v", err)
	}
}
