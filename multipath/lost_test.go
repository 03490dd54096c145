package multipath

import (
	"testing"
)

// runOut answers every request in acts at once and in full (206, all its
// bytes at now), following the requests that causes, and returns the bytes
// delivered per offset and whether the download finished.
func runOut(t *testing.T, s *Scheduler, now int, size int64, acts []Action, got []int) bool {
	t.Helper()
	queue := append([]Action(nil), acts...)
	done := false
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		switch a.Kind {
		case Deliver:
			for i := a.Start; i < a.End; i++ {
				got[i]++
			}
		case Done:
			done = true
		case Request:
			more, err := s.OnHeaders(ms(now), a.Stream, 206, size)
			if err != nil {
				t.Fatal(err)
			}
			queue = append(queue, more...)
			end := a.End
			if end < 0 {
				end = size
			}
			queue = append(queue, s.OnData(ms(now), a.Stream, end-a.Start)...)
		}
	}
	return done
}

// A server killed mid-download: both paths lose their connections. The
// download does not fail while they are redialed; the ranges they owed
// wait, no Reset is sent on the dead connections, and the first path back
// (fresh estimates) asks for every byte not yet delivered, each once.
func TestLostPathsWaitAndComeBack(t *testing.T) {
	const size = 2000000
	s, req := twoPathStart(t, size)
	got := make([]int, size)
	for _, r := range req {
		for _, a := range s.OnData(ms(50), r.Stream, 100000) {
			if a.Kind == Deliver {
				for i := a.Start; i < a.End; i++ {
					got[i]++
				}
			}
		}
	}
	for p := range 2 {
		acts, err := s.OnPathLost(ms(100+p), PathID(p))
		if err != nil {
			t.Fatalf("path %d lost: %v", p, err)
		}
		// Path 0's range moves to path 1, whose connection is (unknown to
		// the scheduler) dead too; once path 1 is lost, nothing is left to ask.
		if len(kinds(acts, Reset)) != 0 || p == 1 && len(acts) != 0 {
			t.Fatalf("path %d lost: %v, want no Reset on a dead connection, and no request once no path is up", p, acts)
		}
		if !s.Suspended(PathID(p)) {
			t.Errorf("lost path %d not suspended", p)
		}
	}
	// The same loss reported again (the stream's reader and the path's
	// watcher both see it) changes nothing.
	if acts, err := s.OnPathLost(ms(150), 0); err != nil || len(acts) != 0 {
		t.Fatalf("a second loss report: %v, %v", acts, err)
	}
	acts, err := s.OnPathResume(ms(4000), 1)
	if err != nil {
		t.Fatal(err)
	}
	reqs := kinds(acts, Request)
	if len(reqs) == 0 {
		t.Fatal("path 1 back: no request for the bytes the paths owed")
	}
	var asked int64
	for _, r := range reqs {
		if r.Path != 1 {
			t.Errorf("request %v on path %d, which is still lost", r, r.Path)
		}
		asked += r.End - r.Start
	}
	if asked != size-200000 {
		t.Errorf("path 1 back asks for %d bytes, want the %d not delivered", asked, size-200000)
	}
	if est := s.Estimate(ms(4000), 1); est.Bandwidth != mbit(10) {
		t.Errorf("redialed path's estimate %v Mbit/s, want its prior's 10 (fresh)", est.Bandwidth*8/1e6)
	}
	if !runOut(t, s, 4100, size, acts, got) {
		t.Fatal("the requests after the comeback answered in full: no Done")
	}
	for i, n := range got {
		if n != 1 {
			t.Fatalf("byte %d delivered %d times", i, n)
		}
	}
}

// A lost path given up for good (the redialing ran out) while the other is
// also lost fails the download; while one may still come back it does not.
func TestLostPathGivenUp(t *testing.T) {
	s, _ := twoPathStart(t, 2000000)
	for p := range 2 {
		if _, err := s.OnPathLost(ms(100), PathID(p)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.OnPathDown(ms(5000), 0); err != nil {
		t.Errorf("path 0 given up while path 1 is redialed: %v", err)
	}
	if _, err := s.OnPathDown(ms(6000), 1); err == nil {
		t.Error("both paths given up: no error")
	}
}

// The request that was to learn the size is lost with its connection: the
// path back asks for the whole object again.
func TestLostBeforeTheSizeIsKnown(t *testing.T) {
	s := mustNew(t, Config{Paths: 1, Size: -1})
	req := kinds(s.OnStart(ms(0)), Request)
	if len(req) != 1 {
		t.Fatalf("start: %v", req)
	}
	if acts, err := s.OnPathLost(ms(10), 0); err != nil || len(acts) != 0 {
		t.Fatalf("lost: %v, %v", acts, err)
	}
	acts, err := s.OnPathResume(ms(2000), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := kinds(acts, Request)
	if len(r) != 1 || r[0].Start != 0 || r[0].End != -1 || r[0].Stream == req[0].Stream {
		t.Fatalf("back: %v, want a new whole-object request", r)
	}
}

// A path lost while another is up: its ranges move there at once.
func TestLostPathRangesMove(t *testing.T) {
	const size = 2000000
	s, req := twoPathStart(t, size)
	acts, err := s.OnPathLost(ms(100), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds(acts, Reset)) != 0 {
		t.Errorf("lost: %v, want no Reset on a dead connection", acts)
	}
	moved := kinds(acts, Request)
	if len(moved) != 1 || moved[0].Path != 0 || moved[0].Start != req[1].Start {
		t.Fatalf("lost: requests %v, want path 1's range from %d on path 0", moved, req[1].Start)
	}
}
