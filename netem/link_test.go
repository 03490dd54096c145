package netem

import (
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func pkt(n int, flow uint64) *Packet { return &Packet{Data: make([]byte, n), Flow: flow} }

func mustLink(t *testing.T, cfg LinkConfig) *Link {
	t.Helper()
	l, err := NewLink(cfg, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// drain runs the link event by event, as the testbed does, and returns each
// packet's delivery time.
func drain(l *Link) map[*Packet]int64 {
	got := make(map[*Packet]int64)
	var out []*Packet
	for ev := l.NextEvent(); ev >= 0; ev = l.NextEvent() {
		out = l.Dequeue(ev, out[:0])
		for _, p := range out {
			got[p] = ev
		}
	}
	return got
}

func TestConstantRateSpacing(t *testing.T) {
	l := mustLink(t, LinkConfig{RateBps: 10e6})
	const t0 = 1_000_000_000
	ps := make([]*Packet, 10)
	for i := range ps {
		ps[i] = pkt(1500, 1)
		l.Enqueue(ps[i], t0)
	}
	if ev := l.NextEvent(); ev != t0+1_200_000 {
		t.Fatalf("NextEvent = %d, want %d", ev, t0+1_200_000)
	}
	// Just before the first departure nothing is delivered.
	if out := l.Dequeue(t0+1_199_999, nil); len(out) != 0 {
		t.Fatalf("delivered %d packets before the first finished", len(out))
	}
	got := drain(l)
	for i, p := range ps {
		if want := int64(t0 + (i+1)*1_200_000); got[p] != want {
			t.Errorf("packet %d delivered at %d, want %d", i, got[p], want)
		}
	}
}

func TestConstantRateNoDrift(t *testing.T) {
	// 7 Mbit/s: 1500 B take 1714285.71... ns; the remainder must carry.
	l := mustLink(t, LinkConfig{RateBps: 7e6, Queue: QueueConfig{Packets: 10000}})
	const n = 7000
	var last *Packet
	for range n {
		last = pkt(1500, 1)
		l.Enqueue(last, 0)
	}
	got := drain(l)
	want := int64(n) * 1500 * bitNs / 7e6
	if got[last] != want {
		t.Fatalf("last of %d packets delivered at %d ns, want %d", n, got[last], want)
	}
}

func TestDelayAndRate(t *testing.T) {
	l := mustLink(t, LinkConfig{RateBps: 10e6, Delay: 25 * time.Millisecond})
	a, b := pkt(1500, 1), pkt(500, 1)
	l.Enqueue(a, 0)
	l.Enqueue(b, 0)
	if ev := l.NextEvent(); ev != 1_200_000 {
		t.Fatalf("NextEvent = %d, want the end of a's transmission 1200000", ev)
	}
	got := drain(l)
	if got[a] != 26_200_000 || got[b] != 26_600_000 {
		t.Fatalf("delivered a at %d, b at %d; want 26200000 and 26600000", got[a], got[b])
	}
	if l.NextEvent() != -1 {
		t.Fatalf("NextEvent = %d on an idle link, want -1", l.NextEvent())
	}
}

func TestIdleLinkStartsAtArrival(t *testing.T) {
	l := mustLink(t, LinkConfig{RateBps: 10e6, Delay: time.Millisecond})
	a := pkt(1500, 1)
	l.Enqueue(a, 0)
	drain(l)
	// The link idled from 1.2 ms to 50 ms: the next packet is not served early.
	b := pkt(1500, 1)
	l.Enqueue(b, 50*ms)
	got := drain(l)
	if want := 50*ms + 1_200_000 + ms; got[b] != want {
		t.Fatalf("b delivered at %d, want %d", got[b], want)
	}
}

func TestUnlimitedDelayOnly(t *testing.T) {
	l := mustLink(t, LinkConfig{Delay: 25 * time.Millisecond})
	for i := range 3 {
		l.Enqueue(pkt(1500, 1), int64(i)*ms)
	}
	if ev := l.NextEvent(); ev != 25*ms {
		t.Fatalf("NextEvent = %d, want %d", ev, 25*ms)
	}
	if out := l.Dequeue(26*ms, nil); len(out) != 2 {
		t.Fatalf("at 26 ms delivered %d packets, want 2", len(out))
	}
	if ev := l.NextEvent(); ev != 27*ms {
		t.Fatalf("NextEvent = %d, want %d", ev, 27*ms)
	}
}

func TestDropTailLimitsInLink(t *testing.T) {
	l := mustLink(t, LinkConfig{RateBps: 1e6, Queue: QueueConfig{Packets: 5}})
	for range 10 {
		l.Enqueue(pkt(1000, 1), 0)
	}
	// One is in transmission, five wait, four overflow.
	s := l.Stats()
	if s.Overflow != 4 || s.Queued != 5 {
		t.Fatalf("stats %+v, want 4 overflow drops and 5 queued", s)
	}
	if got := len(drain(l)); got != 6 {
		t.Fatalf("delivered %d packets, want 6", got)
	}
}

func TestNewLinkRejects(t *testing.T) {
	sched := &Schedule{spec: "step:x", steps: []step{{0, 1e6}}}
	for _, cfg := range []LinkConfig{
		{Delay: -1},
		{RateBps: -5},
		{RateBps: 1e6, Trace: sched},
		{Loss: Bernoulli(1.5)},
		{Loss: GilbertElliott(0.1, 0, 1, 0)},
		{Queue: QueueConfig{Kind: "red"}},
		{Queue: QueueConfig{Kind: QueueCoDel, Target: time.Second, Interval: time.Millisecond}},
	} {
		if _, err := NewLink(cfg, 1, nil); err == nil {
			t.Errorf("NewLink(%+v) accepted an invalid configuration", cfg)
		}
	}
}

func TestTimeNeverRunsBackwards(t *testing.T) {
	l := mustLink(t, LinkConfig{RateBps: 10e6, Delay: time.Millisecond})
	l.Dequeue(10*ms, nil)
	// An arrival stamped before the last Dequeue (two threads reading the
	// clock) is taken as arriving at 10 ms.
	p := pkt(1500, 1)
	l.Enqueue(p, 9*ms)
	if p.Arrival != 10*ms {
		t.Fatalf("arrival %d, want 10 ms", p.Arrival)
	}
	if got := drain(l)[p]; got != 10*ms+1_200_000+ms {
		t.Fatalf("delivered at %d, want %d", got, 10*ms+1_200_000+ms)
	}
}

func TestFQThroughLink(t *testing.T) {
	// Flow 1 fills the queue first; flow 2 then gets half the 10 Mbit/s.
	l := mustLink(t, LinkConfig{RateBps: 10e6, Queue: QueueConfig{Kind: QueueFQ}})
	for range 200 {
		l.Enqueue(pkt(1500, 1), 0)
	}
	for range 50 {
		l.Enqueue(pkt(1500, 2), 0)
	}
	got := drain(l)
	var last2 int64
	for p, at := range got {
		if p.Flow == 2 {
			last2 = max(last2, at)
		}
	}
	// After flow 1's first packet (sent at once), flow 1 has spent its
	// quantum, so flow 2 goes first and alternates with it: its 50th packet
	// leaves in slot 1 + 2*50 - 1 = 100 of 1.2 ms.
	if want := int64(100 * 1_200_000); last2 != want {
		t.Fatalf("flow 2 finished at %d, want %d (fair share)", last2, want)
	}
}
