package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

// slurmLock serialises everything that uses this machine's one-node Slurm
// cluster: two of these tests at once would take each other's cluster down,
// and a sweep submitted by hand (docs/results.md's replay-fig3 runs hold it
// too) would queue the test's exclusive tasks behind its own.
const slurmLock = "/tmp/shunt-slurm.lock"

// smallSweep is the CI test's scenario: 2 protocols x 2 objects x 4
// repetitions on loopback, 16 runs.
const smallSweep = "testdata/slurm-small.yaml"

// TestSlurmSweep runs `shunt bench --slurm` on a real one-node Slurm
// cluster (scripts/slurm-cluster, brought up and down again if it was not
// up): the small scenario as an array of 4 tasks and a merge job, waited
// for; the merged summary must have the cells and counts of the same
// scenario run without Slurm, every pair of protocols in one task, every
// run naming the node; a resubmission of the complete sweep only merges;
// merge refuses the sweep with shard 3/4 gone, naming it, and a
// resubmission runs task 3 alone; a sweep whose tasks fail makes --wait
// fail, naming the tasks, and merges nothing.
func TestSlurmSweep(t *testing.T) {
	needShunt(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root (the Slurm daemons, and shunt bench's namespaces)")
	}
	for _, tool := range []string{"munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo", "scancel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: %s not found: install munge and slurm-wlm (bash scripts/setup does)", tool)
		}
	}
	if conf, err := os.ReadFile("/etc/slurm/slurm.conf"); err == nil && !strings.Contains(string(conf), "# written by shunt scripts/slurm-cluster") {
		t.Skip("skipping: /etc/slurm/slurm.conf is this machine's own Slurm configuration, not scripts/slurm-cluster's")
	}
	lockFile(t, slurmLock, 5*time.Minute)
	node := slurmCluster(t)
	ctx := timeout(t, 4*time.Minute)
	cancelJobs(t, "slurm-small", "slurm-small-fail")

	root := t.TempDir()
	submit := func(t *testing.T) string {
		t.Helper()
		out, err := shunt(ctx, "bench", smallSweep, "--slurm", "--array", "4", "--wait", "--out", root)
		if err != nil {
			t.Fatalf("shunt bench --slurm: %v\n%s%s", err, out, slurmLogs(root))
		}
		return out
	}
	start := time.Now()
	out := submit(t)
	t.Logf("array of 4 and merge: %s\n%s", time.Since(start).Round(time.Second), out)

	ref := t.TempDir()
	if out, err := shunt(ctx, "bench", smallSweep, "--out", ref); err != nil {
		t.Fatalf("shunt bench without Slurm: %v\n%s", err, out)
	}
	sc, _, err := bench.Load(smallSweep)
	if err != nil {
		t.Fatal(err)
	}
	got, want := cellCounts(t, root), cellCounts(t, ref)
	if len(want) != len(sc.Conditions)*len(sc.Protocols)*len(sc.Objects)*max(1, len(sc.Metrics)) {
		t.Errorf("unsharded run: %d cells: %v", len(want), want)
	}
	for l, c := range want {
		if c != [2]int{sc.Reps, 0} {
			t.Errorf("unsharded run: cell %v: %d runs, %d errors; want %d, 0", l, c[0], c[1], sc.Reps)
		}
		if got[l] != c {
			t.Errorf("merged cell %v: %d runs, %d errors; unsharded: %d, %d", l, got[l][0], got[l][1], c[0], c[1])
		}
	}
	for l := range got {
		if _, ok := want[l]; !ok {
			t.Errorf("merged summary has cell %v the unsharded run has not", l)
		}
	}
	checkShardedRecords(t, root, sc, node)
	table, err := os.ReadFile(filepath.Join(root, "table.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nnodes: h1 time", "\n" + node + " ", "\ntasks:", "\n4/4 ", "projected wall time on N nodes"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("merged table lacks %q:\n%s", want, table)
		}
	}

	// The complete sweep again: no array, only a merge.
	if out := submit(t); !strings.Contains(out, "all 4 shards complete") || strings.Contains(out, "array job") {
		t.Errorf("resubmitting the complete sweep:\n%s", out)
	}
	if logs, _ := filepath.Glob(filepath.Join(root, "slurm", "logs", "merge-*.out")); len(logs) != 2 {
		t.Errorf("%d merge logs after two submissions, want 2: %v", len(logs), logs)
	}

	// Shard 3 lost: merge refuses, naming it; a resubmission runs it alone.
	if err := os.RemoveAll(filepath.Join(root, "shards", "3-of-4")); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, i := range []int{1, 2, 4} {
		dirs = append(dirs, filepath.Join(root, "shards", fmt.Sprintf("%d-of-4", i)))
	}
	partial := filepath.Join(t.TempDir(), "merged")
	out, err = shunt(ctx, append([]string{"bench", "merge", partial}, dirs...)...)
	if err == nil || !strings.Contains(out, "missing shards 3/4") {
		t.Errorf("merge without shard 3/4: err %v, output:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(partial, "summary.json")); err == nil {
		t.Errorf("merge without shard 3/4 wrote a summary")
	}
	if out := submit(t); !strings.Contains(out, "runs tasks 3 of 4") {
		t.Errorf("resubmitting with shard 3 gone:\n%s", out)
	}
	if got := cellCounts(t, root); len(got) != len(want) {
		t.Errorf("after resuming shard 3: %d cells, want %d", len(got), len(want))
	}
	checkShardedRecords(t, root, sc, node)

	// Tasks whose runs all fail (a 1 ns run timeout): afterok cancels the
	// merge, and --wait says so instead of succeeding.
	src, err := os.ReadFile(smallSweep)
	if err != nil {
		t.Fatal(err)
	}
	failing := strings.Replace(strings.Replace(string(src), "\ntimeout: 30s\n", "\ntimeout: 1ns\n", 1), "\nname: slurm-small\n", "\nname: slurm-small-fail\n", 1)
	if failing == string(src) || !strings.Contains(failing, "1ns") || !strings.Contains(failing, "slurm-small-fail") {
		t.Fatalf("%s: no timeout: 30s or name line to replace", smallSweep)
	}
	failFile := filepath.Join(t.TempDir(), "slurm-small-fail.yaml")
	if err := os.WriteFile(failFile, []byte(failing), 0o644); err != nil {
		t.Fatal(err)
	}
	failRoot := t.TempDir()
	out, err = shunt(ctx, "bench", failFile, "--slurm", "--array", "2", "--wait", "--out", failRoot)
	if err == nil || !strings.Contains(out, "CANCELLED") || !strings.Contains(out, "task 1 FAILED") || !strings.Contains(out, "task 2 FAILED") {
		t.Errorf("failing sweep: err %v, output:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(failRoot, bench.RunsFile)); err == nil {
		t.Errorf("failing sweep: the merge ran")
	}
}

// shunt runs the shunt binary and returns its combined output.
func shunt(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, shuntBin, args...).CombinedOutput()
	return string(out), err
}

