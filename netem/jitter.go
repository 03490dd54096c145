package netem

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Jitter distributions, as named in JitterConfig.Dist and ParseJitter.
const (
	JitterUniform = "uniform"
	JitterNormal  = "normal"
)

// normalClip bounds a normal draw at this many standard deviations: the clip
// is symmetric, so the mean stays the link's Delay, and the delay stays >= 0
// whenever Delay >= 3 spreads.
const normalClip = 3

// JitterConfig spreads each packet's one-way delay around the link's Delay,
// which stays the mean: uniformly on [Delay-Spread, Delay+Spread] (Linux
// netem's default jitter), or normally with standard deviation Spread,
// clipped at 3 Spreads either side. The zero value is no jitter.
//
// Packets never reorder: a packet is delivered at its own delayed time or,
// if an earlier packet's delivery is later, right after it, as on a link
// whose delay varies (a radio link's scheduling, a variable bottleneck)
// rather than a network that sends packets down different routes. So packets
// spaced further apart than the jitter's range see the configured
// distribution, and a back-to-back burst is held behind its most delayed
// packet, which raises its mean delay (the burst arrives clumped, as on
// cellular and Wi-Fi links).
type JitterConfig struct {
	Dist   string        // JitterUniform (when empty and Spread > 0) or JitterNormal
	Spread time.Duration // uniform: half the range; normal: standard deviation
}

// MaxDeviation is the most a packet's delay departs from the mean.
func (c JitterConfig) MaxDeviation() time.Duration {
	if c.Dist == JitterNormal {
		return normalClip * c.Spread
	}
	return c.Spread
}

// String is the jitter in ParseJitter syntax: "0", "uniform:5ms", "normal:5ms".
func (c JitterConfig) String() string {
	if c.Spread == 0 {
		return "0"
	}
	dist := c.Dist
	if dist == "" {
		dist = JitterUniform
	}
	return dist + ":" + c.Spread.String()
}

// Validate rejects an unknown distribution, a negative spread, and a jitter
// that would move the delay below 0 (and so its mean off delay).
func (c JitterConfig) Validate(delay time.Duration) error {
	switch c.Dist {
	case "", JitterUniform, JitterNormal:
	default:
		return fmt.Errorf("jitter %s: unknown distribution %q (want uniform or normal)", c, c.Dist)
	}
	if c.Spread < 0 {
		return fmt.Errorf("jitter %s: negative spread", c)
	}
	if dev := c.MaxDeviation(); dev > delay {
		return fmt.Errorf("jitter %s: varies the delay by up to %v, more than the link's delay %v (the delay would go negative and the mean shift)", c, dev, delay)
	}
	return nil
}

// ParseJitter parses a delay jitter: "0" (none), "5ms" or "uniform:5ms"
// (uniform, +/- 5 ms), "normal:5ms" (normal, standard deviation 5 ms,
// clipped at 3 of them); durations in time.ParseDuration syntax.
func ParseJitter(s string) (JitterConfig, error) {
	s = strings.TrimSpace(s)
	dist, spread, ok := strings.Cut(s, ":")
	if !ok {
		dist, spread = JitterUniform, s
	}
	if dist != JitterUniform && dist != JitterNormal {
		return JitterConfig{}, fmt.Errorf("jitter %q: unknown distribution %q (want uniform or normal)", s, dist)
	}
	d, err := time.ParseDuration(spread)
	if err != nil {
		return JitterConfig{}, fmt.Errorf("jitter %q: %w", s, err)
	}
	if d < 0 {
		return JitterConfig{}, fmt.Errorf("jitter %q: negative", s)
	}
	if d == 0 {
		return JitterConfig{}, nil
	}
	return JitterConfig{Dist: dist, Spread: d}, nil
}

// jitterModel draws each packet's deviation from the mean delay from a
// seeded PCG of its own, so adding jitter leaves a run's losses as they were.
type jitterModel struct {
	c   JitterConfig
	rng *rand.Rand
}

func newJitterModel(c JitterConfig, seed int64) *jitterModel {
	return &jitterModel{c: c, rng: rand.New(rand.NewPCG(uint64(seed), 0x6a6974746572))}
}

// draw is one packet's deviation in ns, within +/- MaxDeviation.
func (m *jitterModel) draw() int64 {
	s := float64(m.c.Spread)
	switch {
	case s == 0:
		return 0
	case m.c.Dist == JitterNormal:
		return int64(max(-normalClip*s, min(normalClip*s, m.rng.NormFloat64()*s)))
	default:
		return int64((2*m.rng.Float64() - 1) * s)
	}
}
