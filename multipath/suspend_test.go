package multipath

import (
	"testing"
	"time"

	"github.com/shunt-net/shunt/estimate"
)

func twoPathStart(t *testing.T, size int64) (*Scheduler, []Action) {
	t.Helper()
	s := mustNew(t, Config{Paths: 2, Size: size, Prior: []estimate.Path{
		{Bandwidth: mbit(10), RTT: 20 * time.Millisecond},
		{Bandwidth: mbit(10), RTT: 20 * time.Millisecond},
	}})
	req := kinds(s.OnStart(ms(0)), Request)
	if len(req) != 2 {
		t.Fatalf("OnStart: %v, want a request per path", req)
	}
	for _, r := range req {
		if _, err := s.OnHeaders(ms(20), r.Stream, 206, size); err != nil {
			t.Fatal(err)
		}
	}
	return s, req
}

// A silent path's ranges move to the path that is up at once; the
// download does not fail, and the path comes back with fresh estimates.
func TestSuspendMovesRangesAndResumes(t *testing.T) {
	const size = 20000000
	s, req := twoPathStart(t, size)
	// Path 1 runs at 2 Mbit/s, a fifth of its prior, before it goes
	// silent; path 0 too (delivering, so not silent itself).
	for now := 30; now <= 1030; now += 10 {
		s.OnData(ms(now), req[0].Stream, 2500)
		s.OnData(ms(now), req[1].Stream, 2500)
	}
	if est := s.Estimate(ms(1030), 1); est.Bandwidth > mbit(3) {
		t.Fatalf("path 1's estimate %v before the outage, want about 2 Mbit/s", est.Bandwidth*8/1e6)
	}
	acts, err := s.OnPathSuspend(ms(1100), 1)
	if err != nil {
		t.Fatal(err)
	}
	reset, moved := kinds(acts, Reset), kinds(acts, Request)
	if len(reset) != 1 || reset[0].Stream != req[1].Stream {
		t.Errorf("suspend: resets %v, want path 1's stream %d", reset, req[1].Stream)
	}
	if len(moved) != 1 || moved[0].Path != 0 || moved[0].Start != req[1].Start+101*2500 {
		t.Fatalf("suspend: requests %v, want path 1's rest from %d on path 0", moved, req[1].Start+101*2500)
	}
	if !s.Suspended(1) {
		t.Error("path 1 not suspended")
	}
	acts, err = s.OnPathResume(ms(5000), 1)
	if err != nil || s.Suspended(1) {
		t.Fatalf("resume: %v, suspended %v", err, s.Suspended(1))
	}
	if r := kinds(acts, Request); len(r) != 1 || r[0].Path != 1 {
		t.Errorf("resume: requests %v, want path 1 to take a share of path 0's work", r)
	}
	if est := s.Estimate(ms(5000), 1); est.Bandwidth != mbit(10) {
		t.Errorf("resumed path's estimate %v Mbit/s, want its prior's 10, not what it measured before the outage", est.Bandwidth*8/1e6)
	}
	// Back in the schedule: a path with room takes new work again.
	if _, err := s.OnPathSuspend(ms(5100), 1); err != nil {
		t.Fatal(err)
	}
}

// With no other path up, a silent path keeps its stream (TCP or the path
// coming back resumes it; a server without ranges is not asked again), and
// the download still does not fail.
func TestSuspendAloneKeepsTheStream(t *testing.T) {
	const size = 100000
	s := mustNew(t, Config{Paths: 1, Size: size})
	req := kinds(s.OnStart(ms(0)), Request)
	if _, err := s.OnHeaders(ms(20), req[0].Stream, 206, size); err != nil {
		t.Fatal(err)
	}
	s.OnData(ms(30), req[0].Stream, 40000)
	acts, err := s.OnPathSuspend(ms(3000), 0)
	if err != nil || len(acts) != 0 {
		t.Fatalf("suspend of the only path: %v, %v; want nothing done", acts, err)
	}
	if acts, err = s.OnPathResume(ms(20000), 0); err != nil || len(kinds(acts, Reset)) != 0 {
		t.Fatalf("resume: %v, %v; want the stream kept", acts, err)
	}
	acts = s.OnData(ms(20100), req[0].Stream, size-40000)
	if len(kinds(acts, Done)) != 1 {
		t.Fatalf("the kept stream's rest: %v, want Done", acts)
	}
}

