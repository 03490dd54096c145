package mph2

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The slow path's chunk doubles when its chunk's throughput reaches the
// estimate and halves when it falls short; the fast path's follows the
// throughput ratio.
func TestMSSchedChunks(t *testing.T) {
	s := newMSSched(2, 0, 0, 0)
	if got := s.chunk(0); got != 256<<10 {
		t.Fatalf("first chunk %d, want the initial 256 KB", got)
	}
	s.done(0, 1e6, time.Second) // fast: 1 MB/s
	s.done(1, 250e3, time.Second)
	if sp := s.slowPath(); sp != 1 {
		t.Fatalf("slow path %d, want 1", sp)
	}
	if got := s.chunk(0); got != 1<<20 {
		t.Fatalf("fast chunk %d, want 4 x 256 KB (ratio 4)", got)
	}
	s.done(1, 300e3, time.Second) // above the 250 KB/s estimate: double
	if s.slow != 512<<10 {
		t.Fatalf("slow chunk %d after a faster chunk, want 512 KB", s.slow)
	}
	s.done(1, 100e3, time.Second) // below: halve
	if s.slow != 256<<10 {
		t.Fatalf("slow chunk %d after a slower chunk, want 256 KB", s.slow)
	}
	for range 10 {
		s.done(1, 1, time.Second)
	}
	if s.slow != 64<<10 {
		t.Fatalf("slow chunk %d, want the 64 KB floor", s.slow)
	}
	s.est[0] = 1e12
	if got := s.chunk(0); got != 4<<20 {
		t.Fatalf("fast chunk %d, want the 4 MB cap", got)
	}
	// At the cap the ratio holds: slow chunk 4 MB, ratio 4, fast 4 MB.
	s.est, s.slow = []float64{1e6, 250e3}, 4<<20
	if f, sl := s.chunk(0), s.chunk(1); f != 4<<20 || sl != 1<<20 {
		t.Fatalf("chunks %d and %d at the cap, want 4 MB and 1 MB", f, sl)
	}
}

// Mid-object a path claims its whole chunk; once the paths' next chunks
// together reach the end, what remains is split in their ratio, each share
// claimed once, the rounding's bytes to the path asking first.
func TestMSObjectClaims(t *testing.T) {
	s := newMSSched(2, 1<<20, 0, 0)
	s.est = []float64{1e6, 1e6}
	o := s.object()
	if got := o.claim(1, -1); got != 1<<20 {
		t.Fatalf("size unknown: claim %d, want the chunk", got)
	}
	if got := o.claim(0, 5<<20); got != 1<<20 {
		t.Fatalf("5 MB left: claim %d, want the 1 MB chunk", got)
	}
	if got := o.claim(1, 2<<20-1); got != 1<<20 {
		t.Fatalf("2 MB - 1 left, equal paths: claim %d, want half and the odd byte", got)
	}
	if got := o.claim(0, 1<<20-1); got != 1<<20-1 {
		t.Fatalf("the other path's share %d, want 1 MB - 1", got)
	}
	if got := o.claim(1, 0); got != 0 {
		t.Fatalf("after its share: claim %d, want 0", got)
	}

	// Throughputs 3:7 (wifi, lte): lte is the fast path, its chunk 7/3 of
	// the slow path's; a 1 MB segment goes 30/70 whichever path asks first.
	s.est = []float64{3e5, 7e5}
	s.slow = 4 << 20
	for _, first := range []int{0, 1} {
		o := s.object()
		got := []int64{0, 0}
		got[first] = o.claim(first, 1e6)
		got[1-first] = o.claim(1-first, 1e6-got[first])
		if got[0]+got[1] != 1e6 || got[0] < 3e5-1 || got[0] > 3e5+1 { // the rounding's byte
			t.Fatalf("first %d: shares %v, want 300000 and 700000", first, got)
		}
	}
}

// msRun plays sizes through MSPlayer's scheduler on simulated paths (rate in
// bytes/s, a round trip before each chunk's first byte) on a fake clock, as
// chunked runs it: the path free first claims next. It returns each
// download's bytes per path.
func msRun(s *msSched, sizes []int64, rate []float64, rtt time.Duration) [][]int64 {
	var out [][]int64
	for _, size := range sizes {
		o := s.object()
		free := make([]time.Duration, len(rate)) // when each path asks next
		active := make([]bool, len(rate))
		for p := range active {
			active[p] = true
		}
		got := make([]int64, len(rate))
		var next int64
		for {
			p := -1
			for q := range rate {
				if active[q] && (p < 0 || free[q] < free[p]) {
					p = q
				}
			}
			if p < 0 {
				break
			}
			n := int64(0)
			if next < size {
				n = o.claim(p, size-next)
			}
			if n <= 0 {
				active[p] = false
				continue
			}
			n = min(n, size-next)
			next += n
			d := rtt + time.Duration(float64(n)/rate[p]*float64(time.Second))
			free[p] += d
			got[p] += n
			s.done(p, n, d)
		}
		var end time.Duration
		for _, f := range free {
			end = max(end, f)
		}
		for p := range free {
			free[p] = end // the next segment starts when this one is complete
		}
		out = append(out, got)
	}
	return out
}

