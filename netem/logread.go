package netem

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LogSummary is a link log read back (ReadLog), with the series plots need.
// Times are in seconds since the link's time 0.
type LogSummary struct {
	Link string // the "# link:" header: the configuration in ParseLinkSpec syntax
	Seed int64
	Base int64 // the "# base timestamp:" header, ns on the emulator's clock

	Arrivals   []Event
	Departures []Departure
	Drops      []Drop
}

// Event is an arrival.
type Event struct {
	T     float64 // s since time 0
	Bytes int
	Flow  uint64
}

// Departure is a packet leaving the bottleneck.
type Departure struct {
	Event
	QueueDelay float64 // s from arrival to the last byte sent
}

// Drop is a dropped packet.
type Drop struct {
	Event
	Cause string // CauseLoss, CauseQueue or CauseCoDel
}

// Point is one sample of a series.
type Point struct {
	T, V float64
}

// ReadLog parses a link log written by Log.
func ReadLog(r io.Reader) (*LogSummary, error) {
	s := &LogSummary{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" {
			continue
		}
		if text[0] == '#' {
			if err := s.header(text); err != nil {
				return nil, fmt.Errorf("link log line %d: %w", line, err)
			}
			continue
		}
		if err := s.event(text); err != nil {
			return nil, fmt.Errorf("link log line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("link log line %d: %w", line+1, err)
	}
	return s, nil
}

func (s *LogSummary) header(text string) error {
	var err error
	if v, ok := strings.CutPrefix(text, "# link: "); ok {
		s.Link = v
	} else if v, ok := strings.CutPrefix(text, "# seed: "); ok {
		s.Seed, err = strconv.ParseInt(v, 10, 64)
	} else if v, ok := strings.CutPrefix(text, "# base timestamp: "); ok {
		s.Base, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		return fmt.Errorf("bad header %q", clip(text))
	}
	return nil // other comments are free text
}

func (s *LogSummary) event(text string) error {
	f := strings.Fields(text)
	if len(f) < 3 {
		return fmt.Errorf("want \"MS KIND BYTES ...\", got %q", clip(text))
	}
	t, err1 := parseMs(f[0])
	n, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || n < 0 {
		return fmt.Errorf("bad time or size in %q", clip(text))
	}
	var want int
	switch f[1] {
	case "+":
		want = 4
	case "-", "d":
		want = 5
	default:
		return fmt.Errorf("unknown event %q in %q", f[1], clip(text))
	}
	if len(f) != want {
		return fmt.Errorf("%q event wants %d fields, got %d in %q", f[1], want, len(f), clip(text))
	}
	flow, err := strconv.ParseUint(f[want-1], 16, 64)
	if err != nil {
		return fmt.Errorf("bad flow %q", clip(f[want-1]))
	}
	ev := Event{T: t, Bytes: n, Flow: flow}
	switch f[1] {
	case "+":
		s.Arrivals = append(s.Arrivals, ev)
	case "-":
		q, err := parseMs(f[3])
		if err != nil {
			return fmt.Errorf("bad queueing delay %q", clip(f[3]))
		}
		s.Departures = append(s.Departures, Departure{ev, q})
	case "d":
		s.Drops = append(s.Drops, Drop{ev, f[3]})
	}
	return nil
}

// maxLogMs bounds log times (about 11 days) so that series stay small.
const maxLogMs = 1e9

// parseMs reads a time in ms and returns seconds.
func parseMs(v string) (float64, error) {
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil || !(ms >= 0 && ms <= maxLogMs) {
		return 0, fmt.Errorf("not a time in ms: %q", clip(v))
	}
	return ms / 1e3, nil
}

// Throughput returns arrival (offered load) and departure (delivered)
// throughput in bit/s per window, one point per window at its start, from 0
// through the last event.
func (s *LogSummary) Throughput(window time.Duration) (arrivals, departures []Point) {
	w := window.Seconds()
	if w <= 0 {
		return nil, nil
	}
	end := 0.0
	for _, e := range s.Arrivals {
		end = max(end, e.T)
	}
	for _, d := range s.Departures {
		end = max(end, d.T)
	}
	n := int(end/w) + 1
	if len(s.Arrivals) == 0 && len(s.Departures) == 0 {
		n = 0
	}
	in, out := make([]Point, n), make([]Point, n)
	for i := range n {
		in[i].T, out[i].T = float64(i)*w, float64(i)*w
	}
	add := func(ps []Point, t float64, bytes int) {
		if i := int(t / w); i >= 0 && i < n {
			ps[i].V += float64(bytes) * 8 / w
		}
	}
	for _, e := range s.Arrivals {
		add(in, e.T, e.Bytes)
	}
	for _, d := range s.Departures {
		add(out, d.T, d.Bytes)
	}
	return in, out
}

// QueueDelays is the queueing delay of every departure over time (T its
// departure, V the delay in s), as mm-delay-graph plots it.
func (s *LogSummary) QueueDelays() []Point {
	ps := make([]Point, len(s.Departures))
	for i, d := range s.Departures {
		ps[i] = Point{d.T, d.QueueDelay}
	}
	return ps
}

// DelayPercentiles returns the queueing delay (s) at each percentile p in
// [0, 100], nearest rank; NaN if nothing departed.
func (s *LogSummary) DelayPercentiles(ps ...float64) []float64 {
	ds := make([]float64, len(s.Departures))
	for i, d := range s.Departures {
		ds[i] = d.QueueDelay
	}
	slices.Sort(ds)
	out := make([]float64, len(ps))
	for i, p := range ps {
		if len(ds) == 0 || !(p >= 0 && p <= 100) {
			out[i] = math.NaN()
			continue
		}
		rank := int(math.Ceil(p/100*float64(len(ds)))) - 1
		out[i] = ds[max(rank, 0)]
	}
	return out
}

// DropsByCause counts drops per cause.
func (s *LogSummary) DropsByCause() map[string]int {
	m := make(map[string]int)
	for _, d := range s.Drops {
		m[d.Cause]++
	}
	return m
}
