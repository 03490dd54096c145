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
	s := msSched{slow: 256 << 10, min: 64 << 10, max: 4 << 20, est: make([]float64, 2)}
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
}

// MSPlayer downloads whole objects over two paths of different speeds, each
// byte once, and keeps its estimates for the next object.
func TestMSPlayerDownload(t *testing.T) {
	base := startServer(t, nil)
	m := &MSPlayer{Paths: []Path{loopPath("fast", 8e6, 0), loopPath("slow", 2e6, 0)}}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Warm(ctx, base+"/gen/100"); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{2 << 20, 100 << 10, 3<<20 + 7} {
		f := newMemFile(size)
		res, err := m.Download(ctx, fmt.Sprintf("%s/gen/%d", base, size), f)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		f.check(t)
		if res.Size != size || res.Paths[0].Delivered+res.Paths[1].Delivered != size {
			t.Fatalf("size %d: %+v", size, res)
		}
	}
	if m.sched.est[0] <= m.sched.est[1] {
		t.Fatalf("estimates %v: want the fast path faster", m.sched.est)
	}
}
