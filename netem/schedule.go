package netem

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MTU is the size of one delivery opportunity in a mahimahi trace, and the
// link MTU the testbed uses everywhere.
const MTU = 1500

// never is the time of an event that will not happen.
const never = math.MaxInt64

// bitNs is the work to send one byte, in bit·ns: at r bit/s a byte takes
// bitNs/r ns. Rate arithmetic is done in these units so that service times are
// exact integers plus a carried remainder, with no drift over long runs.
const bitNs = 8 * int64(time.Second)

// Schedule is a variable bandwidth: either mahimahi delivery opportunities
// (one MTU-sized opportunity per line, wrapping around with the trace's
// period) or a step trace (piecewise-constant rates, the last one held).
type Schedule struct {
	spec  string  // how it was loaded, in ParseBandwidth syntax
	opps  []int64 // mahimahi: opportunity times, ns, nondecreasing, last > 0
	steps []step  // step trace: steps[0].at == 0
}

type step struct {
	at  int64 // ns since the link's start
	bps int64
}

// String is the schedule's source in ParseBandwidth syntax ("trace:FILE",
// "step:FILE").
func (s *Schedule) String() string { return s.spec }

// Duration is the period of a mahimahi trace, or the time of a step trace's
// last step.
func (s *Schedule) Duration() time.Duration {
	if s.opps != nil {
		return time.Duration(s.opps[len(s.opps)-1])
	}
	return time.Duration(s.steps[len(s.steps)-1].at)
}

// MeanRate is the mean capacity in bit/s: over one period for a mahimahi trace;
// over [0, last step) for a step trace, or the single rate if it has one step.
func (s *Schedule) MeanRate() float64 {
	if s.opps != nil {
		return float64(len(s.opps)) * MTU * 8 / time.Duration(s.opps[len(s.opps)-1]).Seconds()
	}
	if len(s.steps) == 1 {
		return float64(s.steps[0].bps)
	}
	var bits float64
	for i := 0; i+1 < len(s.steps); i++ {
		bits += float64(s.steps[i].bps) * time.Duration(s.steps[i+1].at-s.steps[i].at).Seconds()
	}
	return bits / s.Duration().Seconds()
}

func traceErr(name string, line int, format string, args ...any) error {
	return fmt.Errorf("trace %s line %d: %s", name, line, fmt.Sprintf(format, args...))
}

// maxTraceMs bounds trace times so that ns arithmetic cannot overflow (about 31 years).
const maxTraceMs = 1e12

// ParseMahimahiTrace reads a mahimahi trace: one line per delivery opportunity
// of MTU bytes, holding its time in integer milliseconds since the start;
// times are nondecreasing, repeat for several opportunities in the same
// millisecond, and the last one is the period after which the trace wraps.
// Blank lines are skipped. name is used in errors.
func ParseMahimahiTrace(name string, r io.Reader) (*Schedule, error) {
	sc := bufio.NewScanner(r)
	var opps []int64
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		ms, err := strconv.ParseInt(text, 10, 64)
		if err != nil || ms < 0 || ms > maxTraceMs {
			return nil, traceErr(name, line, "not a time in ms: %q", clip(text))
		}
		t := ms * int64(time.Millisecond)
		if n := len(opps); n > 0 && t < opps[n-1] {
			return nil, traceErr(name, line, "time %d ms is before the previous line's %d ms", ms, opps[n-1]/int64(time.Millisecond))
		}
		opps = append(opps, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace %s line %d: %w", name, line+1, err)
	}
	if len(opps) == 0 {
		return nil, fmt.Errorf("trace %s: no delivery opportunities", name)
	}
	if opps[len(opps)-1] == 0 {
		return nil, fmt.Errorf("trace %s: lasts 0 ms (the last opportunity sets the period and must be after 0)", name)
	}
	return &Schedule{spec: "trace:" + name, opps: opps}, nil
}

// ParseStepTrace reads a step trace: lines "TIME_MS RATE_MBIT" (decimal
// numbers, e.g. "5000 1.5"), the rate holding from that time until the next
// line. The first line must be at time 0, times strictly increase, and the
// last rate holds forever: a step file describes a scenario ("at 5 s drop to
// 1 Mbit/s") that must not jump back to its start when a run outlasts it; to
// repeat a pattern, write out its periods. A rate of 0 is an outage. Blank
// lines and lines starting with '#' are skipped. name is used in errors.
func ParseStepTrace(name string, r io.Reader) (*Schedule, error) {
	sc := bufio.NewScanner(r)
	var steps []step
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, traceErr(name, line, "want \"TIME_MS RATE_MBIT\", got %q", clip(text))
		}
		ms, err := strconv.ParseFloat(f[0], 64)
		if err != nil || !(ms >= 0 && ms <= maxTraceMs) {
			return nil, traceErr(name, line, "not a time in ms: %q", clip(f[0]))
		}
		mbit, err := strconv.ParseFloat(f[1], 64)
		if err != nil || !(mbit >= 0 && mbit <= maxRateBps/1e6) {
			return nil, traceErr(name, line, "not a rate in Mbit/s: %q", clip(f[1]))
		}
		at := int64(math.Round(ms * float64(time.Millisecond)))
		if len(steps) == 0 && at != 0 {
			return nil, traceErr(name, line, "the first step must be at time 0, not %s ms", f[0])
		}
		if n := len(steps); n > 0 && at <= steps[n-1].at {
			return nil, traceErr(name, line, "time %s ms is not after the previous step", f[0])
		}
		steps = append(steps, step{at: at, bps: int64(math.Round(mbit * 1e6))})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace %s line %d: %w", name, line+1, err)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("trace %s: no steps", name)
	}
	return &Schedule{spec: "step:" + name, steps: steps}, nil
}

