package mph2

import (
	"testing"
	"time"
)

func TestLiveness(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	never := time.Time{}
	type step struct {
		check     int // ms: ask down(at(check), lastFrame)
		lastFrame time.Time
		want      bool
	}
	for _, tc := range []struct {
		name    string
		floor   time.Duration
		rtts    []time.Duration // answered PINGs before the one outstanding
		pingAt  int             // ms; -1: no PING outstanding
		steps   []step
		timeout time.Duration
	}{
		{name: "no PING outstanding, silence is no evidence", floor: time.Second, pingAt: -1,
			steps: []step{{check: 60_000, lastFrame: never, want: false}}, timeout: time.Second},
		{name: "silent path: down at the floor", floor: time.Second, rtts: []time.Duration{50 * time.Millisecond}, pingAt: 0,
			steps: []step{
				{check: 999, lastFrame: at(-100), want: false},
				{check: 1000, lastFrame: at(-100), want: true},
			}, timeout: time.Second},
		{name: "DATA still arriving: slow, not down", floor: time.Second, rtts: []time.Duration{50 * time.Millisecond}, pingAt: 0,
			steps: []step{
				{check: 5000, lastFrame: at(4900), want: false},
				{check: 30_000, lastFrame: at(29_990), want: false},
				// then the path falls silent: down one timeout after its last frame
				{check: 30_989, lastFrame: at(29_990), want: false},
				{check: 30_990, lastFrame: at(29_990), want: true},
			}, timeout: time.Second},
		{name: "long smoothed RTT stretches the timeout", floor: time.Second,
			// mean of the last 5: (2+2+2+2+2)/5 s -> 4 x 2 s = 8 s
			rtts:   []time.Duration{100 * time.Millisecond, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second},
			pingAt: 0,
			steps: []step{
				{check: 3000, lastFrame: at(0), want: false}, // the old fixed 3 s would fire here
				{check: 7999, lastFrame: at(0), want: false},
				{check: 8000, lastFrame: at(0), want: true},
			}, timeout: 8 * time.Second},
		{name: "no frame ever and no RTT sample: the floor", floor: 2 * time.Second, pingAt: 500,
			steps: []step{
				{check: 2499, lastFrame: never, want: false},
				{check: 2500, lastFrame: never, want: true},
			}, timeout: 2 * time.Second},
		{name: "default floor", floor: 0, pingAt: 0,
			steps:   []step{{check: 2999, lastFrame: never, want: false}, {check: 3000, lastFrame: never, want: true}},
			timeout: defaultPathTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveness(tc.floor)
			for _, r := range tc.rtts {
				l.sent(at(-10_000))
				l.answered(r)
			}
			if tc.pingAt >= 0 {
				l.sent(at(tc.pingAt))
			}
			if got := l.timeout(); got != tc.timeout {
				t.Errorf("timeout %v, want %v", got, tc.timeout)
			}
			for _, s := range tc.steps {
				if got := l.silent(at(s.check), s.lastFrame); got != s.want {
					t.Errorf("down at %d ms (last frame %v) = %v, want %v", s.check, s.lastFrame.Sub(t0), got, s.want)
				}
			}
		})
	}
}

// An answer clears the outstanding PING: a path whose PINGs come back is up
// whatever the frame silence in between.
func TestLivenessAnswerClears(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLiveness(time.Second)
	l.sent(t0)
	if !l.silent(t0.Add(time.Second), time.Time{}) {
		t.Fatal("unanswered PING for the floor with no frame: want down")
	}
	l.answered(40 * time.Millisecond)
	if l.silent(t0.Add(time.Hour), time.Time{}) {
		t.Fatal("no PING outstanding: want up")
	}
}
