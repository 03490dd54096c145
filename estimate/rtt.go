package estimate

import (
	"fmt"
	"time"
)

// RTT estimates a path's application-layer round-trip time as the mean of
// its last few HTTP/2 PING samples (MP-H2 §3.4.1). A PING ACK queues behind
// the DATA the server has already buffered, so this approximates how long a
// new request takes to produce its first response byte.
type RTT struct {
	ring []time.Duration
	next int // index the next sample overwrites
	n    int // samples held, up to len(ring)
	sum  time.Duration
}

// NewRTT returns an estimator averaging the last samples PING samples
// (0 means DefaultRTTSamples).
func NewRTT(samples int) (*RTT, error) {
	if samples == 0 {
		samples = DefaultRTTSamples
	}
	if samples < 0 {
		return nil, fmt.Errorf("estimate: RTT samples %d: must be positive", samples)
	}
	return &RTT{ring: make([]time.Duration, samples)}, nil
}

// Add records one PING round-trip time. Non-positive samples are ignored.
func (r *RTT) Add(rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	if r.n == len(r.ring) {
		r.sum -= r.ring[r.next]
	} else {
		r.n++
	}
	r.ring[r.next] = rtt
	r.sum += rtt
	r.next = (r.next + 1) % len(r.ring)
}

// Estimate returns the mean of the held samples, and false if there are none.
func (r *RTT) Estimate() (time.Duration, bool) {
	if r.n == 0 {
		return 0, false
	}
	return r.sum / time.Duration(r.n), true
}
