package multipath

import (
	"fmt"
	"testing"
	"time"

	"github.com/shunt-net/shunt/estimate"
)

// randomCase builds a download over random paths from seed: changing
// bandwidths, random delays and buffers, paths failing (never all), servers
// refusing ranges, wrong priors, random cuts and scheduler settings.
func randomCase(seed uint64) simConfig {
	rng := newSimRand(seed)
	n := 1 + rng.intn(3)
	survivor := rng.intn(n)
	var paths []simPath
	for i := 0; i < n; i++ {
		p := simPath{
			RTT:     time.Duration(5+rng.intn(200)) * time.Millisecond,
			SendBuf: int64(8+rng.intn(512)) << 10,
		}
		for at := time.Duration(0); at < 20*time.Second; at += time.Duration(100+rng.intn(900)) * time.Millisecond {
			p.Rate = append(p.Rate, rateStep{At: at, Bps: mbit(0.5 + 19.5*rng.float())})
		}
		if i != survivor && rng.intn(3) == 0 {
			p.DownAt = time.Duration(1+rng.intn(3000)) * time.Millisecond
		}
		p.NoRanges = rng.intn(7) == 0
		paths = append(paths, p)
	}
	sizes := []int64{0, 1, 100, 16 << 10, 100 << 10, 1 << 20, 3 << 20}
	size := sizes[rng.intn(len(sizes))]
	if rng.intn(2) == 0 {
		size = int64(rng.intn(3 << 20))
	}
	cfg := Config{
		Size:              -1,
		EndAdjust:         EndAdjust(rng.intn(2)),
		NoPipelining:      rng.intn(3) == 0,
		MaxStreamsPerPath: 1 + rng.intn(3),
		Delta:             time.Duration(10+rng.intn(100)) * time.Millisecond,
	}
	if rng.intn(2) == 0 {
		cfg.Size = size
	}
	if rng.intn(3) == 0 {
		for _, p := range paths {
			wrong := 0.3 + 3*rng.float()
			cfg.Prior = append(cfg.Prior, estimate.Path{Bandwidth: p.Rate[0].Bps * wrong, RTT: time.Duration(float64(p.RTT) * wrong)})
		}
	}
	c := simConfig{Size: size, Paths: paths, Sched: cfg}
	if rng.intn(5) == 0 && size > 0 {
		c.Cut = int64(rng.intn(int(size)))
	}
	// Modes, and budgets on paths other than the survivor (a budgeted path
	// whose server ignores ranges is refused by mph2, not scheduled).
	c.Sched.Mode = Mode(rng.intn(3))
	c.Sched.HandoverAfter = time.Duration(50+rng.intn(1000)) * time.Millisecond
	if rng.intn(3) == 0 {
		c.Sched.Budget = make([]int64, n)
		for i, p := range paths {
			if i != survivor && !p.NoRanges {
				c.Sched.Budget[i] = 1 + int64(rng.intn(int(size)+1))
			}
		}
	}
	c.Sched.InOrder = rng.intn(2) == 0 // drawn after the rest: earlier seeds' cases stay as they were
	if c.Sched.Budget != nil && rng.intn(2) == 0 {
		// Part of each budget, or all of it, spent by earlier downloads.
		c.Sched.Spent = make([]int64, n)
		for i, b := range c.Sched.Budget {
			c.Sched.Spent[i] = int64(rng.intn(int(b) + 1))
		}
	}
	return c
}

func describe(c simConfig) string {
	s := fmt.Sprintf("size %d cut %d sched %+v mode %v paths:", c.Size, c.Cut, c.Sched, c.Sched.Mode)
	for _, p := range c.Paths {
		s += fmt.Sprintf(" {rtt %v buf %d down %v noranges %v first %.1f Mbit/s}", p.RTT, p.SendBuf, p.DownAt, p.NoRanges, p.Rate[0].Bps*8/1e6)
	}
	return s
}

// TestSimProperties runs random downloads checking the byte map after every
// event, every Deliver for bytes delivered before, and that each download
// completes with every stream closed on the servers.
func TestSimProperties(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		c := randomCase(seed)
		if _, err := runSim(c, true); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, describe(c))
		}
	}
}

func FuzzSim(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1000} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		c := randomCase(seed)
		if _, err := runSim(c, true); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, describe(c))
		}
	})
}
