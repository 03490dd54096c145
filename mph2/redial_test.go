package mph2

import (
	"testing"
	"time"
)

// The waits double from redialMin to redialMax and stop at the deadline;
// data on the path starts them over.
func TestBackoff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	deadline := t0.Add(5 * time.Second)
	var b backoff
	now := t0
	var waits []time.Duration
	for {
		w, ok := b.after(now, deadline)
		if !ok {
			break
		}
		waits = append(waits, w)
		now = now.Add(w)
		if len(waits) > 100 {
			t.Fatal("no end before the deadline")
		}
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if now.After(deadline) || b.tries != len(want) {
		t.Errorf("last attempt at %v past the deadline %v, or %d tries counted", now.Sub(t0), deadline.Sub(t0), b.tries)
	}
	b.delivered()
	if w, ok := b.after(now, now.Add(time.Hour)); !ok || w != redialMin || b.tries != 1 {
		t.Errorf("after data: wait %v (%v), tries %d; want %v, 1", w, ok, b.tries, redialMin)
	}
	if _, ok := b.after(now, now.Add(150*time.Millisecond)); ok {
		t.Error("an attempt 200 ms out allowed with 150 ms left")
	}
}
