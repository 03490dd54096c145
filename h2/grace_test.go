package h2

import (
	"testing"
	"time"
)

// TestQuietGrace drives quietGrace with a fake clock.
func TestQuietGrace(t *testing.T) {
	const base = 10 * time.Millisecond
	t0 := time.Unix(1000, 0)
	var g quietGrace
	if g.of(base) != base || g.pending() {
		t.Fatalf("new: grace %v, pending %v; want the base, false", g.of(base), g.pending())
	}
	steps := []struct {
		quiet time.Duration // from turning quiet to the next stream, the grace having run out
		want  time.Duration // the grace after that stream
	}{
		{12 * time.Millisecond, 24 * time.Millisecond},   // back 2 ms after the base grace: twice the spell
		{30 * time.Millisecond, 60 * time.Millisecond},   // past 24 ms: twice again
		{100 * time.Millisecond, 160 * time.Millisecond}, // bounded at 16 base graces
		{159 * time.Millisecond, 160 * time.Millisecond},
		{160 * time.Millisecond, base}, // quiet as long as the bound: back to the base
		{3 * time.Second, base},
		{time.Millisecond, base}, // a grace never shorter than the base
	}
	now := t0
	for i, s := range steps {
		g.ranOut(now)
		if !g.pending() {
			t.Fatalf("step %d: not pending after ranOut", i)
		}
		g.opened(now.Add(s.quiet), base)
		if got := g.of(base); got != s.want || g.pending() {
			t.Fatalf("step %d (quiet %v): grace %v, pending %v; want %v, false", i, s.quiet, got, g.pending(), s.want)
		}
		now = now.Add(time.Second)
	}
	// A writer that ran again for a control frame and ran out once more
	// does not shorten the spell: 100 ms from the first, not 10.
	g.ranOut(now)
	g.ranOut(now.Add(90 * time.Millisecond))
	g.opened(now.Add(100*time.Millisecond), base)
	if got := g.of(base); got != 160*time.Millisecond {
		t.Fatalf("after a second ranOut in one quiet spell: grace %v, want %v", got, 160*time.Millisecond)
	}
}
