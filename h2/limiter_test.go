package h2

import (
	"testing"
	"time"
)

func TestResetLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newResetLimiter(10, time.Second)
	for i := 0; i < 10; i++ {
		if !l.allow(t0) {
			t.Fatalf("reset %d of burst 10 refused", i)
		}
	}
	if l.allow(t0) {
		t.Fatal("11th reset in the same instant allowed")
	}
	if !l.allow(t0.Add(100 * time.Millisecond)) {
		t.Fatal("reset after refill of one token refused")
	}
	if l.allow(t0.Add(100 * time.Millisecond)) {
		t.Fatal("second reset after refill of one token allowed")
	}
	if !l.allow(t0.Add(time.Hour)) {
		t.Fatal("reset after long pause refused")
	}
	// The bucket caps at its burst however long the pause.
	n := 1
	for l.allow(t0.Add(time.Hour)) {
		n++
	}
	if n != 10 {
		t.Fatalf("burst after long pause %d, want 10", n)
	}
}
