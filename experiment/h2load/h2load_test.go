package h2load

import (
	"context"
	"testing"
	"time"
)

func TestRequestsFor(t *testing.T) {
	c := Config{Clients: 10, Streams: 10, Volume: 2 << 30, MaxRequests: 100_000}
	for _, tc := range []struct {
		size int64
		want int
	}{
		{size: 1024, want: 100_000}, // capped
		{size: 1 << 20, want: 2048}, // the volume
		{size: 1 << 30, want: 100},  // a request per stream at least
		{size: 0, want: 100_000},    // no division by zero
	} {
		if got := RequestsFor(tc.size, c); got != tc.want {
			t.Errorf("RequestsFor(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var ts []time.Duration
	for i := 1; i <= 200; i++ {
		ts = append(ts, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 100 * time.Millisecond}, {0.99, 198 * time.Millisecond}, {1, 200 * time.Millisecond}, {0, time.Millisecond}} {
		if got := Percentile(ts, tc.q); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := Percentile(ts[:1], 0.99); got != time.Millisecond {
		t.Errorf("one value: %v", got)
	}
}

// settle polls until the server holds no connection and its CPU time stood
// still over settleQuiet polls, and returns the CPU spent meanwhile; a
// server that never settles is waited for settleMax at most.
func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conns     []int
		cpu       []time.Duration // the CPU time (ms) read at each poll; nil: a millisecond more every poll
		wantPolls int
		wantCPU   time.Duration
	}{
		{"quiet", []int{0}, []time.Duration{0}, settleQuiet, 0},
		{"closing", []int{100, 40, 0}, []time.Duration{10, 20, 20, 20, 30, 30, 30}, 8, 30},
		{"connections stay", []int{1}, []time.Duration{0}, int(settleMax / settlePoll), 0},
		{"busy", []int{0}, nil, int(settleMax / settlePoll), 50}, // a millisecond more every poll
	} {
		polls := 0
		at := func(s []int) int { return s[min(polls-1, len(s)-1)] }
		conns := func() (int, error) { return at(tc.conns), nil }
		cpu := func() (time.Duration, error) {
			if polls == 0 {
				return 0, nil
			}
			if tc.cpu == nil {
				return time.Duration(polls) * time.Millisecond, nil
			}
			return tc.cpu[min(polls-1, len(tc.cpu)-1)] * time.Millisecond, nil
		}
		fake := func(_ context.Context, d time.Duration) error {
			if d != settlePoll {
				t.Errorf("%s: slept %v", tc.name, d)
			}
			polls++
			return nil
		}
		got, err := settle(context.Background(), conns, cpu, fake)
		if err != nil || polls != tc.wantPolls || got != tc.wantCPU*time.Millisecond {
			t.Errorf("%s: %v, %v after %d polls; want %v after %d", tc.name, got, err, polls, tc.wantCPU*time.Millisecond, tc.wantPolls)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := settle(ctx, func() (int, error) { return 1, nil }, func() (time.Duration, error) { return 0, nil }, sleep); err == nil {
		t.Error("settle with a cancelled context: no error")
	}
}
