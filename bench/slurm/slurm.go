// Package slurm runs a `shunt bench` sweep on a Slurm cluster: a job
// array whose task i runs shard i/n of the sweep into a directory of its
// own under a results directory on shared storage, and a merge job that
// starts once every task has succeeded (--dependency=afterok) and runs
// `shunt bench merge` with its report. Submitting the same results
// directory again resubmits only the shards that are not complete (an
// output directory is resumed, failures retried) and a new merge job.
//
// Layout of the results directory ROOT:
//
//	ROOT/slurm/shunt            the binary that submitted, run by every job
//	ROOT/slurm/scenario.yaml    the scenario the tasks run
//	ROOT/slurm/job.json         shards and repetitions, to resubmit alike
//	ROOT/slurm/array.sbatch     the job array; merge.sbatch the merge job
//	ROOT/slurm/logs/            task-I-JOBID.out, merge-JOBID.out
//	ROOT/shards/I-of-N/         shard I's output directory
//	ROOT/                       the merged runs.jsonl, summary and report
package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

// Job is a sweep split into a Slurm job array.
type Job struct {
	Root     string `json:"-"`        // absolute results directory, on storage every node sees
	Scenario string `json:"scenario"` // its name, for job names and messages
	Shards   int    `json:"shards"`   // array tasks, one shard each
	Reps     int    `json:"reps"`
	// Throttle runs at most this many tasks at once (--nodes); 0: as many as
	// Slurm gives nodes.
	Throttle int `json:"throttle,omitempty"`
	// SharedNode lets tasks share a node (no --exclusive): each takes the
	// CPUs the options ask for (Slurm's default: one).
	SharedNode bool `json:"shared_node,omitempty"`
	// Options are sbatch options for both jobs (--partition=..., --time=...).
	Options []string `json:"options,omitempty"`
	Chdir   string   `json:"chdir"`            // the tasks' working directory
	Shared  string   `json:"shared,omitempty"` // SHUNT_SHARED for the tasks
	LinkLog bool     `json:"link_log,omitempty"`
}

// Files of ROOT/slurm.
const (
	dirName      = "slurm"
	binaryFile   = "shunt"
	scenarioFile = "scenario.yaml"
	jobFile      = "job.json"
	arrayFile    = "array.sbatch"
	mergeFile    = "merge.sbatch"
	logsDir      = "logs"
)

func (j *Job) path(elem ...string) string {
	return filepath.Join(append([]string{j.Root, dirName}, elem...)...)
}

// ShardDir is shard i's output directory.
func (j *Job) ShardDir(i int) string {
	return filepath.Join(j.Root, "shards", fmt.Sprintf("%d-of-%d", i, j.Shards))
}

// Check refuses a job Slurm or the tasks would refuse later.
func (j *Job) Check() error {
	if !filepath.IsAbs(j.Root) || !filepath.IsAbs(j.Chdir) {
		return fmt.Errorf("slurm: results directory %q and working directory %q must be absolute", j.Root, j.Chdir)
	}
	if j.Shards < 1 {
		return fmt.Errorf("--array %d: want at least 1 task", j.Shards)
	}
	if j.Throttle < 0 {
		return fmt.Errorf("--nodes %d: want at least 1 node", j.Throttle)
	}
	for _, o := range j.Options {
		if !strings.HasPrefix(o, "-") || strings.ContainsAny(o, "\n\r") {
			return fmt.Errorf("sbatch option %q: want one option a word, starting with -, its value after = (--partition=NAME)", o)
		}
		for _, own := range []string{"--array", "-a", "--dependency", "-d", "--output", "-o", "--job-name", "-J", "--wrap"} {
			if o == own || strings.HasPrefix(o, own+"=") || (len(own) == 2 && strings.HasPrefix(o, own) && !strings.HasPrefix(o, "--")) {
				return fmt.Errorf("sbatch option %q: shunt sets %s itself", o, own)
			}
		}
	}
	return nil
}

// quote is s as one word of a POSIX shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// header is the #SBATCH block both scripts share, after their own lines.
func (j *Job) header(own ...string) string {
	var b strings.Builder
	for _, o := range append(own, j.Options...) {
		fmt.Fprintf(&b, "#SBATCH %s\n", o)
	}
	return b.String()
}

