package netem

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestLogFormat(t *testing.T) {
	var buf bytes.Buffer
	log := NewLog(&buf)
	cfg := LinkConfig{RateBps: 10e6, Delay: 25 * time.Millisecond, Queue: QueueConfig{Packets: 1}}
	l, err := NewLink(cfg, 9, log)
	if err != nil {
		t.Fatal(err)
	}
	const base = 5_000_000_123
	l.Enqueue(&Packet{Data: make([]byte, 1500), Flow: 0xab}, base)
	l.Enqueue(&Packet{Data: make([]byte, 100), Flow: 0xcd}, base+1000)
	l.Enqueue(&Packet{Data: make([]byte, 100), Flow: 0xcd}, base+2000)
	l.Dequeue(base+30*ms, nil)
	if err := log.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `# shunt netem link log v1
# link: rate=10Mbit delay=25ms loss=0 queue=droptail:packets=1
# seed: 9
# base timestamp: 5000000123
0.000 + 1500 ab
0.001 + 100 cd
0.002 + 100 cd
0.002 d 100 queue cd
1.200 - 1500 1.200 ab
1.280 - 100 1.279 cd
`
	if buf.String() != want {
		t.Fatalf("log:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestLogRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	log := NewLog(&buf)
	cfg := LinkConfig{RateBps: 10e6, Delay: 10 * time.Millisecond, Loss: Bernoulli(0.05), Queue: QueueConfig{Kind: QueueCoDel, Packets: 200}}
	l, err := NewLink(cfg, 4, log)
	if err != nil {
		t.Fatal(err)
	}
	// 20 Mbit/s offered to 10 Mbit/s for 2 s, from two flows.
	for now := int64(0); now < int64(2*time.Second); now += 600_000 {
		l.Enqueue(pkt(1500, uint64(1+now/600_000%2)), now)
		l.Dequeue(now, nil)
	}
	drain(l)
	if err := log.Flush(); err != nil {
		t.Fatal(err)
	}
	s, err := ReadLog(&buf)
	if err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	causes := s.DropsByCause()
	if uint64(len(s.Arrivals)) != st.Arrivals || uint64(len(s.Departures)) != st.Departures ||
		uint64(causes[CauseLoss]) != st.Lost || uint64(causes[CauseQueue]) != st.Overflow || uint64(causes[CauseCoDel]) != st.AQM {
		t.Fatalf("log has %d arrivals, %d departures, drops %v; link stats %+v", len(s.Arrivals), len(s.Departures), causes, st)
	}
	if st.Lost == 0 || st.AQM == 0 {
		t.Fatalf("stats %+v: the run should exercise loss and CoDel drops", st)
	}
	if s.Link != cfg.String() || s.Seed != 4 || s.Base != 0 {
		t.Errorf("header link %q seed %d base %d, want %q 4 0", s.Link, s.Seed, s.Base, cfg.String())
	}
	// Delivered throughput is the link rate while the queue is busy.
	_, out := s.Throughput(500 * time.Millisecond)
	for _, p := range out[:4] {
		if math.Abs(p.V-10e6)/10e6 > 0.01 {
			t.Errorf("departures %.0f bit/s in window at %.1f s, want 10 Mbit/s", p.V, p.T)
		}
	}
	// Queueing delays grow to CoDel's regime and are ordered by percentile.
	ps := s.DelayPercentiles(0, 50, 99, 100)
	if !(ps[0] <= ps[1] && ps[1] <= ps[2] && ps[2] <= ps[3]) || ps[0] < 1.2e-3-1e-6 {
		t.Errorf("delay percentiles %v: want ordered and at least the 1.2 ms service time", ps)
	}
	if len(s.QueueDelays()) != len(s.Departures) {
		t.Errorf("%d delay points for %d departures", len(s.QueueDelays()), len(s.Departures))
	}
}

func TestReadLogErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"1.0 + 10\n", "line 1: \"+\" event wants 4 fields"},
		{"# base timestamp: x\n", "line 1: bad header"},
		{"1.0 + 10 ab\nx + 10 ab\n", "line 2: bad time"},
		{"1.0 ? 10 ab\n", "unknown event"},
		{"1.0 - 10 y ab\n", "bad queueing delay"},
		{"1.0 d 10 queue zz\n", "bad flow"},
		{"-1.0 + 10 ab\n", "bad time"},
	} {
		_, err := ReadLog(strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadLog(%q): error %v, want %q", c.text, err, c.want)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestLogKeepsWriteError(t *testing.T) {
	log := NewLog(failWriter{})
	l, _ := NewLink(LinkConfig{}, 1, log)
	l.Enqueue(pkt(10, 1), 0)
	if err := log.Flush(); err == nil || log.Flush() == nil {
		t.Fatal("Flush lost the write error")
	}
}

func TestNilLogIsSilent(t *testing.T) {
	var log *Log
	if err := log.Flush(); err != nil {
		t.Fatal(err)
	}
	l, _ := NewLink(LinkConfig{}, 1, nil)
	l.Enqueue(pkt(10, 1), 0)
}

func TestAppendMs(t *testing.T) {
	for ns, want := range map[int64]string{0: "0.000", 999: "0.000", 1000: "0.001", 1_234_567: "1.234", 12_345_678_901: "12345.678", -1500: "-0.001"} {
		if got := string(appendMs(nil, ns)); got != want {
			t.Errorf("appendMs(%d) = %q, want %q", ns, got, want)
		}
	}
}
