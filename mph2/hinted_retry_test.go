package mph2

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/shunt-net/shunt/h2"
)

// A copy's error from its connection lets the object be asked for again;
// one from its response (or a stream the server reset alone) does not.
func TestConnLost(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{finalError{errors.New("status 404")}, false},
		{fmt.Errorf("path a: %w", finalError{errors.New("ETag differs")}), false},
		{h2.StreamResetError{StreamID: 3, Code: http2.ErrCodeInternal, Remote: true}, false},
		{fmt.Errorf("%w: EOF", h2.ErrConnClosed), true},
		{fmt.Errorf("refused: %w", h2.ErrNotProcessed), true},
		{fmt.Errorf("body ended after 10 of 20 bytes: %w", io.ErrUnexpectedEOF), true},
		{errors.New("read tcp: connection reset by peer"), true},
	} {
		if got := connLost(tc.err); got != tc.want {
			t.Errorf("connLost(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The object is asked again from the first byte no copy holds: by Range
// when it has a validator, else whole with the bytes held checked.
func TestPlanResume(t *testing.T) {
	for _, tc := range []struct {
		spans []span
		v     string
		want  resume
	}{
		{nil, `"e"`, resume{}},
		{[]span{{0, 0}}, `"e"`, resume{}},
		{[]span{{0, 3000}}, `"e"`, resume{off: 3000}},
		{[]span{{0, 3000}}, "", resume{check: 3000}},
		// A redundant copy ahead of the primary; a tail from 2000 that got
		// further than both.
		{[]span{{0, 1000}, {0, 2500}, {2000, 5000}}, `"e"`, resume{off: 7000}},
		// A tail beyond a gap does not count.
		{[]span{{0, 1000}, {4000, 500}}, "", resume{check: 1000}},
		{[]span{{4000, 500}, {0, 4000}}, `"e"`, resume{off: 4500}},
	} {
		if got := planResume(tc.spans, tc.v); got != tc.want {
			t.Errorf("planResume(%v, %q) = %+v, want %+v", tc.spans, tc.v, got, tc.want)
		}
	}
}

func TestReissuePath(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		live   []bool
		rtt    []time.Duration
		failed int
		want   int
	}{
		{[]bool{true, true}, []time.Duration{80 * ms, 20 * ms}, 1, 0},
		{[]bool{true, true}, []time.Duration{80 * ms, 20 * ms}, 0, 1},
		{[]bool{false, true}, []time.Duration{80 * ms, 20 * ms}, 1, 1}, // refused stream: the same path again
		{[]bool{true, false}, []time.Duration{80 * ms, 20 * ms}, 1, 0},
		{[]bool{false, false}, []time.Duration{80 * ms, 20 * ms}, 0, -1},
		{[]bool{true, true, true}, []time.Duration{80 * ms, 0, 30 * ms}, 0, 2},
		{[]bool{true, true, true}, []time.Duration{0, 50 * ms, 30 * ms}, 2, 1},
		{[]bool{true, true, true}, []time.Duration{0, 0, 30 * ms}, 2, 0},
	} {
		if got := reissuePath(tc.live, tc.rtt, tc.failed); got != tc.want {
			t.Errorf("reissuePath(%v, %v, %d) = %d, want %d", tc.live, tc.rtt, tc.failed, got, tc.want)
		}
	}
}

// On a fake clock: the first re-issue and every one after progress go at
// once; those without progress back off as redials do; none starts past
// the stall timeout since the last progress.
func TestReissuer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	stall := 2 * time.Second
	var r reissuer
	now, progress := t0.Add(500*ms), t0.Add(400*ms)
	step := func(want time.Duration, wantOK bool) {
		t.Helper()
		w, ok := r.wait(now, progress, stall)
		if w != want || ok != wantOK {
			t.Fatalf("at %v (progress %v): wait %v %v, want %v %v", now.Sub(t0), progress.Sub(t0), w, ok, want, wantOK)
		}
		now = now.Add(w)
	}
	step(0, true)      // the first: at once
	step(100*ms, true) // failed again without a byte: backed off
	step(200*ms, true) //
	now = now.Add(50 * ms)
	progress = now          // a byte came
	step(0, true)           // at once again
	step(100*ms, true)      // and the backoff starts over
	step(200*ms, true)      //
	step(400*ms, true)      //
	step(800*ms, true)      // at progress + 1.5 s
	step(0, false)          // the next (1 s) would start past progress + 2 s
	now = t0.Add(time.Hour) // progress long ago: even "at once" is too late
	progress = now.Add(-3 * time.Second)
	r = reissuer{}
	step(0, false)
	if r.n != 0 {
		t.Errorf("%d re-issues counted after giving up", r.n)
	}
}
