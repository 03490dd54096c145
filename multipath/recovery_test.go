package multipath

import (
	"fmt"
	"testing"
	"time"
)

// recoveries are TCP loss recoveries every period from first on, each as
// long as a retransmission takes behind a full queue: one round trip plus
// the queue's drain time.
func recoveries(first, period, end time.Duration, rtt time.Duration, queue int64, bps float64) []hold {
	var hs []hold
	for t := first; t < end; t += period {
		hs = append(hs, hold{t, rtt + time.Duration(float64(queue)/bps*1e9)})
	}
	return hs
}

// TestSimLossRecoveryKeepsLinksBusy: while TCP recovers a lost segment, the
// bytes behind it reach the client only once the retransmission is in, so
// the client tops up no credit; the server must have enough to send on
// through the recovery, or its link idles for about a round trip each time
// (the testbed's 256 MB downloads on (10,5): 34 idle stretches of one lte
// RTT against aria2's 10, 27 Nov). Behind 100 KB queues with a recovery
// every 2 s on each path, the download takes no longer than without them,
// give or take 0.5 %: Aggregate on Figure 8's (10,5) (1.5 % without
// recoveryLead, 0.4 % with it), Handover on (5,10), on wifi alone, and
// Interactive on (5,10), on lte after the probe (1.1 % and 1.2 % while
// the lead was Aggregate's only; 0.06 % and 0 with it).
func TestSimLossRecoveryKeepsLinksBusy(t *testing.T) {
	const size = 32 << 20
	const queue = 100 << 10
	for _, c := range []struct {
		mode      Mode
		wifi, lte float64
	}{{Aggregate, 10, 5}, {Handover, 5, 10}, {Interactive, 5, 10}} {
		name := fmt.Sprintf("%v/(%v,%v)", c.mode, c.wifi, c.lte)
		calm := fig8Paths(c.wifi, c.lte, queue)
		base, err := runSim(simConfig{Size: size, Paths: calm, Sched: Config{Size: -1, Mode: c.mode}}, false)
		if err != nil {
			t.Fatal(err)
		}
		lossy := fig8Paths(c.wifi, c.lte, queue)
		for i := range lossy {
			p := &lossy[i]
			p.Holds = recoveries(time.Second+time.Duration(i)*700*time.Millisecond, 2*time.Second, base.Done, p.RTT, queue, p.Rate[0].Bps)
		}
		r, err := runSim(simConfig{Size: size, Paths: lossy, Sched: Config{Size: -1, Mode: c.mode}}, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: without recoveries %v, with %v (%d and %d of them), last bytes %v, tail bytes %v",
			name, base.Done.Round(time.Millisecond), r.Done.Round(time.Millisecond), len(lossy[0].Holds), len(lossy[1].Holds), r.Last, r.Wasted)
		if over := float64(r.Done)/float64(base.Done) - 1; over > 0.005 {
			t.Errorf("%s: recoveries cost %.1f%%: %v against %v, want <= 0.5%%", name, 100*over, r.Done, base.Done)
		}
	}
}
