package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
)

type pairKey struct {
	cond, obj string
	rep       int
}

func pairOf(r *experiment.Run) pairKey { return pairKey{r.Condition.Name, r.Object.Name, r.Rep} }

// TestShardPartition: every run is in exactly one shard, all protocols of a
// pair in the same one, and each (condition, object) cell's repetitions are
// spread evenly over the shards.
func TestShardPartition(t *testing.T) {
	s, err := Parse("fake.yaml", []byte(fakeScenario))
	if err != nil {
		t.Fatal(err)
	}
	s.Reps = 7
	total := len(Plan(s))
	for _, n := range []int{1, 2, 3, 5, 8} {
		count := map[string]int{}
		pairShard := map[pairKey]int{}
		perCell := map[string]map[int]int{} // cond/obj -> shard -> reps
		for i := 1; i <= n; i++ {
			for _, r := range Plan(s) {
				if !(Shard{I: i, N: n}).Has(r) {
					continue
				}
				count[r.ID]++
				if j, ok := pairShard[pairOf(r)]; ok && j != i {
					t.Errorf("n=%d: pair %+v split over shards %d and %d", n, pairOf(r), j, i)
				}
				pairShard[pairOf(r)] = i
				cell := r.Condition.Name + "/" + r.Object.Name
				if perCell[cell] == nil {
					perCell[cell] = map[int]int{}
				}
				if r.Protocol.Name == "a" {
					perCell[cell][i]++
				}
			}
		}
		for id, c := range count {
			if c != 1 {
				t.Errorf("n=%d: run %s in %d shards", n, id, c)
			}
		}
		if len(count) != total {
			t.Errorf("n=%d: %d runs covered, want %d", n, len(count), total)
		}
		for cell, by := range perCell {
			lo, hi := s.Reps, 0
			for i := 1; i <= n; i++ {
				lo, hi = min(lo, by[i]), max(hi, by[i])
			}
			if hi-lo > 1 {
				t.Errorf("n=%d: cell %s has %v repetitions per shard, want an even spread", n, cell, by)
			}
		}
	}
}

// TestShardStableUnderMoreReps: extending a sweep keeps every run in its shard.
func TestShardStableUnderMoreReps(t *testing.T) {
	s, _ := Parse("fake.yaml", []byte(fakeScenario))
	before := map[string]int{}
	for i := 1; i <= 4; i++ {
		for _, r := range Plan(s) {
			if (Shard{I: i, N: 4}).Has(r) {
				before[r.ID] = i
			}
		}
	}
	s.Reps += 5
	for i := 1; i <= 4; i++ {
		for _, r := range Plan(s) {
			if j, ok := before[r.ID]; ok && (Shard{I: i, N: 4}).Has(r) && j != i {
				t.Errorf("run %s moved from shard %d to %d", r.ID, j, i)
			}
		}
	}
}

// TestRunnerRunsPairsBackToBack: the protocols of a pair run one after the
// other, while every protocol's session is started once per condition.
func TestRunnerRunsPairsBackToBack(t *testing.T) {
	dir := t.TempDir()
	d := &fakeDriver{}
	r := newFakeRunner(t, dir, d, &fakeFactory{})
	r.Shard = Shard{I: 2, N: 3}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	byID := map[string]*experiment.Record{}
	for _, rec := range readRuns(t, dir) {
		byID[rec.ID] = rec
		if rec.Shard != "2/3" || rec.Node == nil || rec.Node.Name == "" || rec.Node.Kernel == "" {
			t.Errorf("run %s: shard %q node %+v: not recorded", rec.ID, rec.Shard, rec.Node)
		}
	}
	if len(d.ran) == 0 || len(d.ran)%2 != 0 {
		t.Fatalf("%d runs: want whole pairs of 2 protocols", len(d.ran))
	}
	for i := 0; i < len(d.ran); i += 2 {
		a, b := byID[d.ran[i]], byID[d.ran[i+1]]
		if pairOf(&a.Run) != pairOf(&b.Run) || a.Protocol.Name != "a" || b.Protocol.Name != "b" {
			t.Errorf("runs %d and %d: %+v %s then %+v %s, want one pair's a then b", i, i+1, pairOf(&a.Run), a.Protocol.Name, pairOf(&b.Run), b.Protocol.Name)
		}
	}
	if want := []string{"fast/a", "fast/b", "slow/a", "slow/b"}; !reflect.DeepEqual(d.started, want) {
		t.Errorf("sessions started %v, want %v", d.started, want)
	}
	if d.open != 0 {
		t.Errorf("%d sessions left open", d.open)
	}
	// The directory is shard 2/3's: running another shard into it is refused.
	other := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{})
	other.Shard = Shard{I: 1, N: 3}
	if err := other.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "holds shard 2/3") {
		t.Errorf("shard 1/3 into shard 2/3's directory: err = %v", err)
	}
}