// clip shortens hostile input quoted in errors.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// server is a rate schedule seen by the transmitter. Times are ns relative to
// the link's start and only move forward between calls.
type server interface {
	// next is the earliest time >= t at which a transmission can begin, or never.
	next(t int64) int64
	// transmit sends n bytes from start (a time next returned) and returns
	// when the last of them has left, or never.
	transmit(start int64, n int) int64
}

// unlimited is an infinitely fast link.
type unlimited struct{}

func (unlimited) next(t int64) int64                { return t }
func (unlimited) transmit(start int64, n int) int64 { return start }

// rateServer serves piecewise-constant rates (a constant rate is one step).
type rateServer struct {
	steps []step
	i     int   // current step; times only move forward
	rem   int64 // bit·ns the previous packet left unpaid (its finish was rounded down)
	last  int64 // finish time of the previous packet
}

func (s *rateServer) seek(t int64) {
	for s.i+1 < len(s.steps) && s.steps[s.i+1].at <= t {
		s.i++
	}
}

func (s *rateServer) end(i int) int64 {
	if i+1 < len(s.steps) {
		return s.steps[i+1].at
	}
	return never
}

func (s *rateServer) next(t int64) int64 {
	s.seek(t)
	for i := s.i; s.steps[i].bps == 0; i++ {
		if i+1 == len(s.steps) {
			return never
		}
		t = s.steps[i+1].at
	}
	return t
}

func (s *rateServer) transmit(start int64, n int) int64 {
	if start != s.last {
		s.rem = 0 // the link idled: the fraction of a ns is lost with it
	}
	need := int64(n)*bitNs + s.rem
	t := start
	s.seek(t)
	for {
		r, end := s.steps[s.i].bps, s.end(s.i)
		if r > 0 {
			if d := need / r; d <= end-t {
				s.rem = need - d*r
				s.last = t + d
				return s.last
			}
			need -= (end - t) * r
		}
		if end == never {
			return never // an outage that lasts forever
		}
		s.i++
		t = end
	}
}

// oppServer serves mahimahi delivery opportunities: each lets MTU bytes leave
// at its time; a packet larger than what is left of one uses the next ones,
// and bytes left over serve further packets queued by then (as mahimahi's
// link_queue does), else they are lost.
type oppServer struct {
	opps   []int64
	period int64
	idx    int64 // global index (counting wraps) of the next unused opportunity
	credT  int64 // time of the last opportunity used
	cred   int   // bytes left in it
}

func (s *oppServer) at(g int64) int64 {
	n := int64(len(s.opps))
	return g/n*s.period + s.opps[g%n]
}

// first is the global index of the first unused opportunity at or after t.
func (s *oppServer) first(t int64) int64 {
	if s.at(s.idx) >= t {
		return s.idx
	}
	n := int64(len(s.opps))
	w := t / s.period
	within := t - w*s.period
	g := w*n + int64(sort.Search(len(s.opps), func(i int) bool { return s.opps[i] >= within }))
	// The previous period's last opportunities fall on this period's start.
	for g > s.idx && s.at(g-1) >= t {
		g--
	}
	return g
}

func (s *oppServer) next(t int64) int64 {
	if s.cred > 0 && t == s.credT {
		return t
	}
	return s.at(s.first(t))
}

func (s *oppServer) transmit(start int64, n int) int64 {
	if s.cred > 0 && start == s.credT {
		if n <= s.cred {
			s.cred -= n
			return start
		}
		n -= s.cred
	}
	for g := s.first(start); ; g++ {
		if n <= MTU {
			s.idx, s.credT, s.cred = g+1, s.at(g), MTU-n
			return s.credT
		}
		n -= MTU
	}
}

// newServer builds the transmitter for a validated configuration.
func newServer(rateBps int64, sched *Schedule) server {
	switch {
	case sched != nil && sched.opps != nil:
		return &oppServer{opps: sched.opps, period: sched.opps[len(sched.opps)-1]}
	case sched != nil:
		return &rateServer{steps: sched.steps, last: -1}
	case rateBps > 0:
		return &rateServer{steps: []step{{0, rateBps}}, last: -1}
	default:
		return unlimited{}
	}
}
