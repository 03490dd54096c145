package mptools

import (
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
)

// The data span leaves out the handshake before and the FIN after, and
// wire_P counts every packet.
func TestWireCountsSpan(t *testing.T) {
	t0 := time.Now()
	var ds []experiment.Delivery
	add := func(sec float64, n, size int) {
		for range n {
			ds = append(ds, experiment.Delivery{At: t0.Add(time.Duration(sec * float64(time.Second))), Bytes: size})
		}
	}
	add(0.1, 3, 1000)  // handshake: 3,000 bytes, under the slack
	add(0.2, 20, 1500) // 33,000 in all: past the slack at 0.2 s
	add(1.0, 200, 1500)
	add(2.0, 20, 1500) // the last 16 KB of data from here
	add(2.5, 5, 60)    // FIN and ACKs
	c := wireCounts(map[string][]experiment.Delivery{"wifi": ds, "lte": nil}, t0)
	total := 3000 + 240*1500 + 300
	for k, want := range map[string]float64{"wire_wifi": float64(total), "wire_first_s_wifi": 0.2, "wire_last_s_wifi": 2.0, "wire_lte": 0} {
		if got, ok := c[k]; !ok || !near(got, want) {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, want)
		}
	}
	if _, ok := c["wire_first_s_lte"]; ok {
		t.Errorf("a path that carried nothing has a data span: %v", c)
	}
}

// A network that cannot watch its links gives no watch.
func TestWatchLinksNone(t *testing.T) {
	if w, err := watchLinks(struct{ experiment.Network }{}); w != nil || err != nil {
		t.Fatalf("watch %v, %v on a network that cannot watch", w, err)
	}
}
