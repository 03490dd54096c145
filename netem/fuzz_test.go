package netem

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func FuzzParseMahimahiTrace(f *testing.F) {
	for _, s := range []string{"1\n", "0\n0\n3\n", "2\n5\n", "1\n2\n3\n4\n"} {
		f.Add(s)
	}
	// The start of a real cellular trace, when the shared traces are here.
	if b, err := os.ReadFile(sharedTraces + "/ATT-LTE-driving-2016.up"); err == nil {
		f.Add(string(b[:min(len(b), 2000)]))
	}
	f.Fuzz(func(t *testing.T, s string) {
		sched, err := ParseMahimahiTrace("fuzz", strings.NewReader(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trace fuzz") {
				t.Fatalf("error %q does not name the trace", err)
			}
			return
		}
		runSchedule(t, sched)
	})
}

func FuzzParseStepTrace(f *testing.F) {
	for _, s := range []string{"0 12\n3 0\n5 6\n", "0 10\n", "# c\n0 0.5\n1000 100\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sched, err := ParseStepTrace("fuzz", strings.NewReader(s))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "trace fuzz") {
				t.Fatalf("error %q does not name the trace", err)
			}
			return
		}
		runSchedule(t, sched)
	})
}

// runSchedule sends a few packets over an accepted schedule: delivery times
// must not run backwards, and NextEvent must be exact.
func runSchedule(t *testing.T, sched *Schedule) {
	l, err := NewLink(LinkConfig{Trace: sched}, 1, nil)
	if err != nil {
		t.Fatalf("parsed schedule rejected by NewLink: %v", err)
	}
	for i := range 5 {
		l.Enqueue(pkt(100+700*i, 1), int64(i)*ms)
	}
	var out []*Packet
	last := int64(4 * ms) // the link's time after the last Enqueue
	for range 20 {
		ev := l.NextEvent()
		if ev < 0 {
			return
		}
		if ev > last {
			// Nothing is due before the next event.
			if out = l.Dequeue(ev-1, out[:0]); len(out) != 0 {
				t.Fatalf("packets delivered before NextEvent %d", ev)
			}
			last = ev
		}
		l.Dequeue(ev, out[:0])
	}
}

func FuzzReadLog(f *testing.F) {
	var buf bytes.Buffer
	log := NewLog(&buf)
	l, _ := NewLink(LinkConfig{RateBps: 1e6, Delay: time.Millisecond, Loss: Bernoulli(0.2), Queue: QueueConfig{Packets: 3}}, 1, log)
	for i := range 10 {
		l.Enqueue(pkt(1000, uint64(i%3)), int64(i)*100_000)
	}
	drain(l)
	log.Flush()
	f.Add(buf.String())
	f.Add("# base timestamp: 5\n1.000 + 10 ab\n2.000 - 10 1.000 ab\n")
	f.Fuzz(func(t *testing.T, s string) {
		sum, err := ReadLog(strings.NewReader(s))
		if err != nil {
			return
		}
		in, out := sum.Throughput(time.Second)
		if len(in) != len(out) {
			t.Fatalf("%d arrival windows, %d departure windows", len(in), len(out))
		}
		sum.DelayPercentiles(50, 99)
		sum.DropsByCause()
	})
}
