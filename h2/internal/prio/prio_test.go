package prio

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Priority
		wantErr bool
	}{
		{"", Default, false},
		{"u=0", Priority{0, false}, false},
		{"u=7, i", Priority{7, true}, false},
		{"i", Priority{3, true}, false},
		{"i=?0", Priority{3, false}, false},
		{"u=5,i=?1", Priority{5, true}, false},
		{"u=8", Default, false},   // out of range: ignored
		{"u=-1", Default, false},  // out of range: ignored
		{"u=1.5", Default, false}, // wrong type: ignored
		{"u=2, foo=\"bar\", x=(a b);q=1", Priority{2, false}, false},
		{"u=2;p=:YWJj:, i", Priority{2, true}, false}, // parameters are skipped
		{"u=1, u=4", Priority{4, false}, false},       // last wins
		{"i=1", Default, false},                       // integer is not a boolean
		{"U=1", Default, true},
		{"u=1,", Default, true},
		{"u=\"x", Default, true},
		{"u=1 i", Default, true},
		{"u=1234567890123456", Default, true},
	}
	for _, tc := range tests {
		got, err := Parse(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("Parse(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for u := uint8(0); u < 8; u++ {
		for _, inc := range []bool{false, true} {
			p := Priority{u, inc}
			got, err := Parse(p.String())
			if err != nil || got != p {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", p.String(), got, err, p)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for u := uint8(0); u < 8; u++ {
		f.Add(Priority{u, u%2 == 0}.String())
	}
	f.Add(`u=2, foo="b\"ar", x=(a b);q=1.5, y=:YWJj:, z=?1`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if p != Default {
				t.Fatalf("error with non-default priority %+v", p)
			}
			return
		}
		if p.Urgency > 7 {
			t.Fatalf("urgency %d out of range for %q", p.Urgency, s)
		}
		if q, err := Parse(p.String()); err != nil || q != p {
			t.Fatalf("re-parse of %q: %+v, %v", p.String(), q, err)
		}
	})
}

// entries gives each stream ID one Entry, as a connection's streams hold
// theirs.
type entries map[uint32]*Entry

func (m entries) of(id uint32) *Entry {
	if m[id] == nil {
		m[id] = &Entry{ID: id}
	}
	return m[id]
}

// serve runs n Next calls, removing a stream after its frames run out.
func serve(s *Scheduler, frames map[uint32]int, n int) string {
	var out []string
	for i := 0; i < n; i++ {
		e, ok := s.Next()
		if !ok {
			break
		}
		out = append(out, itoa(e.ID))
		frames[e.ID]--
		if frames[e.ID] == 0 {
			s.Remove(e)
		}
	}
	return strings.Join(out, " ")
}

func itoa(v uint32) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}

func TestScheduler(t *testing.T) {
	type add struct {
		id uint32
		p  Priority
		n  int
	}
	tests := []struct {
		name string
		adds []add
		want string
	}{
		{"urgency first", []add{{1, Priority{5, false}, 2}, {3, Priority{1, false}, 2}}, "3 3 1 1"},
		{"non-incremental in id order", []add{{5, Default, 2}, {3, Default, 2}}, "3 3 5 5"},
		{"incremental round robin", []add{{1, Priority{3, true}, 2}, {3, Priority{3, true}, 2}, {5, Priority{3, true}, 2}}, "1 3 5 1 3 5"},
		{"non-incremental before incremental", []add{{1, Priority{3, true}, 2}, {3, Default, 1}}, "3 1 1"},
		{"mixed urgencies", []add{{1, Priority{4, true}, 1}, {3, Priority{0, true}, 2}, {5, Priority{0, true}, 1}, {7, Priority{2, false}, 1}}, "3 5 3 7 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Scheduler
			es := entries{}
			frames := map[uint32]int{}
			for _, a := range tc.adds {
				s.Add(es.of(a.id), a.p)
				frames[a.id] = a.n
			}
			if got := serve(&s, frames, 100); got != tc.want {
				t.Fatalf("order %q, want %q", got, tc.want)
			}
			if s.Len() != 0 {
				t.Fatalf("Len = %d after draining", s.Len())
			}
			for id, e := range es {
				if e.Ready() {
					t.Fatalf("stream %d still ready after draining", id)
				}
			}
		})
	}
}

// A stream that becomes ready while others take turns sends its first
// frame next, before those that have had a turn (a small response that
// arrives behind a bulk one: holb), and streams that arrive together keep
// their order.
func TestSchedulerNewcomerFirst(t *testing.T) {
	var s Scheduler
	es := entries{}
	inc := Priority{3, true}
	s.Add(es.of(1), inc)
	s.Add(es.of(3), inc)
	if got := serve(&s, map[uint32]int{1: 9, 3: 9}, 3); got != "1 3 1" {
		t.Fatalf("before the newcomers: %q, want \"1 3 1\"", got)
	}
	s.Add(es.of(5), inc)
	s.Add(es.of(7), inc)
	if got := serve(&s, map[uint32]int{1: 9, 3: 9, 5: 1, 7: 2}, 6); got != "5 7 3 1 7 3" {
		t.Fatalf("with newcomers 5 and 7: %q, want \"5 7 3 1 7 3\"", got)
	}
}

