package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		base, want  int
	}{
		{5 * mb, 32 * mb, 100, 540},  // goal 5 MB x 6.4 = 32 MB (the minimum 21.6 MB)
		{7 * mb, 32 * mb, 100, 357},  // rounds down: the goal a little under
		{16 * mb, 32 * mb, 100, 100}, // the floor is twice live: the base
		{27 * mb, 32 * mb, 100, 100}, // 10,000 idle connections: unchanged
		{40 * mb, 32 * mb, 100, 100}, // above the floor
		{5 * mb, 32 * mb, 800, 800},  // never below the process's own GOGC
		{3 * mb, 12 * mb, 50, 300},   // a low one raised where the floor needs it
		{0, 32 * mb, 100, 800},       // nothing live yet: the minimum 4 MB x 8 = 32 MB
		{2 * mb, 32 * mb, 100, 800},  // not 1,500: the minimum would be 60 MB
		{mb, 2000 * mb, 100, 50_000}, // the minimum's bound
		{5 * mb, 0, 100, 100},        // no floor
	} {
		if got := Percent(c.live, c.floor, c.base); got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.floor, c.base, got, c.want)
		}
	}
}

// TestKeepRaisesAndRestores: after a collection with a small live heap the
// process's GOGC is raised to reach the floor, and stop puts it back.
func TestKeepRaisesAndRestores(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	stop := Keep(1 << 30) // far above this test's live heap
	raised := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		if p := raised(); p > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after collections, want it raised over 100", raised())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if p := raised(); p != 100 {
		t.Fatalf("GOGC %d after stop, want 100", p)
	}
	// After stop, collections leave it alone.
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if p := raised(); p != 100 {
		t.Fatalf("GOGC %d after stop and a collection, want 100", p)
	}
}

// TestKeepOffWithoutGC: with the collector off, Keep leaves it off.
func TestKeepOffWithoutGC(t *testing.T) {
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)
	stop := Keep(1 << 30)
	defer stop()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GOGC %d, want off", p)
	}
}