// ArrayScript is the job array: task I runs shard I/N.
func (j *Job) ArrayScript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# shunt bench %s as a Slurm job array: task I runs shard I/%d of the sweep\n", j.Scenario, j.Shards)
	fmt.Fprintf(&b, "# into %s, resuming what is there.\n", filepath.Join(j.Root, "shards", "I-of-"+strconv.Itoa(j.Shards)))
	b.WriteString("# Written by shunt bench --slurm; submit again with the same command.\n")
	array := fmt.Sprintf("--array=1-%d", j.Shards)
	if j.Throttle > 0 {
		array += "%" + strconv.Itoa(j.Throttle)
	}
	own := []string{"--job-name=shunt-" + j.Scenario, array, "--nodes=1"}
	if !j.SharedNode {
		// A task's timings are only worth something with the whole node's
		// CPUs (the link emulator and both endpoints share them).
		own = append(own, "--exclusive")
	}
	b.WriteString(j.header(append(own, "--chdir="+j.Chdir, "--output="+j.path(logsDir, "task-%a-%A.out"))...))
	b.WriteString("set -eu\n")
	if j.Shared != "" {
		fmt.Fprintf(&b, "export SHUNT_SHARED=%s\n", quote(j.Shared))
	}
	b.WriteString("i=\"$SLURM_ARRAY_TASK_ID\"\n")
	fmt.Fprintf(&b, "exec %s bench %s --reps %d --shard \"$i/%d\" --out %s/\"$i-of-%d\"",
		quote(j.path(binaryFile)), quote(j.path(scenarioFile)), j.Reps, j.Shards, quote(filepath.Join(j.Root, "shards")), j.Shards)
	if j.LinkLog {
		b.WriteString(" --link-log")
	}
	b.WriteString("\n")
	return b.String()
}

// MergeScript is the merge job; its dependency on the array is given at
// submission, when the array's job ID is known.
func (j *Job) MergeScript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# shunt bench %s: merge the %d shards into %s and write the report.\n", j.Scenario, j.Shards, j.Root)
	b.WriteString("# Written by shunt bench --slurm; merge refuses missing or incomplete shards.\n")
	b.WriteString(j.header("--job-name=shunt-"+j.Scenario+"-merge", "--nodes=1", "--ntasks=1",
		"--chdir="+j.Chdir, "--output="+j.path(logsDir, "merge-%j.out")))
	b.WriteString("set -eu\n")
	fmt.Fprintf(&b, "exec %s bench merge %s", quote(j.path(binaryFile)), quote(j.Root))
	for i := 1; i <= j.Shards; i++ {
		fmt.Fprintf(&b, " \\\n\t%s", quote(j.ShardDir(i)))
	}
	b.WriteString("\n")
	return b.String()
}

