package netem

import (
	"math"
	"testing"
)

func TestBernoulliWithinBinomialBounds(t *testing.T) {
	const n, p = 100000, 0.015
	m := newLossModel(Bernoulli(p), 42)
	lost := 0
	for range n {
		if m.lose() {
			lost++
		}
	}
	// 4 standard deviations: a correct model fails this about once in 16000 seeds.
	sd := math.Sqrt(n * p * (1 - p))
	if math.Abs(float64(lost)-n*p) > 4*sd {
		t.Fatalf("lost %d of %d at p=%v, want %v ± %.0f", lost, n, p, n*p, 4*sd)
	}
}

func TestLossIsSeeded(t *testing.T) {
	run := func(seed int64) []bool {
		m := newLossModel(GilbertElliott(0.05, 0.3, 0.99, 0.2), seed)
		out := make([]bool, 1000)
		for i := range out {
			out[i] = m.lose()
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	same := func(x, y []bool) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("the same seed gave different losses")
	}
	if same(a, c) {
		t.Error("different seeds gave the same losses")
	}
}

func TestGilbertElliottBursts(t *testing.T) {
	const n, p, r = 400000, 0.01, 0.25
	m := newLossModel(GilbertElliott(p, r, 1, 0), 3)
	lost, bursts, run := 0, 0, 0
	for range n {
		if m.lose() {
			lost++
			run++
			continue
		}
		if run > 0 {
			bursts++
			run = 0
		}
	}
	meanBurst := float64(lost) / float64(bursts)
	if math.Abs(meanBurst-1/r)/(1/r) > 0.05 {
		t.Errorf("mean burst %.2f packets, want 1/r = %.2f within 5%%", meanBurst, 1/r)
	}
	want := GilbertElliott(p, r, 1, 0).Mean()
	if got := float64(lost) / n; math.Abs(got-want)/want > 0.1 {
		t.Errorf("loss rate %.4f, want %.4f within 10%%", got, want)
	}
}

func TestGilbertElliottFourParameters(t *testing.T) {
	// Loss in both states: 1-k = 2% in good, 1-h = 60% in bad.
	c := GilbertElliott(0.02, 0.2, 0.98, 0.4)
	const n = 300000
	m := newLossModel(c, 5)
	lost := 0
	for range n {
		if m.lose() {
			lost++
		}
	}
	if got := float64(lost) / n; math.Abs(got-c.Mean())/c.Mean() > 0.1 {
		t.Errorf("loss rate %.4f, want the stationary %.4f within 10%%", got, c.Mean())
	}
}

func TestLinkLossCounted(t *testing.T) {
	l := mustLink(t, LinkConfig{Loss: Bernoulli(0.5)})
	for i := range 1000 {
		l.Enqueue(pkt(100, 1), int64(i))
	}
	s := l.Stats()
	if s.Lost == 0 || s.Lost+s.Departures != 1000 {
		t.Fatalf("stats %+v: want losses, and losses + departures = 1000", s)
	}
}
