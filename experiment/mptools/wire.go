package mptools

import (
	"time"

	"github.com/shunt-net/shunt/experiment"
)

// wireSlack is what a link may deliver before its data starts or after it
// ends without counting as data: handshakes, FINs, TLS alerts.
const wireSlack = 16 << 10

// dataPacket is the least IP packet counted as data delivered on a path:
// full segments of a body, not ACKs, PINGs, window updates or headers.
const dataPacket = 1000

// watchLinks records what each path's downlink delivers during a run, so
// that every tool, not only mph2, can be asked how much each link carried,
// from when to when, and how the other paths carried on after an outage
// (the external tools do not say per path). It returns each path's stop,
// or nil if the network cannot watch its links.
func watchLinks(n experiment.Network) (map[string]func() []experiment.Delivery, error) {
	dw, ok := n.(experiment.DeliveryWatcher)
	if !ok {
		return nil, nil
	}
	stops := map[string]func() []experiment.Delivery{}
	for _, p := range n.Paths() {
		stop, err := dw.WatchDeliveries(p.Name, "down")
		if err != nil {
			for _, st := range stops {
				st()
			}
			return nil, err
		}
		stops[p.Name] = stop
	}
	return stops, nil
}

// wireCounts is, per path P, wire_P, the bytes (IP packets) its downlink
// delivered, and wire_first_s_P and wire_last_s_P, when it had delivered
// more than wireSlack and when it was within wireSlack of its total, in
// seconds from start: the span over which the link carried data.
func wireCounts(delivered map[string][]experiment.Delivery, start time.Time) map[string]float64 {
	c := map[string]float64{}
	for p, ds := range delivered {
		total := 0
		for _, d := range ds {
			total += d.Bytes
		}
		c["wire_"+p] = float64(total)
		if total <= 2*wireSlack {
			continue
		}
		sum, first := 0, false
		for _, d := range ds {
			sum += d.Bytes
			if !first && sum > wireSlack {
				c["wire_first_s_"+p], first = d.At.Sub(start).Seconds(), true
			}
			if sum >= total-wireSlack {
				c["wire_last_s_"+p] = d.At.Sub(start).Seconds()
				break
			}
		}
	}
	return c
}