// Prepare writes ROOT/slurm: the binary (a copy of bin, so a rebuild or a
// `go run` cache cleanup does not pull it from under the tasks), the
// scenario, job.json and the two scripts. A ROOT prepared before must hold
// the same sweep: the same shards, repetitions and definition of the
// scenario.
func (j *Job) Prepare(bin string, sc *bench.Scenario, source []byte) error {
	if err := j.Check(); err != nil {
		return err
	}
	if err := j.sameAsBefore(sc); err != nil {
		return err
	}
	if err := os.MkdirAll(j.path(logsDir), 0o755); err != nil {
		return err
	}
	if err := copyExecutable(bin, j.path(binaryFile)); err != nil {
		return err
	}
	meta, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{scenarioFile, source, 0o644},
		{jobFile, append(meta, '\n'), 0o644},
		{arrayFile, []byte(j.ArrayScript()), 0o755},
		{mergeFile, []byte(j.MergeScript()), 0o755},
	} {
		if err := os.WriteFile(j.path(f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func (j *Job) sameAsBefore(sc *bench.Scenario) error {
	b, err := os.ReadFile(j.path(jobFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var old Job
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("%s: %w", j.path(jobFile), err)
	}
	if old.Scenario != j.Scenario || old.Shards != j.Shards || old.Reps != j.Reps {
		return fmt.Errorf("%s holds scenario %s in %d shards of %d repetitions, not %s in %d of %d: submit it alike to resume, or use another --out",
			j.Root, old.Scenario, old.Shards, old.Reps, j.Scenario, j.Shards, j.Reps)
	}
	file := j.path(scenarioFile)
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	prev, err := bench.Parse(file, src)
	if err != nil {
		return err
	}
	if diff := bench.DefinitionDiff(prev, sc); len(diff) > 0 {
		return fmt.Errorf("%s holds runs of another version of scenario %s (%s changed): use another --out", j.Root, sc.Name, strings.Join(diff, ", "))
	}
	return nil
}

// copyExecutable copies bin to dst through a temporary file and a rename,
// so a task already running the old copy keeps it.
func copyExecutable(bin, dst string) error {
	if same, _ := filepath.EvalSymlinks(bin); same == dst {
		return nil
	}
	in, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".shunt-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copying %s: %w", bin, err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// Pending returns the shards whose directories do not yet hold a success
// of every run, in index order: the tasks to (re)submit.
func (j *Job) Pending(sc *bench.Scenario) ([]int, error) {
	var out []int
	for i := 1; i <= j.Shards; i++ {
		done, err := j.shardDone(sc, i)
		if err != nil {
			return nil, err
		}
		if !done {
			out = append(out, i)
		}
	}
	return out, nil
}

func (j *Job) shardDone(sc *bench.Scenario, i int) (bool, error) {
	dir := j.ShardDir(i)
	if _, _, err := bench.ReadSweep(dir); errors.Is(err, bench.ErrNoSweep) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	recs, err := experiment.ReadRecords(filepath.Join(dir, bench.RunsFile))
	if err != nil {
		return false, err
	}
	var ok []*experiment.Record
	for _, r := range bench.Latest(recs) {
		if r.OK() {
			ok = append(ok, r)
		}
	}
	return len(bench.Missing(sc, j.Reps, bench.Shard{I: i, N: j.Shards}, ok)) == 0, nil
}

// Ranges writes task indices as sbatch's --array wants them: 1-3,5.
func Ranges(tasks []int) string {
	var parts []string
	for k := 0; k < len(tasks); {
		e := k
		for e+1 < len(tasks) && tasks[e+1] == tasks[e]+1 {
			e++
		}
		if e == k {
			parts = append(parts, strconv.Itoa(tasks[k]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", tasks[k], tasks[e]))
		}
		k = e + 1
	}
	return strings.Join(parts, ",")
}

// Submission is what Submit submitted.
type Submission struct {
	Array string // job ID of the array; "" when every shard was complete
	Tasks []int
	Merge string
}

// Submit submits the array for tasks (none: every shard is complete) and
// the merge job after it. With wait, it returns once the merge job has
// ended, with an error if the merge job did not complete (it failed, or was
// cancelled because a task failed: the error names the tasks). sbatch and
// scontrol are looked up on PATH.
func (j *Job) Submit(ctx context.Context, tasks []int, wait bool) (Submission, error) {
	s := Submission{Tasks: tasks}
	if _, err := exec.LookPath("sbatch"); err != nil {
		return s, errors.New("sbatch not found: --slurm submits to a Slurm cluster (scripts/slurm-cluster up starts a one-node cluster on this machine)")
	}
	var err error
	if len(tasks) > 0 {
		array := "--array=" + Ranges(tasks)
		if j.Throttle > 0 {
			array += "%" + strconv.Itoa(j.Throttle)
		}
		if s.Array, err = sbatch(ctx, array, j.path(arrayFile)); err != nil {
			return s, err
		}
	}
	args := []string{"--kill-on-invalid-dep=yes"}
	if s.Array != "" {
		args = append(args, "--dependency=afterok:"+s.Array)
	}
	s.Merge, err = sbatch(ctx, append(args, j.path(mergeFile))...)
	if err == nil && wait {
		err = mergeOutcome(ctx, s.Array, s.Merge)
	}
	return s, err
}

// sbatch runs sbatch --parsable and returns the job ID it prints.
func sbatch(ctx context.Context, args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	// --parsable prints "ID" or "ID;CLUSTER".
	id, _, _ := strings.Cut(strings.TrimSpace(strings.SplitN(out.String(), "\n", 2)[0]), ";")
	if err != nil {
		if id != "" {
			return id, fmt.Errorf("job %s: %v: %s", id, err, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("sbatch %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if id == "" {
		return "", fmt.Errorf("sbatch %s printed no job ID", strings.Join(args, " "))
	}
	return id, nil
}

// Logs is where the jobs write their output.
func (j *Job) Logs() string { return j.path(logsDir) }
