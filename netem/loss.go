package netem

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// LossKind selects a loss model.
type LossKind int

const (
	LossNone LossKind = iota
	// LossBernoulli loses each packet independently with probability Rate.
	LossBernoulli
	// LossGilbertElliott is a two-state Markov chain, stepped once per packet:
	// from Good it moves to Bad with probability P, from Bad back to Good with
	// probability R. A packet is lost with probability 1-K in Good and 1-H in
	// Bad. The simple Gilbert model is K=1, H=0: every packet sent in Bad is
	// lost, so loss bursts last 1/R packets on average.
	LossGilbertElliott
)

// LossConfig is the random loss model applied to packets entering the link.
// The zero value loses nothing. Use Bernoulli or GilbertElliott to build one.
type LossConfig struct {
	Kind       LossKind
	Rate       float64 // LossBernoulli
	P, R, K, H float64 // LossGilbertElliott
}

// Bernoulli is independent loss with probability rate.
func Bernoulli(rate float64) LossConfig {
	return LossConfig{Kind: LossBernoulli, Rate: rate}
}

// GilbertElliott is bursty loss; see LossGilbertElliott. GilbertElliott(p, r,
// 1, 0) is the simple two-state Gilbert model.
func GilbertElliott(p, r, k, h float64) LossConfig {
	return LossConfig{Kind: LossGilbertElliott, P: p, R: r, K: k, H: h}
}

func (c LossConfig) validate() error {
	prob := func(name string, v float64) error {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("loss %s: %s=%v is not a probability in [0, 1]", c, name, v)
		}
		return nil
	}
	switch c.Kind {
	case LossNone:
		return nil
	case LossBernoulli:
		return prob("rate", c.Rate)
	case LossGilbertElliott:
		for _, f := range []struct {
			name string
			v    float64
		}{{"p", c.P}, {"r", c.R}, {"k", c.K}, {"h", c.H}} {
			if err := prob(f.name, f.v); err != nil {
				return err
			}
		}
		if c.P > 0 && c.R == 0 {
			return fmt.Errorf("loss %s: r=0 would stay in the bad state forever", c)
		}
		return nil
	}
	return fmt.Errorf("loss: unknown kind %d", c.Kind)
}

// Mean is the long-run fraction of packets lost.
func (c LossConfig) Mean() float64 {
	switch c.Kind {
	case LossBernoulli:
		return c.Rate
	case LossGilbertElliott:
		if c.P == 0 {
			return 1 - c.K
		}
		bad := c.P / (c.P + c.R)
		return (1-bad)*(1-c.K) + bad*(1-c.H)
	}
	return 0
}

// String is the model in ParseLoss syntax.
func (c LossConfig) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch c.Kind {
	case LossBernoulli:
		return f(c.Rate)
	case LossGilbertElliott:
		return "ge:p=" + f(c.P) + ",r=" + f(c.R) + ",k=" + f(c.K) + ",h=" + f(c.H)
	}
	return "0"
}

// lossModel draws losses from a seeded PCG so that runs repeat.
type lossModel struct {
	c   LossConfig
	rng *rand.Rand
	bad bool
}

func newLossModel(c LossConfig, seed int64) *lossModel {
	// The second PCG word is fixed: the seed alone identifies a run.
	return &lossModel{c: c, rng: rand.New(rand.NewPCG(uint64(seed), 0x6e6574656d))}
}

// lose decides the fate of one packet and steps the chain.
func (m *lossModel) lose() bool {
	switch m.c.Kind {
	case LossBernoulli:
		return m.rng.Float64() < m.c.Rate
	case LossGilbertElliott:
		var lost bool
		if m.bad {
			lost = m.rng.Float64() >= m.c.H
			m.bad = m.rng.Float64() >= m.c.R
		} else {
			lost = m.rng.Float64() >= m.c.K
			m.bad = m.rng.Float64() < m.c.P
		}
		return lost
	}
	return false
}
