package bench

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shunt-net/shunt/experiment"
)

// NodeSpread is how one row's runs on one node compare with the same
// cells' runs on every node: each run's metric divided by its cell's median
// over all nodes, so cells of different sizes pool, and a slow node stands
// out as ratios above 1.
type NodeSpread struct {
	Node    string   `json:"node"`
	Kernels []string `json:"kernels"`
	Runs    int      `json:"runs"`
	// P25, P50, P75 of the ratios run / cell median.
	P25 float64 `json:"p25"`
	P50 float64 `json:"p50"`
	P75 float64 `json:"p75"`
	// LoadMin, LoadMax: the 1-minute load average as the node's runs started.
	LoadMin float64 `json:"load_min"`
	LoadMax float64 `json:"load_max"`
}

// SpreadRow is the row and metric whose per-node spread a report shows: the
// scenario's first protocol and its first metric (the scenario's metrics
// order, else the first name the row's runs measured).
func SpreadRow(sc *Scenario, recs []*experiment.Record) (protocol, metric string) {
	if len(sc.Protocols) == 0 {
		return "", ""
	}
	protocol = sc.Protocols[0].Name
	if len(sc.Metrics) > 0 {
		return protocol, sc.Metrics[0]
	}
	for _, r := range recs {
		if r.Protocol.Name != protocol || !r.OK() {
			continue
		}
		for m := range r.Metrics {
			if metric == "" || m < metric {
				metric = m
			}
		}
	}
	return protocol, metric
}

// Spread computes the per-node spread of protocol's metric over recs (one
// record per run ID is kept, see Latest), nodes in name order. Runs without
// a node (records older than the field) are under node "".
func Spread(recs []*experiment.Record, protocol, metric string) []NodeSpread {
	type cell struct{ cond, obj string }
	byCell := map[cell][]float64{}
	var rows []*experiment.Record
	for _, r := range Latest(recs) {
		v, ok := r.Metrics[metric]
		if r.Protocol.Name != protocol || !r.OK() || !ok {
			continue
		}
		k := cell{r.Condition.Name, r.Object.Name}
		byCell[k] = append(byCell[k], v)
		rows = append(rows, r)
	}
	median := map[cell]float64{}
	for k, vs := range byCell {
		sort.Float64s(vs)
		median[k] = Quantile(vs, 0.5)
	}
	type acc struct {
		s      NodeSpread
		ratios []float64
	}
	nodes := map[string]*acc{}
	for _, r := range rows {
		m := median[cell{r.Condition.Name, r.Object.Name}]
		if m == 0 {
			continue // a ratio to zero says nothing
		}
		name, kernel, load := "", "", 0.0
		if r.Node != nil {
			name, kernel, load = r.Node.Name, r.Node.Kernel, r.Node.Load1
		}
		a := nodes[name]
		if a == nil {
			a = &acc{s: NodeSpread{Node: name, LoadMin: load, LoadMax: load}}
			nodes[name] = a
		}
		a.ratios = append(a.ratios, r.Metrics[metric]/m)
		if kernel != "" && !slices.Contains(a.s.Kernels, kernel) {
			a.s.Kernels = append(a.s.Kernels, kernel)
		}
		a.s.LoadMin, a.s.LoadMax = min(a.s.LoadMin, load), max(a.s.LoadMax, load)
	}
	out := make([]NodeSpread, 0, len(nodes))
	for _, a := range nodes {
		sort.Float64s(a.ratios)
		a.s.Runs = len(a.ratios)
		a.s.P25, a.s.P50, a.s.P75 = Quantile(a.ratios, 0.25), Quantile(a.ratios, 0.5), Quantile(a.ratios, 0.75)
		out = append(out, a.s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// Task is what one shard's runs took: from its first run's start to its
// last run's end, and the nodes it ran on (one, unless it was resumed
// elsewhere).
type Task struct {
	Shard string        `json:"shard"` // "i/n"; "" for runs of an unsharded sweep
	Nodes []string      `json:"nodes"`
	Runs  int           `json:"runs"`
	Wall  time.Duration `json:"wall_ns"`
	// Busy is the sum of the runs' durations: Wall less the set-up of
	// networks and servers between runs, and less pauses of a resumed task.
	Busy time.Duration `json:"busy_ns"`
}

// Tasks groups the records (one per run ID, see Latest) by shard, in shard
// order. A resumed shard's wall time spans its pause too; Busy does not.
func Tasks(recs []*experiment.Record) []Task {
	type acc struct {
		t          Task
		first, end time.Time
	}
	by := map[string]*acc{}
	for _, r := range Latest(recs) {
		a := by[r.Shard]
		if a == nil {
			a = &acc{t: Task{Shard: r.Shard}, first: r.Start}
			by[r.Shard] = a
		}
		end := r.Start.Add(time.Duration(r.Duration * float64(time.Second)))
		if r.Start.Before(a.first) {
			a.first = r.Start
		}
		if end.After(a.end) {
			a.end = end
		}
		a.t.Runs++
		a.t.Busy += time.Duration(r.Duration * float64(time.Second))
		if r.Node != nil && !slices.Contains(a.t.Nodes, r.Node.Name) {
			a.t.Nodes = append(a.t.Nodes, r.Node.Name)
		}
	}
	out := make([]Task, 0, len(by))
	for _, a := range by {
		a.t.Wall = a.end.Sub(a.first)
		out = append(out, a.t)
	}
	sort.Slice(out, func(i, j int) bool { return shardLess(out[i].Shard, out[j].Shard) })
	return out
}

// shardLess orders "i/n" labels by n, then i, numerically.
func shardLess(a, b string) bool {
	sa, ea := ParseShard(a)
	sb, eb := ParseShard(b)
	if ea != nil || eb != nil {
		return strings.Compare(a, b) < 0
	}
	if sa.N != sb.N {
		return sa.N < sb.N
	}
	return sa.I < sb.I
}

// Makespan is the wall time of tasks of the given lengths on nodes identical
// machines when, as Slurm does with a job array, each task starts in index
// order on the first node that is free: the projection of a sweep's wall
// time on a cluster from its per-task times (merge excluded).
func Makespan(tasks []time.Duration, nodes int) time.Duration {
	if nodes < 1 {
		nodes = 1
	}
	free := make([]time.Duration, nodes)
	var end time.Duration
	for _, t := range tasks {
		i := 0
		for j := range free {
			if free[j] < free[i] {
				i = j
			}
		}
		free[i] += t
		end = max(end, free[i])
	}
	return end
}