func TestSchedulerUpdateAndRemove(t *testing.T) {
	var s Scheduler
	es := entries{}
	s.Add(es.of(1), Default)
	s.Add(es.of(3), Default)
	s.Add(es.of(1), Priority{0, false}) // already ready: ignored
	s.Update(es.of(3), Priority{0, false})
	if e, _ := s.Next(); e.ID != 3 {
		t.Fatalf("Next = %d after raising 3, want 3", e.ID)
	}
	s.Update(es.of(9), Priority{0, false}) // not ready: ignored
	if es.of(9).Ready() || s.Len() != 2 {
		t.Fatal("Update added a stream that was not ready")
	}
	s.Remove(es.of(3))
	s.Remove(es.of(3))
	if s.Len() != 1 {
		t.Fatalf("Len = %d after removing 3 twice, want 1", s.Len())
	}
	if e, ok := s.Next(); !ok || e.ID != 1 {
		t.Fatalf("Next = %v, %v; want 1", e, ok)
	}
	s.Add(es.of(5), Priority{3, true})
	s.Add(es.of(7), Priority{3, true})
	s.Next() // serves 1 (non-incremental first)
	s.Remove(es.of(1))
	a, _ := s.Next()
	s.Remove(a)
	b, _ := s.Next()
	if a == b {
		t.Fatalf("removed stream %d served again", a.ID)
	}
}

// A random sequence of adds, updates and removes against a model of the
// ready set: Len and Ready agree with it, and Next serves only ready
// streams, at the lowest urgency ready.
func TestSchedulerModel(t *testing.T) {
	var s Scheduler
	es := entries{}
	model := map[uint32]Priority{}
	r := uint32(1)
	rnd := func(n uint32) uint32 { r = r*1103515245 + 12345; return (r >> 16) % n }
	for i := 0; i < 20000; i++ {
		id := 2*rnd(40) + 1
		p := Priority{uint8(rnd(8)), rnd(2) == 0}
		switch rnd(4) {
		case 0:
			s.Add(es.of(id), p)
			if _, ok := model[id]; !ok {
				model[id] = p
			}
		case 1:
			s.Update(es.of(id), p)
			if _, ok := model[id]; ok {
				model[id] = p
			}
		case 2:
			s.Remove(es.of(id))
			delete(model, id)
		case 3:
			e, ok := s.Next()
			if ok != (len(model) > 0) {
				t.Fatalf("step %d: Next ok %v with %d ready", i, ok, len(model))
			}
			if !ok {
				continue
			}
			q, ready := model[e.ID]
			if !ready {
				t.Fatalf("step %d: Next served %d, not ready", i, e.ID)
			}
			for _, o := range model {
				if o.Urgency < q.Urgency {
					t.Fatalf("step %d: served urgency %d with %d ready", i, q.Urgency, o.Urgency)
				}
			}
		}
		if s.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", i, s.Len(), len(model))
		}
		if s.buckets != nil {
			for u, b := range s.buckets {
				// The newcomers, served next, lie in rr without wrapping.
				if b.fresh < 0 || b.next+b.fresh > len(b.rr) || len(b.rr) > 0 && b.next >= len(b.rr) {
					t.Fatalf("step %d: urgency %d: next %d, fresh %d of %d", i, u, b.next, b.fresh, len(b.rr))
				}
			}
		}
		for id, e := range es {
			if _, ok := model[id]; ok != e.Ready() {
				t.Fatalf("step %d: stream %d Ready %v, model %v", i, id, e.Ready(), ok)
			}
		}
	}
}

func BenchmarkSchedulerNext(b *testing.B) {
	var s Scheduler
	es := entries{}
	for id := uint32(1); id < 200; id += 2 {
		s.Add(es.of(id), Priority{Urgency: uint8(id % 8), Incremental: id%3 == 0})
	}
	b.ReportAllocs()
	for b.Loop() {
		e, _ := s.Next()
		s.Remove(e)
		s.Add(e, Priority{Urgency: uint8(e.ID % 8), Incremental: e.ID%3 == 0})
	}
}

// Reset frees only an empty scheduler, which then works as new.
func TestSchedulerReset(t *testing.T) {
	var s Scheduler
	es := entries{}
	if !s.Reset() {
		t.Error("a new scheduler is not empty")
	}
	s.Add(es.of(1), Priority{Urgency: 3})
	if s.Reset() {
		t.Error("Reset dropped a ready stream")
	}
	if e, ok := s.Next(); !ok || e.ID != 1 {
		t.Errorf("Next = %v, %v; want 1", e, ok)
	}
	s.Remove(es.of(1))
	if !s.Reset() || s.Len() != 0 {
		t.Error("Reset of an emptied scheduler")
	}
	if _, ok := s.Next(); ok {
		t.Error("Next after Reset returned a stream")
	}
	s.Add(es.of(5), Priority{Urgency: 1, Incremental: true})
	if e, ok := s.Next(); !ok || e.ID != 5 {
		t.Errorf("after Reset, Next = %v, %v; want 5", e, ok)
	}
}
