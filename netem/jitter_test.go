package netem

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseJitter(t *testing.T) {
	for in, want := range map[string]JitterConfig{
		"0":           {},
		"0ms":         {},
		"5ms":         {JitterUniform, 5 * time.Millisecond},
		"uniform:5ms": {JitterUniform, 5 * time.Millisecond},
		" normal:2ms": {JitterNormal, 2 * time.Millisecond},
	} {
		got, err := ParseJitter(in)
		if err != nil || got != want {
			t.Errorf("ParseJitter(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"-1ms":        "negative",
		"pareto:1ms":  "unknown distribution",
		"normal:fast": "invalid duration",
		"":            "invalid duration",
	} {
		if _, err := ParseJitter(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseJitter(%q): error %v, want %q", in, err, msg)
		}
	}
}

func TestJitterBoundedByDelay(t *testing.T) {
	for in, msg := range map[string]string{
		"delay=5ms jitter=6ms":         "more than the link's delay",
		"delay=20ms jitter=normal:7ms": "more than the link's delay",
		"jitter=1ms":                   "more than the link's delay",
	} {
		if _, err := parseLinkSpec(in, fakeLoad); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("parseLinkSpec(%q): error %v, want %q", in, err, msg)
		}
	}
	if _, err := NewLink(LinkConfig{Delay: time.Millisecond, Jitter: JitterConfig{JitterUniform, 2 * time.Millisecond}}, 1, nil); err == nil {
		t.Error("NewLink accepted jitter larger than the delay")
	}
	if _, err := parseLinkSpec("delay=21ms jitter=normal:7ms", fakeLoad); err != nil {
		t.Error(err)
	}
}

// oneWay sends n packets spaced gap apart over l (a fake clock) and returns
// each one's delay from arrival to delivery, in arrival order, checking that
// none overtakes another.
func oneWay(t *testing.T, l *Link, n int, gap int64) []float64 {
	t.Helper()
	ps := make([]*Packet, n)
	var order []*Packet
	at := map[*Packet]int64{}
	var out []*Packet
	deliver := func(now int64) {
		out = l.Dequeue(now, out[:0])
		for _, p := range out {
			order = append(order, p)
			at[p] = now
		}
	}
	// Events in time order, as the testbed's loop runs them.
	for i := range ps {
		arrive := int64(i) * gap
		for ev := l.NextEvent(); ev >= 0 && ev < arrive; ev = l.NextEvent() {
			deliver(ev)
		}
		ps[i] = pkt(100, 1)
		l.Enqueue(ps[i], arrive)
	}
	for ev := l.NextEvent(); ev >= 0; ev = l.NextEvent() {
		deliver(ev)
	}
	if !slices.Equal(order, ps) {
		t.Fatal("packets delivered out of order")
	}
	d := make([]float64, n)
	for i, p := range ps {
		d[i] = float64(at[p]-p.Arrival) / float64(ms)
	}
	return d
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

// Packets further apart than the jitter's range see the configured
// distribution: its mean, spread and bounds.
func TestJitterSparseDistribution(t *testing.T) {
	for _, tc := range []struct {
		j              JitterConfig
		sd, lo, hi     float64 // ms
		p25, p75, tolQ float64
	}{
		// Uniform on [40, 60]: sd 20/sqrt(12), quartiles 45 and 55.
		{JitterConfig{JitterUniform, 10 * time.Millisecond}, 20 / math.Sqrt(12), 40, 60, 45, 55, 0.3},
		// Normal, sd 5 clipped at +/- 15: quartiles 50 -/+ 0.674 sd.
		{JitterConfig{JitterNormal, 5 * time.Millisecond}, 5, 35, 65, 50 - 0.674*5, 50 + 0.674*5, 0.3},
	} {
		l := mustLink(t, LinkConfig{Delay: 50 * time.Millisecond, Jitter: tc.j})
		d := oneWay(t, l, 20000, 100*ms)
		mean, sd := meanSD(d)
		if math.Abs(mean-50) > 0.15 || math.Abs(sd-tc.sd) > 0.15 {
			t.Errorf("%s: mean %.3f sd %.3f ms, want 50 and %.3f", tc.j, mean, sd, tc.sd)
		}
		slices.Sort(d)
		if d[0] < tc.lo || d[len(d)-1] > tc.hi {
			t.Errorf("%s: delays %.3f..%.3f ms, want within [%v, %v]", tc.j, d[0], d[len(d)-1], tc.lo, tc.hi)
		}
		if q1, q3 := d[len(d)/4], d[len(d)*3/4]; math.Abs(q1-tc.p25) > tc.tolQ || math.Abs(q3-tc.p75) > tc.tolQ {
			t.Errorf("%s: quartiles %.3f, %.3f ms, want %.3f, %.3f", tc.j, q1, q3, tc.p25, tc.p75)
		}
	}
}

// A back-to-back burst keeps its order: each packet waits for the most
// delayed one ahead of it, so delays stay within the configured bounds but
// their mean rises above the configured one.
func TestJitterBurstKeepsOrder(t *testing.T) {
	l := mustLink(t, LinkConfig{Delay: 50 * time.Millisecond, Jitter: JitterConfig{JitterUniform, 10 * time.Millisecond}})
	d := oneWay(t, l, 1000, 100_000) // 0.1 ms apart, well inside the 20 ms range
	mean, _ := meanSD(d)
	if mean < 55 || slices.Min(d) < 40 || slices.Max(d) > 60 {
		t.Fatalf("burst: mean %.3f ms, range %.3f..%.3f; want a mean above 55 within [40, 60]", mean, slices.Min(d), slices.Max(d))
	}
}

// Jitter has its own random stream: the same seed loses the same packets
// with and without it, and the same seed gives the same delays.
func TestJitterSeeded(t *testing.T) {
	j := JitterConfig{JitterNormal, 3 * time.Millisecond}
	losses := func(cfg LinkConfig) []bool {
		l, err := NewLink(cfg, 7, nil)
		if err != nil {
			t.Fatal(err)
		}
		var lost []bool
		for i := range 500 {
			before := l.Stats().Lost
			l.Enqueue(pkt(100, 1), int64(i)*ms)
			lost = append(lost, l.Stats().Lost > before)
		}
		return lost
	}
	base := LinkConfig{Delay: 10 * time.Millisecond, Loss: Bernoulli(0.1)}
	withJitter := base
	withJitter.Jitter = j
	if !slices.Equal(losses(base), losses(withJitter)) {
		t.Fatal("adding jitter changed which packets were lost")
	}
	a := oneWay(t, mustLink(t, LinkConfig{Delay: 10 * time.Millisecond, Jitter: j}), 200, 50*ms)
	b := oneWay(t, mustLink(t, LinkConfig{Delay: 10 * time.Millisecond, Jitter: j}), 200, 50*ms)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different delays")
	}
}

func FuzzParseJitter(f *testing.F) {
	for _, s := range []string{"5ms", "uniform:1.5ms", "normal:2ms", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJitter(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "jitter ") {
				t.Fatalf("error %q does not say jitter", err)
			}
			return
		}
		if back, err := ParseJitter(j.String()); err != nil || back != j {
			t.Fatalf("%q -> %q -> %+v, %v", s, j, back, err)
		}
	})
}
