package mptools

import (
	"time"

	"github.com/shunt-net/shunt/experiment"
)

// wireTick is how often the meter reads the links' counters.
const wireTick = 10 * time.Millisecond

// wireSlack is what a link may deliver before its data starts or after it
// ends without counting as data: handshakes, FINs, TLS alerts.
const wireSlack = 16 << 10

// wireMeter follows the bytes each path's downlink delivers during a run,
// so that every tool, not only mph2, can be asked how much each link
// carried and from when to when (the external tools do not say per path).
type wireMeter struct {
	paths []string
	read  func(path string) uint64
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	// Written by the sampler until done is closed.
	base    []uint64
	samples [][]wireSample
}

type wireSample struct {
	at    time.Duration
	bytes uint64 // since the start
}

// startWire starts a meter, or returns nil if the network does not count.
func startWire(n experiment.Network) *wireMeter {
	lc, ok := n.(experiment.LinkCounter)
	if !ok {
		return nil
	}
	m := &wireMeter{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
		read: func(path string) uint64 { b, _ := lc.LinkBytes(path, "down"); return b }}
	for _, p := range n.Paths() {
		m.paths = append(m.paths, p.Name)
		m.base = append(m.base, m.read(p.Name))
	}
	m.samples = make([][]wireSample, len(m.paths))
	go m.run()
	return m
}

func (m *wireMeter) run() {
	defer close(m.done)
	t := time.NewTicker(wireTick)
	defer t.Stop()
	for {
		m.sample()
		select {
		case <-m.stop:
			m.sample()
			return
		case <-t.C:
		}
	}
}

// sample keeps a reading only when a path's count moved, so a 140 s run
// keeps one per tick of traffic at most.
func (m *wireMeter) sample() {
	at := time.Since(m.start)
	for i, p := range m.paths {
		b := m.read(p) - m.base[i]
		if s := m.samples[i]; len(s) == 0 || s[len(s)-1].bytes != b {
			m.samples[i] = append(s, wireSample{at, b})
		}
	}
}

// counts stops the meter and returns per path P: wire_P, the bytes (IP
// packets) its downlink delivered during the run, and wire_first_s_P and
// wire_last_s_P, when it had delivered more than wireSlack and when it
// was within wireSlack of its total, in seconds from the start: the
// span over which the link carried data.
func (m *wireMeter) counts() map[string]float64 {
	close(m.stop)
	<-m.done
	c := map[string]float64{}
	for i, p := range m.paths {
		s := m.samples[i]
		total := s[len(s)-1].bytes
		c["wire_"+p] = float64(total)
		if total <= 2*wireSlack {
			continue
		}
		for _, x := range s {
			if x.bytes > wireSlack {
				c["wire_first_s_"+p] = x.at.Seconds()
				break
			}
		}
		for _, x := range s {
			if x.bytes >= total-wireSlack {
				c["wire_last_s_"+p] = x.at.Seconds()
				break
			}
		}
	}
	return c
}
