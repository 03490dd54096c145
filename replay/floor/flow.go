package floor

// flow is a network for maximum flow (Dinic's algorithm) with int64
// capacities; a page has at most a few hundred objects and slots.
type flow struct {
	adj   [][]int // edge indices out of each node
	to    []int
	cap   []int64 // residual capacity; edge i^1 is edge i's reverse
	level []int
	next  []int // per node, the first edge not yet exhausted in this phase
}

func newFlow(nodes int) *flow { return &flow{adj: make([][]int, nodes)} }

// node adds a node and returns its index.
func (f *flow) node() int {
	f.adj = append(f.adj, nil)
	return len(f.adj) - 1
}

func (f *flow) edge(from, to int, c int64) {
	f.adj[from] = append(f.adj[from], len(f.to))
	f.to, f.cap = append(f.to, to), append(f.cap, c)
	f.adj[to] = append(f.adj[to], len(f.to))
	f.to, f.cap = append(f.to, from), append(f.cap, 0)
}

// maxFlow pushes as much as it can from s to t and returns how much.
func (f *flow) maxFlow(s, t int) int64 {
	var total int64
	for f.levels(s, t) {
		f.next = make([]int, len(f.adj))
		for {
			pushed := f.push(s, t, 1<<62)
			if pushed == 0 {
				break
			}
			total += pushed
		}
	}
	return total
}

// levels numbers the nodes by their distance from s in the residual
// network and reports whether t is reachable.
func (f *flow) levels(s, t int) bool {
	f.level = make([]int, len(f.adj))
	for i := range f.level {
		f.level[i] = -1
	}
	f.level[s] = 0
	queue := []int{s}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range f.adj[u] {
			if v := f.to[e]; f.cap[e] > 0 && f.level[v] < 0 {
				f.level[v] = f.level[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return f.level[t] >= 0
}

// push sends at most limit from u to t along level-increasing edges.
func (f *flow) push(u, t int, limit int64) int64 {
	if u == t {
		return limit
	}
	for ; f.next[u] < len(f.adj[u]); f.next[u]++ {
		e := f.adj[u][f.next[u]]
		v := f.to[e]
		if f.cap[e] <= 0 || f.level[v] != f.level[u]+1 {
			continue
		}
		if got := f.push(v, t, min(limit, f.cap[e])); got > 0 {
			f.cap[e] -= got
			f.cap[e^1] += got
			return got
		}
	}
	return 0
}