// runShards runs the fake scenario as n shards under root and returns their directories.
// Shard stop (1-based; 0: none) is interrupted during its third run.
func runShards(t *testing.T, root string, n, stop int) []string {
	t.Helper()
	var dirs []string
	for i := 1; i <= n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("%d-of-%d", i, n))
		ctx, cancel := context.WithCancel(context.Background())
		d := &fakeDriver{}
		if i == stop {
			d.cancelAt, d.cancel = 3, cancel
		}
		r := newFakeRunner(t, dir, d, &fakeFactory{})
		r.Shard = Shard{I: i, N: n}
		err := r.Run(ctx)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// TestMergeRefusesIncompleteSweeps names the missing shard, the directory
// whose task never started and the shard whose task stopped early.
func TestMergeRefusesIncompleteSweeps(t *testing.T) {
	root := t.TempDir()
	dirs := runShards(t, root, 4, 3) // shard 3 timed out after 2 runs
	_, _, err := Merge(filepath.Join(root, "m"), dirs)
	var inc *IncompleteError
	if !errors.As(err, &inc) || len(inc.Short) != 1 || !strings.Contains(inc.Short[0], "3/4 ("+dirs[2]+"): 4 of 6 runs not run") {
		t.Fatalf("shard 3 stopped after 2 runs: err = %v", err)
	}
	// Shard 2 never ran, and its directory is not even there.
	if err := os.RemoveAll(dirs[1]); err != nil {
		t.Fatal(err)
	}
	_, _, err = Merge(filepath.Join(root, "m"), []string{dirs[0], dirs[2], dirs[3]})
	if !errors.As(err, &inc) || !reflect.DeepEqual(inc.Absent, []string{"2/4 (reps 3)"}) {
		t.Errorf("shard 2 absent: err = %v", err)
	}
	_, _, err = Merge(filepath.Join(root, "m"), dirs)
	if !errors.As(err, &inc) || !reflect.DeepEqual(inc.NoShard, []string{dirs[1]}) || !strings.Contains(err.Error(), "missing shards 2/4") {
		t.Errorf("shard 2's directory given but empty: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "m", RunsFile)); err == nil {
		t.Error("a refused merge wrote runs")
	}
	// Resumed, the sweep merges.
	for _, i := range []int{2, 3} {
		r := newFakeRunner(t, dirs[i-1], &fakeDriver{}, &fakeFactory{})
		r.Shard = Shard{I: i, N: 4}
		if err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, recs, err := Merge(filepath.Join(root, "m"), dirs); err != nil || len(recs) != 24 {
		t.Errorf("after resume: %d records, %v", len(recs), err)
	}
}

func TestMergeRefusesEditedScenario(t *testing.T) {
	root := t.TempDir()
	dirs := runShards(t, root, 2, 0)
	file := filepath.Join(dirs[1], ScenarioFile)
	if err := os.WriteFile(file, []byte(strings.Replace(fakeScenario, "seed: 7", "seed: 8", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Merge(filepath.Join(root, "m"), dirs); err == nil || !strings.Contains(err.Error(), "seed changed") {
		t.Errorf("two versions of the scenario: err = %v", err)
	}
}

func rec(id, shard, node, proto, cond, obj string, start time.Time, dur, v float64, load float64) *experiment.Record {
	return &experiment.Record{
		Run:   experiment.Run{ID: id, Protocol: experiment.Protocol{Name: proto}, Condition: experiment.Condition{Name: cond}, Object: experiment.Object{Name: obj}},
		Start: start, Duration: dur, Shard: shard, Metrics: map[string]float64{"time": v},
		Node: &experiment.Node{Name: node, Kernel: "6.1", Load1: load},
	}
}

func TestSpreadShowsTheSlowNode(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []*experiment.Record{
		// cell c/x: median 1.0 over both nodes; cell c/y: median 14.5
		rec("1", "1/2", "n1", "a", "c", "x", t0, 1, 0.9, 0.5),
		rec("2", "1/2", "n1", "a", "c", "x", t0, 1, 1.0, 0.7),
		rec("3", "2/2", "n2", "a", "c", "x", t0, 1, 1.0, 3.0),
		rec("4", "2/2", "n2", "a", "c", "x", t0, 1, 2.0, 2.0),
		rec("5", "1/2", "n1", "a", "c", "y", t0, 1, 9, 0.6),
		rec("6", "2/2", "n2", "a", "c", "y", t0, 1, 20, 2.5),
		rec("7", "2/2", "n2", "b", "c", "y", t0, 1, 99, 2.5), // another row
	}
	got := Spread(recs, "a", "time")
	if len(got) != 2 || got[0].Node != "n1" || got[1].Node != "n2" {
		t.Fatalf("nodes %+v", got)
	}
	if got[0].Runs != 3 || got[0].P50 != 0.9 || got[0].LoadMin != 0.5 || got[0].LoadMax != 0.7 {
		t.Errorf("n1: %+v, want 3 runs, median ratio 0.9, load 0.5-0.7", got[0])
	}
	if got[1].Runs != 3 || got[1].P50 != 20/14.5 || got[1].LoadMax != 3 || !reflect.DeepEqual(got[1].Kernels, []string{"6.1"}) {
		t.Errorf("n2: %+v, want 3 runs, median ratio 1.38 (the slow node)", got[1])
	}
}

func TestTasksAndMakespan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []*experiment.Record{
		rec("1", "2/2", "n1", "a", "c", "x", t0.Add(100*time.Second), 10, 1, 0),
		rec("2", "1/2", "n1", "a", "c", "x", t0, 5, 1, 0),
		rec("3", "1/2", "n1", "a", "c", "x", t0.Add(50*time.Second), 5, 1, 0),
		rec("4", "2/2", "n2", "a", "c", "x", t0.Add(130*time.Second), 10, 1, 0), // resumed elsewhere
	}
	got := Tasks(recs)
	want := []Task{
		{Shard: "1/2", Nodes: []string{"n1"}, Runs: 2, Wall: 55 * time.Second, Busy: 10 * time.Second},
		{Shard: "2/2", Nodes: []string{"n1", "n2"}, Runs: 2, Wall: 40 * time.Second, Busy: 20 * time.Second},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tasks:\n got %+v\nwant %+v", got, want)
	}
	m := time.Minute
	for _, tc := range []struct {
		tasks []time.Duration
		nodes int
		want  time.Duration
	}{
		{[]time.Duration{10 * m, 20 * m, 30 * m}, 1, 60 * m},
		{[]time.Duration{10 * m, 20 * m, 30 * m}, 2, 40 * m}, // 10 then 30 on one node
		{[]time.Duration{10 * m, 20 * m, 30 * m}, 3, 30 * m}, // the longest task
		{[]time.Duration{10 * m, 20 * m, 30 * m}, 8, 30 * m},
		{nil, 4, 0},
	} {
		if got := Makespan(tc.tasks, tc.nodes); got != tc.want {
			t.Errorf("Makespan(%v, %d) = %v, want %v", tc.tasks, tc.nodes, got, tc.want)
		}
	}
}

func TestRunnerRefusesADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "being written by another shunt bench") {
		t.Errorf("second runner on a locked directory: err = %v", err)
	}
	unlock()
	if err := newFakeRunner(t, dir, &fakeDriver{}, &fakeFactory{}).Run(context.Background()); err != nil {
		t.Errorf("after unlock: %v", err)
	}
}
