package replay

import (
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/page"
)

// link is the fake network of the tests: a download holds one of slots
// (connections or streams) for rtt + size/bytesPerMs, and waits FIFO for a
// slot when all are busy.
type link struct {
	rtt        time.Duration
	bytesPerMs int64
	slots      int
}

func (l link) duration(size int64) time.Duration {
	return l.rtt + time.Duration(size)*time.Millisecond/time.Duration(l.bytesPerMs)
}

// The pReplay examples' objects get the class default of 24000 bytes each
// (page.AssignSizes: all are .js), so on this link a free download takes
// D = 50 ms + 24000/240 ms = 150 ms.
var testLink = link{rtt: 50 * time.Millisecond, bytesPerMs: 240, slots: 6}

// simulation is a discrete-event run of a Walker over a link with a fake
// clock: events complete in time order (ties in the order they were made).
type simulation struct {
	p       *page.Page
	w       *Walker
	l       link
	now     time.Time
	pending []simEvent
	queue   []Action // downloads waiting for a slot
	busy    int
	actions []int // actions emitted per activity
	seq     int
}

type simEvent struct {
	at       time.Time
	activity int
	download bool
	seq      int
}

func simulate(t *testing.T, p *page.Page, l link, opts Options) *simulation {
	t.Helper()
	s := &simulation{p: p, w: NewWalker(p, opts), l: l, now: time.Unix(1000, 0), actions: make([]int, len(p.Activities))}
	s.handle(s.w.Start(s.now))
	for len(s.pending) > 0 {
		next := 0
		for i, e := range s.pending {
			if e.at.Before(s.pending[next].at) || (e.at.Equal(s.pending[next].at) && e.seq < s.pending[next].seq) {
				next = i
			}
		}
		e := s.pending[next]
		s.pending = append(s.pending[:next], s.pending[next+1:]...)
		s.now = e.at
		if e.download {
			s.busy--
		}
		acts, err := s.w.Complete(e.activity, s.now)
		if err != nil {
			t.Fatal(err)
		}
		s.handle(acts)
	}
	if !s.w.Done() {
		t.Fatalf("%s: no events left but the walk is not done", p.Name)
	}
	return s
}

func (s *simulation) push(d time.Duration, activity int, download bool) {
	s.seq++
	s.pending = append(s.pending, simEvent{s.now.Add(d), activity, download, s.seq})
}

func (s *simulation) handle(acts []Action) {
	for _, a := range acts {
		s.actions[a.Activity]++
		switch a.Kind {
		case StartDownload:
			s.queue = append(s.queue, a)
		case StartComputation:
			s.push(a.Duration, a.Activity, false)
		}
	}
	for s.busy < s.l.slots && len(s.queue) > 0 {
		a := s.queue[0]
		s.queue = s.queue[1:]
		s.busy++
		s.push(s.l.duration(s.p.Objects[a.Object].Size), a.Activity, true)
	}
}

// pReplayExamples are the PLTs of test1..4.json worked out by hand, with
// D = 150 ms per download on a free slot (testLink).
var pReplayExamples = []struct {
	file    string
	slots   int
	compute bool
	plt     time.Duration
	why     string
}{
	{"test1.json", 6, true, 1300 * time.Millisecond,
		"r1_d 0-150; r1_c1 150-650; r2_d starts with r1_c1 (time >= 0): 150-300; r2_c1 300-1300"},
	{"test1.json", 6, false, 300 * time.Millisecond,
		"r1_d 0-150; r1_c1 at 150 takes no time; r2_d 150-300; r2_c1 at 300"},
	{"test2.json", 6, true, 1300 * time.Millisecond,
		"r1_d 0-150; r1_c1 150-650; r2_d 150-300; r2_c1 300-800; r1_c2 waits for r2_c1 (time < 0): 800-1300; r3_d starts with r1_c2: 800-950"},
	{"test2.json", 6, false, 450 * time.Millisecond,
		"r1_d 0-150; r2_d 150-300; r2_c1, r1_c2 at 300; r3_d 300-450"},
	{"test3.json", 6, true, 2050 * time.Millisecond,
		"r1_d 0-150; r1_c1 150-650; r2_d, r3_d 150-300; r2_c1 300-1000; r3_c1 waits for r2_c1: 1000-1200; " +
			"r1_c2 1200-1700; r4_d 1200-1350; r5_d waits for r1_c2's end: 1700-1850; r5_c1 1850-2050"},
	{"test3.json", 6, false, 450 * time.Millisecond,
		"r1_d 0-150; r2_d, r3_d 150-300; r2_c1, r3_c1, r1_c2 at 300; r4_d, r5_d 300-450; r5_c1 at 450"},
	{"test3.json", 1, false, 750 * time.Millisecond,
		"one slot: r1_d 0-150; r2_d 150-300; r3_d queued, 300-450; r3_c1, r1_c2 at 450; r4_d 450-600; r5_d queued, 600-750"},
	{"test3.json", 1, true, 2050 * time.Millisecond,
		"one slot: r3_d 300-450 is hidden behind r2_c1 (300-1000); the rest as with 6 slots"},
	{"test4.json", 6, true, 2050 * time.Millisecond, "test3's graph with all objects on one path"},
	{"test4.json", 2, false, 450 * time.Millisecond, "two slots suffice: at most two downloads at once"},
}

