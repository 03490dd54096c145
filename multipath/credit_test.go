package multipath

import (
	"testing"
	"time"

	"github.com/shunt-net/shunt/estimate"
)

// TestCreditSharedAcrossPathStreams: Ahead bounds a path's credit, not each
// stream's. A stream pipelined on a path gets only what the credit of the
// path's earlier streams leaves, and more as their bytes arrive; credit past
// what the server will send on them (their response's end) holds nothing
// back. A first window also holds the credit earlier streams free as their
// last credited bytes arrive.
func TestCreditSharedAcrossPathStreams(t *testing.T) {
	const size = 1000000
	s := mustNew(t, Config{Paths: 2, Size: size, Prior: []estimate.Path{
		{Bandwidth: mbit(10), RTT: 28 * time.Millisecond},
		{Bandwidth: mbit(5), RTT: 65 * time.Millisecond},
	}})
	req := kinds(s.OnStart(ms(0)), Request)
	if len(req) != 2 || req[1].Path != 1 {
		t.Fatalf("OnStart: %v, want a request per path", req)
	}
	lte := req[1]
	if _, err := s.OnHeaders(ms(65), lte.Stream, 206, size); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Credit(ms(65), lte.Stream), s.Ahead(ms(65), 1); got != want {
		t.Fatalf("credit of lte's only stream: %d, want Ahead %d", got, want)
	}
	s.OnGrant(lte.Stream, lte.Start+s.Ahead(ms(65), 1))
	// Losing wifi pipelines its bytes on lte behind the credited ones.
	acts, err := s.OnPathDown(ms(70), 0)
	if err != nil {
		t.Fatal(err)
	}
	req = kinds(acts, Request)
	if len(req) != 1 || req[0].Path != 1 {
		t.Fatalf("wifi down: %v, want one request on lte", req)
	}
	piped := req[0].Stream
	// lte alone keeps its rest whatever happens, so its Ahead grew by a
	// recovery lead: the next DATA would grant it.
	s.OnGrant(lte.Stream, lte.Start+s.Ahead(ms(70), 1))
	if got := s.Credit(ms(70), piped); got != 0 {
		t.Errorf("credit of a stream pipelined behind Ahead of credit: %d, want 0", got)
	}
	if got := s.FirstCredit(ms(70), piped); got != 0 {
		t.Errorf("first credit of a stream pipelined behind Ahead of credit short of its end: %d, want 0", got)
	}
	const n = 10000 // under a sample: the bandwidth stays the prior's
	s.OnData(ms(80), lte.Stream, n)
	if got := s.Credit(ms(80), piped); got != n {
		t.Errorf("credit of the pipelined stream after %d bytes arrived ahead of it: %d, want %d", n, got, n)
	}
	// Near the end of lte's response, credit past it: only the bytes still
	// to come on it count.
	pos, now := lte.Start+n, 80
	for pos < lte.End-s.Ahead(ms(now), 1)/2 {
		now += 10
		s.OnData(ms(now), lte.Stream, 6250) // 5 Mbit/s
		pos += 6250
	}
	s.OnGrant(lte.Stream, size+s.Ahead(ms(now), 1))
	if got, want := s.Credit(ms(now), piped), s.Ahead(ms(now), 1)-(lte.End-pos); got != want {
		t.Errorf("credit behind a stream credited past its end, %d bytes before it: %d, want %d", lte.End-pos, got, want)
	}
	// Those bytes free their credit with no grant to pass it on: a first
	// window given now must hold it.
	if got, want := s.FirstCredit(ms(now), piped), s.Ahead(ms(now), 1); got != want {
		t.Errorf("first credit behind a stream credited to its end: %d, want Ahead %d", got, want)
	}
}

// TestLearnedRTTIsUnqueued: what a download leaves for the next one's prior
// is the unqueued round trip, not the PING mean, which carries the queue
// this download built. The next download starts on idle connections: its
// first split is Equation 1 with the unqueued delays, and its first credit
// is sized by them.
func TestLearnedRTTIsUnqueued(t *testing.T) {
	const size = 1000000
	base := [2]time.Duration{28 * time.Millisecond, 65 * time.Millisecond}
	queued := [2]time.Duration{150 * time.Millisecond, 250 * time.Millisecond}
	rates := [2]int64{12500, 6250} // bytes per 10 ms: 10 and 5 Mbit/s
	s := mustNew(t, Config{Paths: 2, Size: size})
	s.OnStart(ms(0))
	for p := range 2 {
		if _, err := s.OnHeaders(epoch.Add(base[p]), StreamID(p+1), 206, size); err != nil {
			t.Fatal(err)
		}
	}
	now := 70
	for ; now <= 300; now += 10 {
		for p := range 2 {
			s.OnData(ms(now), StreamID(p+1), rates[p])
		}
	}
	var prior []estimate.Path
	var conds []Cond
	for p := range 2 {
		for range estimate.DefaultRTTSamples {
			s.OnRTT(ms(now), PathID(p), queued[p])
		}
		e := s.Learned(ms(now), PathID(p))
		if e.RTT != base[p] {
			t.Errorf("path %d: learned RTT %v after %v PINGs on a %v path, want %v", p, e.RTT, queued[p], base[p], base[p])
		}
		if want := s.Estimate(ms(now), PathID(p)).Bandwidth; e.Bandwidth != want {
			t.Errorf("path %d: learned bandwidth %.0f, want the estimate %.0f", p, e.Bandwidth, want)
		}
		prior = append(prior, e)
		conds = append(conds, Cond{Bandwidth: e.Bandwidth, Delay: base[p]})
	}
	next := mustNew(t, Config{Paths: 2, Size: size, Prior: prior})
	shares, _ := Split(size, conds)
	req := kinds(next.OnStart(ms(0)), Request)
	if len(req) != 2 {
		t.Fatalf("next download's OnStart: %v, want a request per path", req)
	}
	for k, a := range req {
		if a.End-a.Start != shares[k] {
			t.Errorf("next download's first split: %v, want Equation 1 with the unqueued delays %v", req, shares)
			break
		}
	}
	want := int64(prior[1].Bandwidth*(base[1]+DefaultGrantLead).Seconds()) + DefaultLeadMargin
	if got := next.Ahead(ms(0), 1); got != want {
		t.Errorf("next download's first lte credit: %d, want %d (sized by the unqueued RTT)", got, want)
	}
}