// Both paths silent: the second keeps its streams; when the first comes
// back it takes them over. A path that goes down for good while another is
// only suspended does not fail the download either.
func TestSuspendBothThenResumeOne(t *testing.T) {
	const size = 2000000
	s, _ := twoPathStart(t, size)
	if _, err := s.OnPathSuspend(ms(100), 1); err != nil {
		t.Fatal(err)
	}
	acts, err := s.OnPathSuspend(ms(200), 0)
	if err != nil || len(kinds(acts, Reset)) != 0 {
		t.Fatalf("suspend of the last path up: %v, %v; want its streams kept", acts, err)
	}
	acts, err = s.OnPathResume(ms(9000), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds(acts, Reset)) == 0 || len(kinds(acts, Request)) == 0 {
		t.Fatalf("resume of path 1 while path 0 is silent: %v, want path 0's streams moved to it", acts)
	}
	for _, r := range kinds(acts, Request) {
		if r.Path != 1 {
			t.Errorf("request %v on path %d, want path 1", r, r.Path)
		}
	}
	if _, err := s.OnPathSuspend(ms(9500), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OnPathDown(ms(9600), 0); err != nil {
		t.Errorf("path 0 down while path 1 may come back: %v", err)
	}
	if _, err := s.OnPathDown(ms(9700), 1); err == nil {
		t.Error("every path down for good: no error")
	}

}

// Without priors, a path back from an outage has no estimate at all: it
// still takes work, a probe as large as the even split's, and is measured
// from there.
func TestResumedPathWithoutEstimateProbes(t *testing.T) {
	const size = 20000000
	s := mustNew(t, Config{Paths: 2, Size: size})
	req := kinds(s.OnStart(ms(0)), Request)
	for _, r := range req {
		if _, err := s.OnHeaders(ms(20), r.Stream, 206, size); err != nil {
			t.Fatal(err)
		}
	}
	for now := 30; now <= 1030; now += 10 {
		s.OnData(ms(now), req[0].Stream, 12500)
		s.OnData(ms(now), req[1].Stream, 12500)
	}
	if _, err := s.OnPathSuspend(ms(1100), 1); err != nil {
		t.Fatal(err)
	}
	for now := 1110; now <= 3000; now += 10 {
		for _, st := range s.live {
			if st.path == 0 {
				s.OnData(ms(now), st.id, 12500)
			}
		}
	}
	acts, err := s.OnPathResume(ms(3000), 1)
	if err != nil {
		t.Fatal(err)
	}
	r := kinds(acts, Request)
	if len(r) != 1 || r[0].Path != 1 || r[0].End-r[0].Start < 1<<20 {
		t.Fatalf("resume without an estimate: requests %v, want a probe of a share of path 0's rest on path 1", r)
	}
}

// A path silent for HandoverAfter while the other delivers gives its range
// up (Aggregate, checkSilent); it gets work again only once it answers a
// PING sent after that. Silence of both paths, or the partner's DATA
// handled in one burst after a stall of the caller's own loop, moves
// nothing.
func TestSilentWhilePartnerDelivers(t *testing.T) {
	const size = 20000000
	// deliver gives each of paths' streams 12500 bytes every 10 ms.
	deliver := func(s *Scheduler, from, to int, paths ...PathID) []Action {
		var acts []Action
		for now := from; now <= to; now += 10 {
			for _, p := range paths {
				for _, st := range append([]*stream(nil), s.live...) {
					if st.path == p {
						acts = append(acts, s.OnData(ms(now), st.id, 12500)...)
					}
				}
			}
		}
		return acts
	}
	t.Run("partner delivers", func(t *testing.T) {
		s, req := twoPathStart(t, size)
		deliver(s, 30, 1000, 0, 1)
		if acts := deliver(s, 1010, 1990, 1); len(kinds(acts, Reset)) != 0 {
			t.Fatalf("path 0 silent for less than a second: %v", kinds(acts, Reset))
		}
		acts := deliver(s, 2000, 2000, 1)
		if r := kinds(acts, Reset); len(r) != 1 || r[0].Stream != req[0].Stream {
			t.Fatalf("path 0 silent for 1 s while path 1 delivers: resets %v, want path 0's stream %d", r, req[0].Stream)
		}
		if m := kinds(acts, Request); len(m) != 1 || m[0].Path != 1 || m[0].Start != req[0].Start+98*12500 {
			t.Fatalf("requests %v, want path 0's rest from %d on path 1", m, req[0].Start+98*12500)
		}
		if st := s.Stats(0); st.Stalls != 1 || st.FirstStall != ms(2000) {
			t.Errorf("stats %+v, want one stall at 2 s", st)
		}
		// The answer to a PING sent before the stall does not bring it back.
		if acts := s.OnRTT(ms(2100), 0, 200*time.Millisecond); len(kinds(acts, Request)) != 0 {
			t.Errorf("a PING sent before the stall answered: %v, want no work for path 0 yet", acts)
		}
		if acts := s.OnRTT(ms(2200), 0, 30*time.Millisecond); len(kinds(acts, Request)) != 1 || kinds(acts, Request)[0].Path != 0 {
			t.Errorf("a PING sent after the stall answered: %v, want path 0 to take a share of path 1's work", acts)
		}
	})
	t.Run("both silent", func(t *testing.T) {
		s, _ := twoPathStart(t, size)
		deliver(s, 30, 1000, 0, 1)
		if acts := s.OnRTT(ms(5000), 1, 30*time.Millisecond); len(kinds(acts, Reset)) != 0 || s.Stats(0).Stalls != 0 {
			t.Errorf("both paths silent for 4 s, then a PING answer on path 1: %v, want nothing moved", acts)
		}
	})
	t.Run("burst after a stall of the caller", func(t *testing.T) {
		s, _ := twoPathStart(t, size)
		deliver(s, 30, 1000, 0, 1)
		// Every path's events of the last 2 s are handled at 3 s, path 1's first.
		acts := deliver(s, 3000, 3000, 1, 0)
		if len(kinds(acts, Reset)) != 0 || s.Stats(0).Stalls != 0 {
			t.Errorf("both paths' DATA handled at once after 2 s: %v, want nothing moved", kinds(acts, Reset))
		}
	})
}
