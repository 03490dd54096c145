package mptools

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
)

// countingNet is a network of one path whose downlink count the test sets.
type countingNet struct {
	experiment.Network
	down atomic.Uint64
}

func (n *countingNet) Paths() []experiment.PathInfo { return []experiment.PathInfo{{Name: "wifi"}} }

func (n *countingNet) LinkBytes(path, dir string) (uint64, error) { return n.down.Load(), nil }

// The meter counts from its start, and its data span leaves out the
// handshake before and the FIN after.
func TestWireMeterSpan(t *testing.T) {
	n := &countingNet{}
	n.down.Store(5000) // an earlier run's
	m := startWire(n)
	step := func(b uint64) time.Duration {
		n.down.Store(5000 + b)
		at := time.Since(m.start)
		time.Sleep(5 * wireTick)
		return at
	}
	step(3000) // handshake
	first := step(100 << 10)
	last := step(400 << 10)
	step(400<<10 + 300) // FIN
	c := m.counts()
	if c["wire_wifi"] != 400<<10+300 {
		t.Fatalf("wire_wifi %v, want %d", c["wire_wifi"], 400<<10+300)
	}
	for _, v := range []struct {
		key  string
		from time.Duration
	}{{"wire_first_s_wifi", first}, {"wire_last_s_wifi", last}} {
		if got := c[v.key]; got < v.from.Seconds() || got > (v.from+4*wireTick).Seconds() {
			t.Errorf("%s %.3f s, want within 4 ticks after %.3f s", v.key, got, v.from.Seconds())
		}
	}
}

// A network that does not count its links gives no meter.
func TestWireMeterNone(t *testing.T) {
	if m := startWire(struct{ experiment.Network }{}); m != nil {
		t.Fatal("meter on a network without counters")
	}
}
