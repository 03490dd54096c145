package netem

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/shared"
)

func mustTrace(t *testing.T, text string) *Schedule {
	t.Helper()
	s, err := ParseMahimahiTrace("test", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustStep(t *testing.T, text string) *Schedule {
	t.Helper()
	s, err := ParseStepTrace("test", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTraceSmallPacketsShareAnOpportunity(t *testing.T) {
	// Opportunities at 2 ms and 5 ms, period 5 ms.
	l := mustLink(t, LinkConfig{Trace: mustTrace(t, "2\n5\n")})
	ps := []*Packet{pkt(500, 1), pkt(500, 1), pkt(500, 1), pkt(600, 1)}
	for _, p := range ps {
		l.Enqueue(p, 0)
	}
	if ev := l.NextEvent(); ev != 2*ms {
		t.Fatalf("NextEvent = %d, want the first opportunity at 2 ms", ev)
	}
	got := drain(l)
	for i, want := range []int64{2 * ms, 2 * ms, 2 * ms, 5 * ms} {
		if got[ps[i]] != want {
			t.Errorf("packet %d (%d B) delivered at %d, want %d", i, len(ps[i].Data), got[ps[i]], want)
		}
	}
}

func TestTraceLeftoverOnlyForPacketsAlreadyThere(t *testing.T) {
	l := mustLink(t, LinkConfig{Trace: mustTrace(t, "2\n5\n")})
	a, b := pkt(500, 1), pkt(500, 1)
	l.Enqueue(a, 0)
	drain(l)
	// The 1000 B a left at 2 ms are gone by 3 ms: b waits for 5 ms.
	l.Enqueue(b, 3*ms)
	if got := drain(l)[b]; got != 5*ms {
		t.Fatalf("b delivered at %d, want %d", got, 5*ms)
	}
}

func TestTraceLargePacketSpansOpportunities(t *testing.T) {
	// A packet larger than an opportunity (a jumbo frame) uses the next ones.
	l := mustLink(t, LinkConfig{Trace: mustTrace(t, "1\n2\n3\n4\n")})
	a, b := pkt(2000, 1), pkt(1000, 1)
	l.Enqueue(a, 0)
	l.Enqueue(b, 0)
	got := drain(l)
	if got[a] != 2*ms || got[b] != 2*ms {
		t.Fatalf("delivered a at %d and b at %d, want both at 2 ms (a uses 1 and 2 ms, b the 1000 B left)", got[a], got[b])
	}
}

func TestTraceWrapsAround(t *testing.T) {
	// Two opportunities in ms 0 and one at 3 ms: period 3 ms, and each period
	// starts with the previous one's 3 ms opportunity plus the two at 0.
	l := mustLink(t, LinkConfig{Trace: mustTrace(t, "0\n0\n3\n")})
	var ps []*Packet
	for range 7 {
		p := pkt(1500, 1)
		ps = append(ps, p)
		l.Enqueue(p, 0)
	}
	got := drain(l)
	for i, want := range []int64{0, 0, 3, 3, 3, 6, 6} {
		if got[ps[i]] != want*ms {
			t.Errorf("packet %d delivered at %v, want %d ms", i, time.Duration(got[ps[i]]), want)
		}
	}
}

func TestTraceSkipsIdlePeriods(t *testing.T) {
	l := mustLink(t, LinkConfig{Trace: mustTrace(t, "1\n1\n4\n")})
	l.Start(0)
	// Arriving at 1001.5 ms, after many idle periods: the next opportunity
	// is at 1004 ms (period 4 ms: 1001 has passed).
	p := pkt(100, 1)
	l.Enqueue(p, 1001*ms+ms/2)
	if ev := l.NextEvent(); ev != 1004*ms {
		t.Fatalf("NextEvent = %v, want 1004ms", time.Duration(ev))
	}
	// At exactly a period boundary, the previous period's last opportunity
	// (1008 ms) is the one to use.
	q := pkt(1500, 1)
	drain(l)
	l.Enqueue(q, 1008*ms)
	if got := drain(l)[q]; got != 1008*ms {
		t.Fatalf("packet arriving at 1008 ms delivered at %v, want 1008ms", time.Duration(got))
	}
}

func TestTraceStartsAtLinkStart(t *testing.T) {
	l := mustLink(t, LinkConfig{Trace: mustTrace(t, "10\n")})
	l.Start(1000 * ms)
	p := pkt(1500, 1)
	l.Enqueue(p, 1002*ms)
	if ev := l.NextEvent(); ev != 1010*ms {
		t.Fatalf("NextEvent = %v, want 1010ms (10 ms after Start)", time.Duration(ev))
	}
}

func TestStepTrace(t *testing.T) {
	// 12 Mbit/s (1 ms per 1500 B) for 3 ms, an outage, then 6 Mbit/s held.
	s := mustStep(t, "# comment\n0 12\n3 0\n5 6\n")
	l := mustLink(t, LinkConfig{Trace: s})
	var ps []*Packet
	for range 6 {
		p := pkt(1500, 1)
		ps = append(ps, p)
		l.Enqueue(p, 0)
	}
	got := drain(l)
	// The fourth packet gets no service in the outage: 3 ms of work left after
	// 3 ms at 12 Mbit/s... it starts at 3 ms, sends nothing until 5 ms, then
	// needs 2 ms at 6 Mbit/s.
	for i, want := range []int64{1000, 2000, 3000, 7000, 9000, 11000} {
		if got[ps[i]] != want*1000 {
			t.Errorf("packet %d delivered at %v, want %d µs", i, time.Duration(got[ps[i]]), want)
		}
	}
	if m := s.MeanRate(); m != (12e6*3+0*2)/5 {
		t.Errorf("MeanRate = %v, want %v", m, (12e6*3)/5)
	}
}

func TestStepPacketAcrossChange(t *testing.T) {
	// 12 Mbit/s until 0.5 ms, then 6 Mbit/s: half the bits at each rate.
	l := mustLink(t, LinkConfig{Trace: mustStep(t, "0 12\n0.5 6\n")})
	p := pkt(1500, 1)
	l.Enqueue(p, 0)
	if got := drain(l)[p]; got != 1500*1000 {
		t.Fatalf("delivered at %d ns, want 1500000", got)
	}
}

func TestStepOutageForever(t *testing.T) {
	l := mustLink(t, LinkConfig{Trace: mustStep(t, "0 0\n")})
	l.Enqueue(pkt(100, 1), 0)
	if ev := l.NextEvent(); ev != -1 {
		t.Fatalf("NextEvent = %d on a link that never sends, want -1", ev)
	}
	if s := l.Stats(); s.Queued != 1 {
		t.Fatalf("queued %d, want the packet held", s.Queued)
	}
}

func TestTraceParseErrors(t *testing.T) {
	for _, c := range []struct {
		step bool
		text string
		want string
	}{
		{false, "1\n2\nx\n", "trace t.down line 3: not a time"},
		{false, "5\n3\n", "trace t.down line 2: time 3 ms is before"},
		{false, "-1\n", "line 1: not a time"},
		{false, "0\n0\n", "lasts 0 ms"},
		{false, "\n", "no delivery opportunities"},
		{true, "0 10\n5 x\n", "trace t.down line 2: not a rate"},
		{true, "1 10\n", "line 1: the first step must be at time 0"},
		{true, "0 10\n0 5\n", "line 2: time 0 ms is not after"},
		{true, "0 10 3\n", "line 1: want"},
		{true, "# only a comment\n", "no steps"},
	} {
		parse := ParseMahimahiTrace
		if c.step {
			parse = ParseStepTrace
		}
		_, err := parse("t.down", strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parse %q: error %v, want it to contain %q", c.text, err, c.want)
		}
	}
}

func TestLoadTraceChoosesFormat(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mm := write("x.down", "1\n")
	st := write("y.step", "0 10\n")
	other := write("z.txt", "0 10\n")
	for _, c := range []struct {
		path string
		rate float64
	}{
		{mm, 12e6}, {"trace:" + mm, 12e6}, {st, 10e6}, {"step:" + other, 10e6},
	} {
		s, err := LoadTrace(c.path)
		if err != nil {
			t.Fatalf("LoadTrace(%q): %v", c.path, err)
		}
		if s.MeanRate() != c.rate {
			t.Errorf("LoadTrace(%q) mean rate %v, want %v", c.path, s.MeanRate(), c.rate)
		}
	}
	if _, err := LoadTrace(other); err == nil || !strings.Contains(err.Error(), "z.txt line 1") {
		t.Errorf("a step file read as mahimahi: error %v, want one naming z.txt line 1", err)
	}
	if _, err := LoadTrace(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadTrace of a missing file succeeded")
	}
}

// sharedTraces holds the project's cellular traces (beside the repository, not in it).
var sharedTraces, _ = shared.Path("traces")

// readmeRates reads the mean rates (Mbit/s) from the traces' README table.
func readmeRates(t *testing.T) map[string]float64 {
	f, err := os.Open(filepath.Join(sharedTraces, "README.md"))
	if err != nil {
		t.Skipf("shared traces not available: %v", err)
	}
	defer f.Close()
	rates := make(map[string]float64)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) != 5 {
			continue
		}
		name, rate := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[3])
		if v, err := strconv.ParseFloat(strings.TrimSuffix(rate, " Mbit/s"), 64); err == nil {
			rates[name] = v
		}
	}
	if len(rates) == 0 {
		t.Fatal("no mean rates found in the traces README")
	}
	return rates
}

// TestRealTracesMeanRate checks the mean rate of each shared trace against its
// README, both as computed from the schedule and as delivered by a saturated
// link over one period.
func TestRealTracesMeanRate(t *testing.T) {
	for name, want := range readmeRates(t) {
		t.Run(name, func(t *testing.T) {
			s, err := LoadTrace(filepath.Join(sharedTraces, name))
			if err != nil {
				t.Fatal(err)
			}
			mean := s.MeanRate() / 1e6
			if math.Abs(mean-want)/want > 0.01 {
				t.Errorf("MeanRate %.3f Mbit/s, README says %.2f", mean, want)
			}
			// Keep the queue full for one period and count what leaves.
			l := mustLink(t, LinkConfig{Trace: s, Queue: QueueConfig{Packets: 100}})
			period := int64(s.Duration())
			var out []*Packet
			var bytes int
			for now := int64(0); now <= period; now += ms {
				for l.Stats().Queued < 50 {
					l.Enqueue(pkt(1500, 1), now)
				}
				out = l.Dequeue(now, out[:0])
				for _, p := range out {
					bytes += len(p.Data)
				}
			}
			got := float64(bytes) * 8 / time.Duration(period).Seconds() / 1e6
			if math.Abs(got-want)/want > 0.01 {
				t.Errorf("saturated link delivered %.3f Mbit/s over one period, README says %.2f", got, want)
			}
			t.Logf("README %.2f Mbit/s, schedule mean %.3f, delivered %.3f", want, mean, got)
		})
	}
}

func TestStepOutageForeverMidPacket(t *testing.T) {
	// 1 Mbit/s for 2 ms sends 250 B; the rest of a 1500 B packet never goes.
	l := mustLink(t, LinkConfig{Trace: mustStep(t, "0 1\n2 0\n")})
	l.Enqueue(pkt(1500, 1), 0)
	if ev := l.NextEvent(); ev != -1 {
		t.Fatalf("NextEvent = %d for a packet that never finishes, want -1", ev)
	}
	if out := l.Dequeue(int64(time.Hour), nil); len(out) != 0 {
		t.Fatalf("delivered %d packets through a dead link", len(out))
	}
}