// segmentSizes are 20 segments at the rungs a (5,5) Mbit/s run plays
// (634..6305 kbit/s, 6 s): 0.48-4.7 MB.
func segmentSizes() []int64 {
	var sizes []int64
	for i, kbps := range []int64{634, 634, 3983, 6305} {
		for range 5 {
			sizes = append(sizes, kbps*6000/8+int64(i)*1013)
		}
	}
	return sizes
}

// On equal paths every segment is shared about evenly, also once the
// chunks have grown past a segment's size (the defect of the version that
// gave a segment's remainder to the first path to ask: one path carried
// whole segments), and on 3:7 paths in about that ratio.
func TestMSPlayerSharesSimulated(t *testing.T) {
	for _, c := range []struct {
		rate   []float64
		lo, hi float64 // path 0's share of every segment
	}{
		{[]float64{625e3, 625e3}, 0.4, 0.6},
		// Per-chunk throughput counts each request's round trip, which
		// weighs more on the fast path's chunks: its share runs below 70 %.
		{[]float64{375e3, 875e3}, 0.2, 0.45},
	} {
		s := newMSSched(2, 0, 0, 0)
		for i, got := range msRun(&s, segmentSizes(), c.rate, 50*time.Millisecond) {
			share := float64(got[0]) / float64(got[0]+got[1])
			if i > 0 && (share < c.lo || share > c.hi) { // the first segment has no estimates yet
				t.Errorf("rates %v, segment %d: path 0 carried %d of %d bytes (%.2f), want %.1f-%.1f", c.rate, i, got[0], got[0]+got[1], share, c.lo, c.hi)
			}
		}
		if s.slow <= s.min {
			t.Errorf("rates %v: slow chunk at the floor (%d)", c.rate, s.slow)
		}
	}
}

// warmMSPlayer is an MSPlayer on paths to a test server, warmed.
func warmMSPlayer(t *testing.T, m *MSPlayer) (ctx context.Context, base string) {
	base = startServer(t, nil)
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := m.Warm(ctx, base+"/gen/100"); err != nil {
		t.Fatal(err)
	}
	return ctx, base
}

// msDownload downloads /gen/size, telling m the size known (-1: none), and
// checks every byte.
func msDownload(ctx context.Context, t *testing.T, m *MSPlayer, base string, size, known int64) *Result {
	t.Helper()
	f := newMemFile(size)
	res, err := m.Download(ctx, fmt.Sprintf("%s/gen/%d", base, size), known, f, nil)
	if err != nil {
		t.Fatalf("size %d: %v", size, err)
	}
	f.check(t)
	if res.Size != size || res.Paths[0].Delivered+res.Paths[1].Delivered != size {
		t.Fatalf("size %d: %+v", size, res)
	}
	return res
}

// MSPlayer downloads whole objects over two paths of different speeds, each
// byte once, and keeps its estimates for the next object. The rates are low
// enough that a loaded machine's loopback (~1 MB/s under CI beside other
// builds) does not cap the fast path below the slow one.
func TestMSPlayerDownload(t *testing.T) {
	m := &MSPlayer{Paths: []Path{loopPath("fast", 2e6, 0), loopPath("slow", 0.25e6, 0)}}
	ctx, base := warmMSPlayer(t, m)
	msDownload(ctx, t, m, base, 2<<20, -1) // the size learnt from the first response
	msDownload(ctx, t, m, base, 100<<10, 100<<10)
	msDownload(ctx, t, m, base, 3<<20+7, 3<<20+7)
	if m.sched.est[0] <= m.sched.est[1] {
		t.Fatalf("estimates %v: want the fast path faster", m.sched.est)
	}
	// A size that is not the object's is an error, not a short file.
	if _, err := m.Download(ctx, base+"/gen/1000", 999, newMemFile(1000), nil); err == nil {
		t.Fatal("a size that does not match the object: no error")
	}
}

// Two paths of equal rate each carry a fair share of every segment over
// real connections (paced loopback), chunks grown past the segment's size
// included.
func TestMSPlayerEqualPathsShare(t *testing.T) {
	m := &MSPlayer{Paths: []Path{loopPath("a", 4e6, 0), loopPath("b", 4e6, 0)}, Chunk: 4 << 20}
	ctx, base := warmMSPlayer(t, m)
	for _, size := range []int64{1 << 20, 3 << 20, 2<<20 + 1} {
		res := msDownload(ctx, t, m, base, size, size)
		for _, p := range res.Paths {
			if share := float64(p.Delivered) / float64(size); share < 0.35 || share > 0.65 {
				t.Fatalf("size %d: path %s carried %d bytes (%.2f): want a fair share", size, p.Name, p.Delivered, share)
			}
		}
	}
}
