package netem

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// TraceRef is a bandwidth trace as a link is given one:
//
//	[trace:|step:]FILE[@OFFSET]
//
// "trace:" names a mahimahi trace and "step:" a step trace; without a
// prefix, a file ending in .step is a step trace and any other a mahimahi
// trace. @OFFSET (a duration, mahimahi only) starts the trace that far into
// its period (Schedule.Rotate), so repetitions can see different stretches
// of one trace. This is the only parser of the syntax: links, scenarios and
// the experiments that restart traces all go through it.
type TraceRef struct {
	File   string
	Step   bool
	Offset time.Duration
}

// ParseTraceRef parses a trace reference without opening the file.
func ParseTraceRef(s string) (TraceRef, error) {
	var r TraceRef
	rest, prefixed := s, true
	switch {
	case strings.HasPrefix(s, "step:"):
		rest, r.Step = s[len("step:"):], true
	case strings.HasPrefix(s, "trace:"):
		rest = s[len("trace:"):]
	default:
		prefixed = false
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		off, err := time.ParseDuration(rest[i+1:])
		if err != nil || off < 0 {
			return r, fmt.Errorf("trace %q: offset %q: want a non-negative duration such as 30s", s, rest[i+1:])
		}
		rest, r.Offset = rest[:i], off
	}
	if !prefixed {
		r.Step = filepath.Ext(rest) == ".step"
	}
	if r.Step && r.Offset > 0 {
		return r, fmt.Errorf("trace %q: an offset applies to mahimahi traces only", s)
	}
	if rest == "" {
		return r, fmt.Errorf("trace %q: no file", s)
	}
	r.File = rest
	return r, nil
}

// String writes the reference back in ParseTraceRef syntax, always with its
// format prefix.
func (r TraceRef) String() string {
	s := "trace:" + r.File
	if r.Step {
		s = "step:" + r.File
	}
	// A file name holding '@' needs the offset written, even 0, so the last
	// '@' stays the offset's.
	if r.Offset > 0 || strings.Contains(r.File, "@") {
		s += "@" + r.Offset.String()
	}
	return s
}

// Load reads the trace file and applies the offset.
func (r TraceRef) Load() (*Schedule, error) {
	f, err := os.Open(r.File)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", r.File, err)
	}
	defer f.Close()
	if r.Step {
		return ParseStepTrace(r.File, f)
	}
	s, err := ParseMahimahiTrace(r.File, f)
	if err != nil || r.Offset == 0 {
		return s, err
	}
	return s.Rotate(r.Offset), nil
}

// LoadTrace loads a trace by reference (ParseTraceRef syntax).
func LoadTrace(ref string) (*Schedule, error) {
	r, err := ParseTraceRef(ref)
	if err != nil {
		return nil, err
	}
	return r.Load()
}

// Rotate returns the mahimahi schedule as seen from off into its period
// (modulo the period), off snapped down to the time of an opportunity: that
// keeps the period exactly the same (the opportunity at the snapped time
// moves to the end). The opportunities are the same ones; only their order
// in time turns. A step schedule, or an offset that snaps to 0, is returned
// as it is. The result's String records the offset actually used.
func (s *Schedule) Rotate(off time.Duration) *Schedule {
	if s.opps == nil {
		return s
	}
	times := s.opps
	period := times[len(times)-1]
	o := int64(off) % period
	k, _ := slices.BinarySearch(times, o+1) // first opportunity after o
	if o == 0 || k == 0 {
		return s
	}
	snapped := times[k-1]
	out := make([]int64, 0, len(times))
	for _, t := range times[k:] {
		out = append(out, t-snapped)
	}
	for _, t := range times[:k] {
		out = append(out, t+period-snapped)
	}
	spec := s.spec + "@" + time.Duration(snapped).String()
	if ref, err := ParseTraceRef(s.spec); err == nil {
		ref.Offset = (ref.Offset + time.Duration(snapped)) % time.Duration(period)
		spec = ref.String()
	}
	return &Schedule{spec: spec, opps: out}
}

// Offset is how far into its trace a rotated mahimahi schedule starts (0 if
// not rotated).
func (s *Schedule) Offset() time.Duration {
	r, err := ParseTraceRef(s.spec)
	if err != nil {
		return 0
	}
	return r.Offset
}