func TestWalkerPReplayExamples(t *testing.T) {
	for _, c := range pReplayExamples {
		l := testLink
		l.slots = c.slots
		p := testpages.Load(t, c.file)
		s := simulate(t, p, l, Options{Compute: c.compute})
		if got := s.w.PLT(); got != c.plt {
			t.Errorf("%s slots=%d compute=%v: PLT %v, want %v (%s)", c.file, c.slots, c.compute, got, c.plt, c.why)
		}
	}
}

// checkWalk checks that every activity ran once and started exactly when
// its last dependency allowed it: a dependency with time >= 0 on the
// predecessor's start, one with time < 0 on its completion.
func checkWalk(t *testing.T, s *simulation) {
	t.Helper()
	p, w := s.p, s.w
	allowed := make([]time.Duration, len(p.Activities))
	for _, d := range p.Deps {
		fs, fe, _ := w.Timing(d.From)
		at := fe
		if d.OnStart {
			at = fs
		}
		allowed[d.To] = max(allowed[d.To], at)
	}
	for i, a := range p.Activities {
		start, end, completed := w.Timing(i)
		if !completed {
			t.Errorf("%s: activity %s never completed", p.Name, a.ID)
			continue
		}
		if start != allowed[i] {
			t.Errorf("%s: activity %s started at %v, its dependencies allowed it at %v", p.Name, a.ID, start, allowed[i])
		}
		want := 1 // downloads, and computations that take time, are actions
		if a.Kind == page.Computation && (!w.opts.Compute || a.Time == 0) {
			want = 0
		}
		if s.actions[i] != want {
			t.Errorf("%s: activity %s started %d times, want %d", p.Name, a.ID, s.actions[i], want)
		}
		if end < start || end > w.PLT() {
			t.Errorf("%s: activity %s ran %v-%v, PLT %v", p.Name, a.ID, start, end, w.PLT())
		}
	}
}

func TestWalkerTableIVPages(t *testing.T) {
	for _, tv := range page.TableIV {
		p := testpages.Load(t, tv.Graph+".json")
		for _, slots := range []int{1, 6, 100} {
			for _, compute := range []bool{false, true} {
				l := testLink
				l.slots = slots
				s := simulate(t, p, l, Options{Compute: compute})
				checkWalk(t, s)
				if t.Failed() {
					t.Fatalf("%s slots=%d compute=%v", tv.Name, slots, compute)
				}
			}
		}
	}
}

func TestWalkerComputeTimeCounts(t *testing.T) {
	// With compute times the load cannot end before the longest chain of
	// computations; Google's page has 985 ms of them, mostly in a chain.
	p := testpages.Load(t, "www.google.com.hk_.json")
	off := simulate(t, p, testLink, Options{}).w.PLT()
	on := simulate(t, p, testLink, Options{Compute: true}).w.PLT()
	if on <= off {
		t.Errorf("PLT with compute %v <= without %v", on, off)
	}
}

func TestWalkerCompleteErrors(t *testing.T) {
	p := testpages.Load(t, "test1.json")
	w := NewWalker(p, Options{Compute: true})
	t0 := time.Unix(0, 0)
	acts := w.Start(t0)
	if len(acts) != 1 || acts[0].Kind != StartDownload || p.Activities[acts[0].Activity].ID != "r1_d" {
		t.Fatalf("Start: %v, want the download of r1", acts)
	}
	r2, _ := p.ActivityIndex("r2_d")
	if _, err := w.Complete(r2, t0); err == nil {
		t.Error("completing an activity that has not started: no error")
	}
	if _, err := w.Complete(len(p.Activities), t0); err == nil {
		t.Error("completing an activity out of range: no error")
	}
	if _, err := w.Complete(acts[0].Activity, t0.Add(-time.Second)); err == nil {
		t.Error("completing before the start: no error")
	}
	next, err := w.Complete(acts[0].Activity, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// r1_c1 (500 ms) and, as it starts, r2_d.
	if len(next) != 2 || next[0].Kind != StartComputation || next[0].Duration != 500*time.Millisecond || next[1].Kind != StartDownload {
		t.Errorf("after r1_d: %v", next)
	}
	if _, err := w.Complete(acts[0].Activity, t0.Add(time.Second)); err == nil {
		t.Error("completing an activity twice: no error")
	}
}
