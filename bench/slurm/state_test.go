package slurm

import (
	"maps"
	"strings"
	"testing"
)

// Two tasks of a failed array as scontrol --oneliner prints them (cut
// short), the array's record under its last task first.
const failedArray = `JobId=14 ArrayJobId=14 ArrayTaskId=2 JobName=shunt-slurm-fail UserId=root(0) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=1:0 WorkDir=/work/my results
JobId=16 ArrayJobId=14 ArrayTaskId=1 JobName=shunt-slurm-fail UserId=root(0) JobState=COMPLETED Reason=None ExitCode=0:0
JobId=17 ArrayJobId=14 ArrayTaskId=3-4,7%2 JobState=PENDING Reason=JobHeldUser ExitCode=0:0
`

func TestJobFields(t *testing.T) {
	jobs := jobFields(failedArray)
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3: %v", len(jobs), jobs)
	}
	if j := jobs[0]; j["JobId"] != "14" || j["ArrayTaskId"] != "2" || j["JobState"] != "FAILED" || j["ExitCode"] != "1:0" || j["WorkDir"] != "/work/my results" || j["UserId"] != "root(0)" {
		t.Errorf("first job parsed as %v", j)
	}
	// Round trip: a parsed line formatted and parsed again is the same.
	for _, j := range jobs {
		again := jobFields(formatJob(j))
		if len(again) != 1 || !maps.Equal(again[0], j) {
			t.Errorf("%v formatted as %q parsed as %v", j, formatJob(j), again)
		}
	}
	got := failedTasks("14", jobs)
	want := "array job 14: task 2 FAILED (exit 1:0), task 3-4,7%2 PENDING (exit 0:0)"
	if got != want {
		t.Errorf("failedTasks = %q, want %q", got, want)
	}
	if got := failedTasks("14", jobs[1:2]); !strings.Contains(got, "every task") {
		t.Errorf("all completed: %q", got)
	}
}

func FuzzJobFields(f *testing.F) {
	f.Add(failedArray)
	f.Add("=x a b=c  d=")
	f.Fuzz(func(t *testing.T, s string) {
		for _, j := range jobFields(s) {
			again := jobFields(formatJob(j))
			// A value that ends up holding " k=v" (a word with = after a
			// continuation) is a field of its own once formatted; the
			// fields it came from are still all there.
			if len(again) != 1 {
				t.Fatalf("%v formatted as %q parsed as %d jobs", j, formatJob(j), len(again))
			}
			for k := range j {
				if _, ok := again[0][k]; !ok {
					t.Fatalf("%v formatted as %q lost %q: %v", j, formatJob(j), k, again[0])
				}
			}
		}
	})
}
