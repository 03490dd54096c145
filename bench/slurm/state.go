package slurm

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// jobFields parses `scontrol --oneliner show job` output: one job (or
// array task) a line, its fields KEY=VALUE separated by spaces. A word
// without "=" continues the previous field's value (values such as a
// Reason or a path may hold spaces).
func jobFields(out string) []map[string]string {
	var jobs []map[string]string
	for _, line := range strings.Split(out, "\n") {
		f := map[string]string{}
		last := ""
		for _, w := range strings.Fields(line) {
			k, v, ok := strings.Cut(w, "=")
			if !ok || k == "" {
				if last != "" {
					f[last] += " " + w
				}
				continue
			}
			f[k], last = v, k
		}
		if len(f) > 0 {
			jobs = append(jobs, f)
		}
	}
	return jobs
}

// formatJob is one line of jobFields' input, keys in order.
func formatJob(f map[string]string) string {
	var words []string
	for _, k := range slices.Sorted(maps.Keys(f)) {
		words = append(words, k+"="+f[k])
	}
	return strings.Join(words, " ")
}

// jobs is what scontrol says of job id (every task of an array).
func jobs(ctx context.Context, id string) ([]map[string]string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "scontrol", "--oneliner", "show", "job", id)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("scontrol show job %s: %v: %s", id, err, strings.TrimSpace(stderr.String()))
	}
	return jobFields(out.String()), nil
}

// ended are the states of a job that will not run again.
var ended = map[string]bool{"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"OUT_OF_MEMORY": true, "BOOT_FAIL": true, "DEADLINE": true, "PREEMPTED": true}

// pollEvery is how often mergeOutcome asks scontrol whether the merge job
// has ended. (sbatch --wait polls at up to 32 s: half a minute lost at the
// end of every sweep, most of the CI test's time.)
const pollEvery = time.Second

// mergeOutcome waits until the merge job merge has ended (or ctx is done)
// and is nil when it completed, else an error saying how it ended and
// which tasks of array failed. Its state is asked of the controller, not
// taken from an exit code: a job cancelled because its dependency can never
// be satisfied (a task failed) ends with exit code 0, and so does sbatch
// --wait.
func mergeOutcome(ctx context.Context, array, merge string) error {
	var m map[string]string
	for {
		js, err := jobs(ctx, merge)
		if err != nil {
			return fmt.Errorf("merge job %s: its end cannot be checked: %w", merge, err)
		}
		if len(js) != 1 {
			return fmt.Errorf("merge job %s: scontrol lists %d jobs", merge, len(js))
		}
		if m = js[0]; ended[m["JobState"]] {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("merge job %s still %s: %w", merge, m["JobState"], ctx.Err())
		case <-time.After(pollEvery):
		}
	}
	if m["JobState"] == "COMPLETED" {
		return nil
	}
	msg := fmt.Sprintf("merge job %s %s (reason %s, exit %s)", merge, m["JobState"], m["Reason"], m["ExitCode"])
	if array == "" {
		return fmt.Errorf("%s", msg)
	}
	tasks, err := jobs(ctx, array)
	if err != nil {
		return fmt.Errorf("%s; array job %s: %w", msg, array, err)
	}
	return fmt.Errorf("%s; %s", msg, failedTasks(array, tasks))
}

// failedTasks names the tasks of an array that did not complete, with
// their states and exit codes.
func failedTasks(array string, tasks []map[string]string) string {
	// scontrol lists an array's record under its last task first.
	tasks = slices.Clone(tasks)
	sort.SliceStable(tasks, func(a, b int) bool { return taskIndex(tasks[a]) < taskIndex(tasks[b]) })
	var bad []string
	for _, t := range tasks {
		if st := t["JobState"]; st != "COMPLETED" {
			bad = append(bad, fmt.Sprintf("task %s %s (exit %s)", t["ArrayTaskId"], st, t["ExitCode"]))
		}
	}
	if len(bad) == 0 {
		return fmt.Sprintf("every task of array job %s completed", array)
	}
	return fmt.Sprintf("array job %s: %s", array, strings.Join(bad, ", "))
}

// taskIndex is the first index of a task's ArrayTaskId ("3", or "3-4,7"
// for tasks still pending together); -1 when there is none.
func taskIndex(t map[string]string) int {
	id := t["ArrayTaskId"]
	end := strings.IndexFunc(id, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		id = id[:end]
	}
	n, err := strconv.Atoi(id)
	if err != nil {
		return -1
	}
	return n
}
