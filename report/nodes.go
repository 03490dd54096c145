package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
)

// writeNodes prints where the runs ran: the per-node spread of the
// scenario's reference row (bench.SpreadRow; nothing when it has no
// successful run), and, for a sharded sweep, each task's times and the wall
// time they project on N nodes. Records without a node (older than the
// field) print nothing.
func writeNodes(w io.Writer, sc *bench.Scenario, recs []*experiment.Record) error {
	withNode := false
	for _, r := range recs {
		withNode = withNode || r.Node != nil
	}
	if !withNode {
		return nil
	}
	proto, metric := bench.SpreadRow(sc, recs)
	if spread := bench.Spread(recs, proto, metric); len(spread) > 0 {
		fmt.Fprintf(w, "\nnodes: %s %s, each run / its cell's median over all nodes, p25 p50 p75; load: 1-minute load average as the runs started\n", proto, metric)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "node\tkernel\truns\tp25\tp50\tp75\tload")
		for _, n := range spread {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.2f-%.2f\n", n.Node, strings.Join(n.Kernels, " "), n.Runs, n.P25, n.P50, n.P75, n.LoadMin, n.LoadMax)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	tasks := bench.Tasks(recs)
	if len(tasks) < 2 {
		return nil
	}
	fmt.Fprintln(w, "\ntasks: wall from the first run's start to the last run's end, busy the sum of run durations")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tnodes\truns\twall\tbusy")
	walls := make([]time.Duration, len(tasks))
	for i, t := range tasks {
		walls[i] = t.Wall
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", t.Shard, strings.Join(t.Nodes, " "), t.Runs, roundDur(t.Wall), roundDur(t.Busy))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var proj []string
	for _, n := range nodeCounts(len(tasks)) {
		proj = append(proj, fmt.Sprintf("%d: %s", n, roundDur(bench.Makespan(walls, n))))
	}
	fmt.Fprintf(w, "projected wall time on N nodes (the tasks in index order, as Slurm starts an array; merge excluded): %s\n", strings.Join(proj, ", "))
	return nil
}

// nodeCounts are 1, 2, 4, ... up to the number of tasks, which is the most
// nodes an array of that many tasks can use.
func nodeCounts(tasks int) []int {
	var ns []int
	for n := 1; n < tasks; n *= 2 {
		ns = append(ns, n)
	}
	return append(ns, tasks)
}

// roundDur rounds to the second, or to 10 ms under a minute.
func roundDur(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Second)
}
