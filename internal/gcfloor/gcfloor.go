// Package gcfloor keeps a process's heap goal at least a floor: after every
// garbage collection it sets GOGC so that the next one starts no earlier
// than at the floor, and never below the GOGC the process started with.
//
// Why (issue 18, p99 at h2load -c 100): Go's heap goal is twice the live
// heap, at least 4 MB. shunt serve's live heap under load is ~5 MB, and
// each batch of 100 new h2c connections allocates ~5 MB at once (per
// connection ~50 KB: 16 KB read buffers, ten 1,152-byte streams, the write
// kit; memstats BySize), so the start of every h2load run brought one or
// two collections, 30-60 ms each on a busy 2-core machine, while 1,000
// requests waited: the first 1,000 requests of a run, 1 % of 100,000,
// took 17-68 ms at the median against h2o's 3-10 ms, and with GOGC=off
// 9-24 ms. A floor spends memory instead: at most the floor in garbage
// while the live heap is small; where the live heap is more than half
// the floor (10,000 idle connections: ~27 MB) it changes nothing.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapMinimum is Go's least heap goal at GOGC=100; the runtime scales it
// with GOGC (4 MB x GOGC/100), so a GOGC raised for a small live heap
// raises it too.
const heapMinimum = 4 << 20

// Percent is the GOGC that puts the heap goal, the larger of live * (1 +
// GOGC/100) and heapMinimum * GOGC/100, at floor where live is under half
// of it, and is at least base.
func Percent(live, floor uint64, base int) int {
	if live >= floor {
		return base
	}
	// Beyond this the scaled minimum alone passes the floor.
	p := floor * 100 / heapMinimum
	if live > 0 {
		p = min(p, (floor-live)*100/live)
	}
	return int(max(p, uint64(base)))
}

// Keep holds the heap goal at least floor bytes until stop is called. It
// does nothing (and stop does nothing) when the garbage collector is off
// (GOGC=off) or floor is 0.
func Keep(floor uint64) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base < 0 || floor == 0 {
		return func() {}
	}
	k := &keeper{floor: floor, base: base, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	k.adjust()
	k.arm()
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.stopped {
			k.stopped = true
			debug.SetGCPercent(base)
		}
	}
}

type keeper struct {
	floor uint64
	base  int
	// mu orders a finalizer's adjust against stop, so that nothing
	// raises GOGC after stop put it back.
	mu      sync.Mutex
	sample  []metrics.Sample
	stopped bool
}

// sentinel is garbage as soon as it is made: its finalizer runs once after
// the next collection, adjusts GOGC and makes the next sentinel.
type sentinel struct {
	k *keeper
	_ [16]byte // not a tiny allocation, which may outlive its collection
}

func (k *keeper) arm() {
	runtime.SetFinalizer(&sentinel{k: k}, func(s *sentinel) {
		if s.k.adjust() {
			s.k.arm()
		}
	})
}

// adjust sets GOGC from the live heap; it reports false once stopped.
func (k *keeper) adjust() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return false
	}
	metrics.Read(k.sample)
	if k.sample[0].Value.Kind() == metrics.KindUint64 {
		debug.SetGCPercent(Percent(k.sample[0].Value.Uint64(), k.floor, k.base))
	}
	return true
}
