package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/bench/slurm"
	"github.com/shunt-net/shunt/internal/shared"
)

// slurmFlags are shunt bench's options for running a sweep as a Slurm job array.
type slurmFlags struct {
	on           bool
	array, nodes int
	wait, shared bool
}

func (s *slurmFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.on, "slurm", false, "submit the sweep to Slurm as a job array of shards and a merge job (options after -- go to sbatch)")
	fs.IntVar(&s.array, "array", 0, "with --slurm: split the sweep into `N` shards, one array task each (default: --nodes, else 4)")
	fs.IntVar(&s.nodes, "nodes", 0, "with --slurm: run at most `N` tasks at once, each alone on a node")
	fs.BoolVar(&s.wait, "wait", false, "with --slurm: return once the merge job has ended, failing if it did not succeed")
	fs.BoolVar(&s.shared, "shared-node", false, "with --slurm: tasks may share a node, each with the CPUs sbatch options ask for (default 1), for sweeps bound by link delays; the load average every run records shows the sharing")
}

func (s *slurmFlags) check(shard string, sbatchOpts []string) error {
	if !s.on {
		if s.array != 0 || s.nodes != 0 || s.wait || s.shared || sbatchOpts != nil {
			return errors.New("--array, --nodes, --wait, --shared-node and sbatch options after -- go with --slurm")
		}
		return nil
	}
	if shard != "" {
		return errors.New("--slurm splits the sweep itself: give --array N, not --shard")
	}
	if s.array < 0 || s.nodes < 0 {
		return fmt.Errorf("--array %d --nodes %d: want positive counts", s.array, s.nodes)
	}
	if s.array == 0 {
		s.array = s.nodes
	}
	if s.array == 0 {
		s.array = 4
	}
	return nil
}

// splitDashDash splits args at the first "--": what follows is for another
// program (nil when there is no "--").
func splitDashDash(args []string) (own, rest []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], append([]string{}, args[i+1:]...)
		}
	}
	return args, nil
}

// submitSlurm writes the job array and the merge job of sc into dir and
// submits them; submitting the same dir again resubmits the shards that are
// not complete. name is the scenario as the command named it (a shipped
// name or a file), for the command that resumes.
func submitSlurm(ctx context.Context, sl slurmFlags, name string, sc *bench.Scenario, src []byte, dir string, linkLog bool, sbatchOpts []string, w io.Writer) error {
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	job := &slurm.Job{Root: root, Scenario: sc.Name, Shards: sl.array, Reps: sc.Reps, Throttle: sl.nodes, SharedNode: sl.shared,
		Options: sbatchOpts, Chdir: wd, LinkLog: linkLog}
	if d, err := shared.Dir(); err == nil {
		job.Shared, _ = filepath.Abs(d)
	}
	if err := job.Prepare(bin, sc, src); err != nil {
		return err
	}
	tasks, err := job.Pending(sc)
	if err != nil {
		return err
	}
	sub, err := job.Submit(ctx, tasks, sl.wait)
	if sub.Array != "" {
		fmt.Fprintf(w, "shunt bench %s: %d runs in %d shards; array job %s runs tasks %s of %d\n", sc.Name, len(bench.Plan(sc)), job.Shards, sub.Array, slurm.Ranges(tasks), job.Shards)
	} else if sub.Merge != "" {
		fmt.Fprintf(w, "shunt bench %s: all %d shards complete\n", sc.Name, job.Shards)
	}
	if sub.Merge != "" {
		fmt.Fprintf(w, "merge job %s (after the array succeeds): report in %s, logs in %s\n", sub.Merge, root, job.Logs())
	}
	resume := fmt.Sprintf("shunt bench %s --slurm --array %d --reps %d --out %s", name, job.Shards, job.Reps, root)
	if err != nil {
		return fmt.Errorf("%w (logs in %s; failed or timed-out tasks resume with: %s)", err, job.Logs(), resume)
	}
	if sl.wait {
		fmt.Fprintf(w, "merged: %s\n", filepath.Join(root, "report.html"))
	} else {
		fmt.Fprintf(w, "failed or timed-out tasks resume with: %s\n", resume)
	}
	return nil
}
