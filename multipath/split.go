package multipath

import (
	"math"
	"sort"
	"time"
)

// Cond is what Equation 1 needs to know about one path.
type Cond struct {
	Bandwidth float64       // bytes per second
	Delay     time.Duration // until the path's first byte of a new chunk: its RTT for a fresh request, 0 if already flowing
}

// Split divides size bytes among paths so that all of them finish at the same
// time: Equation 1 of MP-H2 (T_i = Delay_i + D_i/BW_i equal for every path)
// generalised to N paths, T = (D + sum BW_i*Delay_i) / sum BW_i and
// D_i = BW_i * (T - Delay_i). A path that could not deliver its first byte
// before the others finish gets nothing, and T is solved again without it.
// It returns the bytes per path, in the order of paths and summing to size,
// and T. Paths with no bandwidth get nothing; if none has any, T is -1 and
// every share is 0.
func Split(size int64, paths []Cond) ([]int64, time.Duration) {
	shares := make([]int64, len(paths))
	order := make([]int, 0, len(paths))
	for i, c := range paths {
		if c.Bandwidth > 0 {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return shares, -1
	}
	sort.SliceStable(order, func(a, b int) bool { return paths[order[a]].Delay < paths[order[b]].Delay })
	// Take paths in order of delay while the next one can still start before
	// the ones taken so far would finish.
	var sumBW, sumBWD float64
	var t float64
	used := 0
	for _, i := range order {
		d := paths[i].Delay.Seconds()
		if used > 0 && d >= t {
			break
		}
		sumBW += paths[i].Bandwidth
		sumBWD += paths[i].Bandwidth * d
		t = (float64(size) + sumBWD) / sumBW
		used++
	}
	var given int64
	for _, i := range order[:used] {
		shares[i] = int64(paths[i].Bandwidth * (t - paths[i].Delay.Seconds()))
		given += shares[i]
	}
	// Rounding leaves a few bytes over (or, with float error, under): the
	// quickest path absorbs them.
	shares[order[0]] += size - given
	return shares, time.Duration(math.Round(t * 1e9))
}

// IdealTime is the completion time of size bytes over paths split by
// Equation 1 with exact knowledge: one request per path sent at time zero,
// each path's data arriving Delay later at its full bandwidth. It is the
// "ideal" line of MP-H2's Figure 8.
func IdealTime(size int64, paths []Cond) time.Duration {
	_, t := Split(size, paths)
	return t
}
