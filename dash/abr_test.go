package dash

import (
	"testing"
	"time"
)

var ladder = []int64{253000, 401000, 634000, 1004000, 1589000, 2516000, 3983000, 6305000, 10000000}

func TestExo(t *testing.T) {
	e := NewExo()
	st := State{Current: -1, Bitrates: ladder, SegDur: 6 * time.Second}
	// No estimate yet: 0.7 x 1 Mbit/s, the highest rung below is 634 kbit/s.
	if got := e.Choose(st); got != 2 {
		t.Fatalf("first choice %d, want 2", got)
	}
	e.Observe(100<<10, 100*time.Millisecond) // too little for an estimate
	if e.Estimate() != 1e6 {
		t.Fatalf("estimate %v before 512 KB or 2 s", e.Estimate())
	}
	for range 5 {
		e.Observe(1e6, time.Second) // 8 Mbit/s
	}
	if est := e.Estimate(); est != 8e6 {
		t.Fatalf("estimate %v, want the median 8e6", est)
	}
	// 0.7 x 8 = 5.6 Mbit/s: ideal is rung 6 (3983); from rung 2 with 5 s
	// buffered it stays, with 10 s it goes up.
	st.Current = 2
	st.Buffer = 5 * time.Second
	if got := e.Choose(st); got != 2 {
		t.Fatalf("switched up to %d with 5 s buffered", got)
	}
	st.Buffer = 10 * time.Second
	if got := e.Choose(st); got != 6 {
		t.Fatalf("chose %d with 10 s buffered, want 6", got)
	}
	// From the top rung, a drop is ignored with 25 s buffered, taken below.
	st.Current = 8
	st.Buffer = 25 * time.Second
	if got := e.Choose(st); got != 8 {
		t.Fatalf("switched down to %d with 25 s buffered", got)
	}
	st.Buffer = 24 * time.Second
	if got := e.Choose(st); got != 6 {
		t.Fatalf("chose %d with 24 s buffered, want 6", got)
	}
}

// The sliding median weighs transfers by sqrt(bytes) and forgets the
// oldest beyond a total weight of 2000.
func TestSlidingPercentile(t *testing.T) {
	var p slidingPercentile
	p.add(1000, 1) // old, slow
	p.add(1000, 5)
	if got := p.percentile(0.5); got != 1 {
		t.Fatalf("median %v, want 1 (half the weight at 1)", got)
	}
	p.add(500, 9) // pushes 500 of the first sample's weight out
	if p.total != 2000 || p.samples[0].weight != 500 {
		t.Fatalf("total %v, oldest weight %v", p.total, p.samples[0].weight)
	}
	if got := p.percentile(0.5); got != 5 {
		t.Fatalf("median %v, want 5", got)
	}
}

func TestBOLA(t *testing.T) {
	b := NewBOLA()
	st := State{Current: -1, Bitrates: ladder, SegDur: 6 * time.Second}
	if got := b.Choose(st); got != 0 {
		t.Fatalf("empty buffer: %d, want the lowest rung", got)
	}
	prev := 0
	for buf := time.Duration(0); buf <= 30*time.Second; buf += time.Second {
		st.Buffer = buf
		got := b.Choose(st)
		if got < prev {
			t.Fatalf("buffer %v: rung %d below %d at a smaller buffer", buf, got, prev)
		}
		prev = got
	}
	st.Buffer = 24 * time.Second
	if got := b.Choose(st); got != len(ladder)-1 {
		t.Fatalf("buffer 24 s (near the 25 s target): rung %d, want the top", got)
	}
}

// DefaultBandwidthMeter counts whole milliseconds: a transfer under one adds
// no sample, and its bytes go into the next sample (and into the total
// twice, as ExoPlayer counts them). The estimate is published only when a
// sample is added.
func TestExoMeterCarriesShortTransfers(t *testing.T) {
	e := NewExo()
	e.Observe(600<<10, 900*time.Microsecond) // past 512 KB, but under 1 ms: no sample
	if len(e.meter.samples) != 0 || e.Estimate() != 1e6 || e.transferred != 600<<10 {
		t.Fatalf("samples %v, estimate %v, total %d", e.meter.samples, e.Estimate(), e.transferred)
	}
	e.Observe(400<<10, 1999*time.Microsecond) // 1 ms of 1000 KB
	want := wsample{weight: 1011, value: 1000 << 10 * 8000}
	if len(e.meter.samples) != 1 || e.meter.samples[0] != want || e.transferred != 1600<<10 || e.elapsed != 1 {
		t.Fatalf("samples %v (want %v), total %d, elapsed %d ms", e.meter.samples, want, e.transferred, e.elapsed)
	}
	if e.Estimate() != want.value {
		t.Fatalf("estimate %v, want %v", e.Estimate(), want.value)
	}
}
