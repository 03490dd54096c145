package h2load

import (
	"testing"
	"time"
)

func TestRequestsFor(t *testing.T) {
	for _, tc := range []struct {
		rate   float64
		target time.Duration
		want   int
	}{
		{rate: 50_000, target: 3 * time.Second, want: 150_000},
		{rate: 10, target: 3 * time.Second, want: 1_000},            // at least the probe's count
		{rate: 5_000_000, target: 3 * time.Second, want: 1_000_000}, // capped
	} {
		if got := RequestsFor(tc.rate, tc.target, 1_000, 1_000_000); got != tc.want {
			t.Errorf("RequestsFor(%v, %v) = %d, want %d", tc.rate, tc.target, got, tc.want)
		}
	}
}
