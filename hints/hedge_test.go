package hints

import (
	"testing"
	"time"
)

// equalPaths: two 10 Mbit/s paths of RTT 40 ms, the first's samples
// spread by 5 ms (hints-jitter's and hints-loss's paths).
func equalPaths() []PathState {
	return []PathState{
		{Name: "a", Up: true, RTT: 40 * time.Millisecond, RTTVar: 5 * time.Millisecond, Bandwidth: 1.25e6},
		{Name: "b", Up: true, RTT: 40 * time.Millisecond, Bandwidth: 1.25e6, Cost: 1},
	}
}

const ms = time.Millisecond

func TestShouldHedge(t *testing.T) {
	d := Decision{Path: 0, Second: -1, Hedge: true}
	// 100 KB asked for on a at t0: due by 40 + 2x5 + 80 ms = 130 ms.
	waiting := Transfer{Path: 0, Size: 100000, Start: t0}
	flowing := func(got int64, last time.Duration) Transfer {
		return Transfer{Path: 0, Size: 100000, Received: got, Start: t0, FirstByte: t0.Add(40 * ms), LastByte: t0.Add(last)}
	}
	for _, tc := range []struct {
		name  string
		t     Transfer
		now   time.Duration
		paths func([]PathState)
		d     Decision
		want  int
	}{
		{"no first byte within RTT + 2 deviations", waiting, 45 * ms, nil, d, -1},
		// Waiting 200 ms counts again: 400 ms + 80 ms of body on a,
		// against 40 + 80 ms (and a round trip more) on b.
		{"no first byte after 200 ms", waiting, 200 * ms, nil, d, 1},
		{"no first byte after 200 ms, b down", waiting, 200 * ms, func(p []PathState) { p[1].Up = false }, d, -1},
		{"no first byte after 200 ms, not a hedging rule", waiting, 200 * ms, nil, Decision{Path: 0, Second: -1}, -1},
		// 50 KB in 40 ms (the path's rate): ends at 120 ms, on time.
		{"flowing on time", flowing(50000, 80*ms), 80 * ms, nil, d, -1},
		// 30 KB in 100 ms (a share of a): 70 KB more take 233 ms, ending at
		// 373 ms; b delivers them in 40 + 56 ms, ahead by more than its RTT.
		{"flowing late", flowing(30000, 140*ms), 140 * ms, nil, d, 1},
		// b's 150 KB queued ahead: 40 + 176 ms and its RTT are not ahead of 233 ms.
		{"flowing late, b busy", flowing(30000, 140*ms), 140 * ms, func(p []PathState) { p[1].Queued = 150000 }, d, -1},
		{"no size", Transfer{Path: 0, Size: -1, Start: t0}, 200 * ms, nil, d, -1},
		{"done", flowing(100000, 120*ms), 120 * ms, nil, d, -1},
	} {
		paths := equalPaths()
		if tc.paths != nil {
			tc.paths(paths)
		}
		if got := ShouldHedge(tc.d, tc.t, paths, t0.Add(tc.now)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestBehind(t *testing.T) {
	paths := equalPaths()
	paths[1].Bandwidth = 0 // b idle until the hedge: never measured
	// The request on a: 30 KB of 100 KB by 140 ms (300 KB/s, 233 ms to go).
	orig := Transfer{Path: 0, Size: 100000, Received: 30000, Start: t0, FirstByte: t0.Add(40 * ms), LastByte: t0.Add(140 * ms)}
	// The hedge on b from 30 KB on, got bytes in its first..last.
	hedge := func(got int64, first, last time.Duration) Transfer {
		return Transfer{Path: 1, Size: 100000, From: 30000, Received: 30000 + got, Start: t0.Add(60 * ms), FirstByte: t0.Add(first), LastByte: t0.Add(last)}
	}
	now := t0.Add(140 * ms)
	for _, tc := range []struct {
		name string
		h    Transfer
		want int
	}{
		{"hedge without a byte yet", Transfer{Path: 1, Size: 100000, From: 30000, Received: 30000, Start: t0.Add(60 * ms)}, -1},
		// 20 KB in 10 ms, less than b's RTT: a burst, no rate yet.
		{"hedge's first burst", hedge(20000, 130*ms, 140*ms), -1},
		// 50 KB in 40 ms: 20 KB more in 16 ms.
		{"hedge far ahead", hedge(50000, 100*ms, 140*ms), 0},
		// 8 KB in 40 ms: 62 KB more in 310 ms, not twice 233 ms.
		{"hedge behind, not by twice", hedge(8000, 100*ms, 140*ms), -1},
		// 4 KB in 40 ms: 66 KB more in 660 ms.
		{"hedge far behind", hedge(4000, 100*ms, 140*ms), 1},
	} {
		if got := Behind(orig, tc.h, paths, now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// The request silent for 300 ms, 10 KB short (11 ms at its rate): the
	// silence counts again, 311 ms against the hedge's 40 KB in 53 ms.
	stalled := orig
	stalled.Received = 90000
	if got := Behind(stalled, hedge(30000, 400*ms, 440*ms), paths, t0.Add(440*ms)); got != 0 {
		t.Errorf("stalled request: %d, want 0", got)
	}
}

func TestCopyFits(t *testing.T) {
	for _, tc := range []struct {
		pct                   float64
		charged, placed, rest int64
		want                  bool
	}{
		{0, 1e9, 0, 1e9, true},
		{10, 0, 1000000, 100000, true},
		{10, 0, 1000000, 100001, false},
		{10, 50000, 1000000, 60000, false},
		{10, 0, 0, 1, false},
	} {
		if got := CopyFits(tc.pct, tc.charged, tc.placed, tc.rest); got != tc.want {
			t.Errorf("%+v: %v", tc, got)
		}
	}
}