// lockFile holds an exclusive flock on path for the test, waiting at most
// wait for it.
func lockFile(t *testing.T, path string, wait time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
	deadline := time.Now().Add(wait)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s still held after %s: another user of this machine's Slurm cluster (a test, or a sweep run under flock %s) is running", path, wait, path)
		}
		time.Sleep(time.Second)
	}
}

// slurmCluster brings up scripts/slurm-cluster unless it runs already (then
// it is left up), and returns the node's name.
func slurmCluster(t *testing.T) string {
	t.Helper()
	script := filepath.Join("..", "scripts", "slurm-cluster")
	status, _ := exec.Command(script, "status").CombinedOutput()
	if !strings.Contains(string(status), "slurmctld: running") || !strings.Contains(string(status), "slurmd: running") {
		if out, err := exec.Command(script, "up").CombinedOutput(); err != nil {
			t.Fatalf("scripts/slurm-cluster up: %v\n%s%s", err, out, daemonLogs())
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Log(daemonLogs())
			}
			if out, err := exec.Command(script, "down").CombinedOutput(); err != nil {
				t.Errorf("scripts/slurm-cluster down: %v\n%s", err, out)
			}
		})
	}
	out, err := exec.Command("sinfo", "-h", "-N", "-o", "%N").Output()
	node := strings.TrimSpace(string(out))
	if err != nil || node == "" || strings.Contains(node, "\n") {
		t.Fatalf("sinfo: %v: nodes %q, want one", err, node)
	}
	return node
}

// cancelJobs cancels, at the end of the test, the jobs of these scenarios
// still queued or running (a test that failed or timed out).
func cancelJobs(t *testing.T, scenarios ...string) {
	t.Cleanup(func() {
		for _, s := range scenarios {
			for _, name := range []string{"shunt-" + s, "shunt-" + s + "-merge"} {
				exec.Command("scancel", "--quiet", "--name="+name).Run()
			}
		}
	})
}

// slurmLogs is every job log of a results directory, for a failure.
func slurmLogs(root string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(root, "slurm", "logs", "*.out"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "\n== %s\n%s", f, data)
	}
	return b.String()
}

// daemonLogs is the tail of the Slurm daemons' logs.
func daemonLogs() string {
	var b strings.Builder
	files, _ := filepath.Glob("/var/lib/shunt-slurm/log/*.log")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "\n== %s (tail)\n%s", f, data)
	}
	return b.String()
}

// cellCounts reads DIR/summary.json: successful and failed runs per cell.
func cellCounts(t *testing.T, dir string) map[bench.Labels][2]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s bench.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s/summary.json: %v", dir, err)
	}
	out := map[bench.Labels][2]int{}
	for _, c := range s.Cells {
		out[c.Labels] = [2]int{c.N, c.Errors}
	}
	return out
}

// checkShardedRecords: the merged runs are the sweep's plan, each run
// names the node and its kernel, every (condition, object, repetition)
// pair of protocols ran in one shard, and the 4 shards hold 4 runs each.
func checkShardedRecords(t *testing.T, root string, sc *bench.Scenario, node string) {
	t.Helper()
	recs, err := experiment.ReadRecords(filepath.Join(root, bench.RunsFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(bench.Plan(sc)); len(recs) != want {
		t.Errorf("merged %d runs, the plan has %d", len(recs), want)
	}
	pairShard := map[string]string{}
	perShard := map[string]int{}
	for _, r := range recs {
		if r.Node == nil || r.Node.Name != node || r.Node.Kernel == "" || r.Node.CPUs < 1 {
			t.Errorf("run %s: node %+v, want %s with its kernel and CPUs", r.ID, r.Node, node)
		}
		pair := fmt.Sprintf("%s/%s#%d", r.Condition.Name, r.Object.Name, r.Rep)
		if s, ok := pairShard[pair]; ok && s != r.Shard {
			t.Errorf("pair %s split over shards %s and %s", pair, s, r.Shard)
		}
		pairShard[pair] = r.Shard
		perShard[r.Shard]++
	}
	for i := 1; i <= 4; i++ {
		if s := fmt.Sprintf("%d/4", i); perShard[s] != len(recs)/4 {
			t.Errorf("shard %s holds %d runs, want %d (all shards: %v)", s, perShard[s], len(recs)/4, perShard)
		}
	}
}
