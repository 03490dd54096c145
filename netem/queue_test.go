package netem

import (
	"strings"
	"testing"
	"time"
)

// fill enqueues n packets of size bytes into q at now and returns the drops.
func fill(q Queue, n, size int, flow uint64, now int64) []*Packet {
	var drops []*Packet
	for range n {
		p := pkt(size, flow)
		p.Arrival = now
		drops = q.Enqueue(p, now, drops)
	}
	return drops
}

func TestDropTailPacketLimit(t *testing.T) {
	q := NewDropTail(3, 0)
	drops := fill(q, 5, 1500, 1, 0)
	if len(drops) != 2 || q.Len() != 3 || q.Bytes() != 4500 {
		t.Fatalf("dropped %d, holds %d packets / %d B; want 2 dropped, 3 / 4500 held", len(drops), q.Len(), q.Bytes())
	}
}

func TestDropTailByteLimit(t *testing.T) {
	q := NewDropTail(0, 3000)
	fill(q, 1, 1500, 1, 0)
	fill(q, 1, 1000, 1, 0)
	// 500 B still fit, 1500 B do not.
	if d := fill(q, 1, 1500, 1, 0); len(d) != 1 {
		t.Fatalf("a 1500 B packet over a 3000 B limit with 2500 B queued was accepted")
	}
	if d := fill(q, 1, 500, 1, 0); len(d) != 0 {
		t.Fatalf("a 500 B packet that fits exactly was dropped")
	}
	if q.Bytes() != 3000 || q.Len() != 3 {
		t.Fatalf("holds %d packets / %d B, want 3 / 3000", q.Len(), q.Bytes())
	}
}

func TestDropTailIsFIFO(t *testing.T) {
	q := NewDropTail(100, 0)
	var in []*Packet
	for i := range 40 {
		p := pkt(i+1, 1)
		in = append(in, p)
		q.Enqueue(p, 0, nil)
	}
	for i, want := range in {
		got, _ := q.Dequeue(0, nil)
		if got != want {
			t.Fatalf("dequeue %d returned the packet of %d B, want %d B", i, len(got.Data), len(want.Data))
		}
	}
	if p, _ := q.Dequeue(0, nil); p != nil || q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("empty queue returned %v, len %d, bytes %d", p, q.Len(), q.Bytes())
	}
}

func TestFQSharesBetweenFlows(t *testing.T) {
	q := NewFQ(1000, 0, DefaultQuantum)
	// Flow 1 sends 1500 B packets, flow 2 500 B ones; flow 1 arrived first
	// with many more packets.
	fill(q, 100, 1500, 1, 0)
	fill(q, 100, 500, 2, 0)
	sent := map[uint64]int{}
	for range 100 {
		p, _ := q.Dequeue(0, nil)
		sent[p.Flow] += len(p.Data)
	}
	// Equal bytes within one quantum.
	if d := sent[1] - sent[2]; d > DefaultQuantum || d < -DefaultQuantum {
		t.Fatalf("bytes sent per flow %v: want equal shares within one quantum", sent)
	}
}

func TestFQDropsFromLongestFlow(t *testing.T) {
	q := NewFQ(10, 0, DefaultQuantum)
	fill(q, 8, 1000, 1, 0)
	fill(q, 2, 1000, 2, 0)
	drops := fill(q, 1, 1000, 2, 0)
	if len(drops) != 1 || drops[0].Flow != 1 {
		t.Fatalf("drops %v: want one packet of flow 1, the longest", drops)
	}
	if q.Len() != 10 {
		t.Fatalf("holds %d packets, want 10", q.Len())
	}
	// Flow 2's three packets are all there, served in turn with flow 1.
	flows := map[uint64]int{}
	for range 10 {
		p, _ := q.Dequeue(0, nil)
		flows[p.Flow]++
	}
	if flows[1] != 7 || flows[2] != 3 {
		t.Fatalf("dequeued %v, want 7 of flow 1 and 3 of flow 2", flows)
	}
	if p, _ := q.Dequeue(0, nil); p != nil || len(q.flows) != 0 {
		t.Fatalf("drained queue returned %v and holds %d flows", p, len(q.flows))
	}
}

func TestFQByteLimitDropsSeveral(t *testing.T) {
	q := NewFQ(0, 3000, DefaultQuantum)
	fill(q, 6, 500, 1, 0)
	drops := fill(q, 1, 1500, 2, 0)
	if len(drops) != 3 || q.Bytes() != 3000 {
		t.Fatalf("dropped %d, holds %d B; want 3 small packets dropped and 3000 B held", len(drops), q.Bytes())
	}
}

