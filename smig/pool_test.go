package smig

import (
	"testing"
	"time"
)

func TestPoolLifecycle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := NewPool(PoolConfig{Size: 1, IdleTimeout: 10 * time.Second, MaxConns: 3})
	if n := p.ToOpen(0); n != 1 {
		t.Fatalf("empty pool opens %d, want 1", n)
	}
	if n := p.ToOpen(0); n != 0 {
		t.Fatalf("while opening, opens %d more", n)
	}
	p.Opened(1, t0)
	p.Busy(1)
	if n := p.ToOpen(5); n != 1 {
		t.Fatalf("cap: opens %d, want 1 (MaxConns 3: the primary and one busy)", n)
	}
	p.OpenFailed()
	if n := p.ToOpen(0); n != 1 {
		t.Fatalf("after a failed open: opens %d, want 1", n)
	}
	p.Opened(2, t0)
	p.Idle(1, t0.Add(5*time.Second))
	if got := p.Expired(t0.Add(9 * time.Second)); len(got) != 0 {
		t.Fatalf("expired early: %v", got)
	}
	if got := p.Expired(t0.Add(10 * time.Second)); len(got) != 1 || got[0] != 2 {
		t.Fatalf("expired at 10 s: %v, want [2]", got)
	}
	if idle, busy := p.Counts(); idle != 1 || busy != 0 {
		t.Fatalf("counts %d idle %d busy", idle, busy)
	}
	p.Gone(1)
	if idle, _ := p.Counts(); idle != 0 {
		t.Fatal("Gone kept the connection")
	}
}

func TestPoolOnDemand(t *testing.T) {
	p := NewPool(PoolConfig{OnDemand: true})
	if n := p.ToOpen(0); n != 0 {
		t.Fatalf("on-demand pool opened %d in advance", n)
	}
	if n := p.ToOpen(1); n != 1 {
		t.Fatalf("on-demand pool opened %d when asked for one", n)
	}
}

// TestPoolTouch: a request keeps idle connections from expiring; they expire
// IdleTimeout after the last one.
func TestPoolTouch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := NewPool(PoolConfig{Size: 1, IdleTimeout: 10 * time.Second})
	p.ToOpen(0)
	p.Opened(1, t0)
	p.Touch(t0.Add(9 * time.Second))
	if got := p.Expired(t0.Add(12 * time.Second)); len(got) != 0 {
		t.Fatalf("expired 3 s after a request: %v", got)
	}
	if got := p.Expired(t0.Add(19 * time.Second)); len(got) != 1 {
		t.Fatalf("not expired 10 s after the last request: %v", got)
	}
}
