package h2load

import (
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