// codelRun offers a packet of 1500 B every gap ns to a 10 Mbit/s link with
// CoDel for dur and returns the link's stats.
func codelRun(t *testing.T, gap, dur int64) Stats {
	l := mustLink(t, LinkConfig{RateBps: 10e6, Queue: QueueConfig{Kind: QueueCoDel}})
	for now := int64(0); now < dur; now += gap {
		l.Enqueue(pkt(1500, 1), now)
		l.Dequeue(now, nil)
	}
	drain(l)
	return l.Stats()
}

func TestCoDelDropsUnderStandingQueue(t *testing.T) {
	// 12 Mbit/s offered to 10 Mbit/s: the queue grows without bound.
	s := codelRun(t, 1_000_000, int64(3*time.Second))
	if s.AQM == 0 {
		t.Fatalf("stats %+v: CoDel never dropped under a standing queue", s)
	}
	if s.Overflow != 0 {
		t.Fatalf("stats %+v: the queue overflowed; CoDel should have kept it short", s)
	}
}

func TestCoDelLetsBurstThrough(t *testing.T) {
	// 70 packets at once drain in 84 ms: above target for less than interval.
	l := mustLink(t, LinkConfig{RateBps: 10e6, Queue: QueueConfig{Kind: QueueCoDel}})
	for range 70 {
		l.Enqueue(pkt(1500, 1), 0)
	}
	drain(l)
	if s := l.Stats(); s.AQM != 0 || s.Departures != 70 {
		t.Fatalf("stats %+v: a short burst must pass without CoDel drops", s)
	}
	// The same burst, 150 packets (180 ms), stays above target past interval.
	l = mustLink(t, LinkConfig{RateBps: 10e6, Queue: QueueConfig{Kind: QueueCoDel}})
	for range 150 {
		l.Enqueue(pkt(1500, 1), 0)
	}
	drain(l)
	if s := l.Stats(); s.AQM == 0 {
		t.Fatalf("stats %+v: a 180 ms standing queue must see CoDel drops", s)
	}
}

func TestCoDelControlLaw(t *testing.T) {
	// A queue alone: a packet every 1 ms, dequeued every 2 ms, with target
	// 5 ms and interval 100 ms. Drops start once the sojourn time has stayed
	// above target for 100 ms, and then come ever closer.
	q := NewCoDel(0, 0, 5*time.Millisecond, 100*time.Millisecond)
	var dropTimes []int64
	for now := int64(0); now < 600*ms; now += ms {
		fill(q, 1, 1500, 1, now)
		if now%(2*ms) == 0 {
			var drops []*Packet
			_, drops = q.Dequeue(now, nil)
			for range drops {
				dropTimes = append(dropTimes, now)
			}
		}
	}
	if len(dropTimes) < 3 {
		t.Fatalf("drops at %v: want several", dropTimes)
	}
	// Sojourn passes 5 ms at about 10 ms; the first drop is 100 ms later.
	if dropTimes[0] < 100*ms || dropTimes[0] > 120*ms {
		t.Errorf("first drop at %v, want about 110 ms", time.Duration(dropTimes[0]))
	}
	first, second := dropTimes[1]-dropTimes[0], dropTimes[2]-dropTimes[1]
	if first < 98*ms || first > 102*ms || second < 69*ms || second > 73*ms {
		t.Errorf("gaps between drops %v, %v: want interval/sqrt(1), interval/sqrt(2)", time.Duration(first), time.Duration(second))
	}
}

func TestQueueConfigDefaultsAndString(t *testing.T) {
	for _, c := range []struct {
		cfg  QueueConfig
		want string
	}{
		{QueueConfig{}, "droptail:packets=1000"},
		{QueueConfig{Kind: QueueDropTail, Bytes: 150000}, "droptail:bytes=150000"},
		{QueueConfig{Kind: QueueFQ}, "fq:packets=1000,quantum=1500"},
		{QueueConfig{Kind: QueueCoDel, Target: 10 * time.Millisecond}, "codel:packets=1000,target=10ms,interval=100ms"},
	} {
		if got := c.cfg.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.cfg, got, c.want)
		}
		q, err := c.cfg.New()
		if err != nil {
			t.Fatal(err)
		}
		if q.String() != c.want {
			t.Errorf("%+v.New().String() = %q, want %q", c.cfg, q.String(), c.want)
		}
	}
	if _, err := (QueueConfig{Kind: QueueDropTail, Quantum: 100}).New(); err == nil || !strings.Contains(err.Error(), "quantum") {
		t.Errorf("quantum on droptail: error %v, want one naming quantum", err)
	}
}
