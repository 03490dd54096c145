// Package estimate holds MP-H2's per-path network estimators (MP-H2 §3.4.1 and
// §3.5 footnote 3): a bandwidth estimator fed with received bytes, an
// application-layer RTT estimator fed with HTTP/2 PING samples, and a cache
// that keeps both across transfers (the +BW/L variant of §3.6).
//
// Nothing here reads a clock or does I/O: callers pass the time of each event,
// so every estimate is reproducible under a fake clock.
package estimate

import (
	"fmt"
	"math"
	"time"
)

// Defaults from the paper.
const (
	DefaultSampleBytes  = 20 << 10               // a throughput sample per >= 20 KB (KiB) received
	DefaultWindowBytes  = 500 << 10              // samples averaged over the last 500 KB
	DefaultPingInterval = 100 * time.Millisecond // one HTTP/2 PING per path every 100 ms
	DefaultRTTSamples   = 5                      // RTT is the mean of the last 5 PING samples
	// DefaultHalfLife is the age at which a sample weighs half as much as the
	// newest one. The paper gives no weights. Ages are wall-clock time, not
	// sample counts: a burst of samples closing within a millisecond (TCP
	// handing over data held back behind a lost segment) must not push the
	// sample that spans the stall out of the average. 100 ms follows a
	// 5 -> 1 Mbit/s drop within some 300 ms.
	DefaultHalfLife = 100 * time.Millisecond
)

// BandwidthConfig sizes a Bandwidth estimator. Zero fields take the defaults.
type BandwidthConfig struct {
	SampleBytes int64         // bytes per throughput sample
	WindowBytes int64         // bytes of recent samples the average covers
	HalfLife    time.Duration // age at which a sample's weight halves
}

// Bandwidth estimates one path's throughput from the bytes it receives.
//
// The paper says only "a weighted moving average of the most recent samples
// collected over a window of 500KB". The choices made here:
//   - A sample closes at the first receive event at which at least SampleBytes
//     have arrived since the previous sample closed; its rate is those bytes
//     over the time between the two events. The bytes of the event that opens a
//     sample period are not counted: their arrival time span is unknown.
//   - The window keeps the newest samples, dropping the oldest while the others
//     still cover WindowBytes.
//   - The average is a ratio estimator with exponentially decaying weights:
//     with samples of b_k bytes over t_k ending a_k before the newest one
//     ends, w_k = 2^(-a_k/HalfLife) and estimate = sum(w_k*b_k) /
//     sum(w_k*t_k). Dividing weighted bytes by weighted time, rather than
//     averaging per-sample rates, keeps bursty arrivals from biasing the
//     estimate up, and lets a slow sample (which lasts longer) weigh more,
//     so a drop in bandwidth shows quickly.
//   - Weights decay with time, not with the number of newer samples. After
//     a loss TCP holds received data back until the retransmission fills the
//     hole, then hands it over at once: the link delivered those bytes during
//     the stall, but they close several samples of near-zero duration. Counted
//     per sample, that burst would outweigh the sample spanning the stall and
//     report several times the link rate; weighted by time, the stall and the
//     burst average out to the rate the link had.
//   - A sample still open for twice as long as the current estimate says it
//     should take counts as the newest sample (ending now), so a stalled path
//     lowers its estimate before it has received a full sample.
//   - Idle discards the open sample, so the gap while a path waits for a
//     response is not taken for slow transfer.
type Bandwidth struct {
	sampleBytes, windowBytes int64

	halfLife time.Duration
	samples  []sample // oldest first
	sumB     int64    // bytes in samples

	open    bool      // a sample period has started
	start   time.Time // when it started
	pending int64     // bytes received in it so far
}

type sample struct {
	b   int64     // bytes
	t   int64     // ns
	end time.Time // when it closed
}

// NewBandwidth returns an estimator with no samples.
func NewBandwidth(cfg BandwidthConfig) (*Bandwidth, error) {
	if cfg.SampleBytes == 0 {
		cfg.SampleBytes = DefaultSampleBytes
	}
	if cfg.WindowBytes == 0 {
		cfg.WindowBytes = DefaultWindowBytes
	}
	if cfg.HalfLife == 0 {
		cfg.HalfLife = DefaultHalfLife
	}
	if cfg.SampleBytes < 0 || cfg.WindowBytes < cfg.SampleBytes || cfg.HalfLife < 0 {
		return nil, fmt.Errorf("estimate: bandwidth config SampleBytes=%d WindowBytes=%d HalfLife=%v: need 0 < SampleBytes <= WindowBytes, HalfLife > 0",
			cfg.SampleBytes, cfg.WindowBytes, cfg.HalfLife)
	}
	return &Bandwidth{sampleBytes: cfg.SampleBytes, windowBytes: cfg.WindowBytes, halfLife: cfg.HalfLife}, nil
}

// OnData records n bytes received at now.
func (b *Bandwidth) OnData(now time.Time, n int64) {
	if !b.open {
		b.open, b.start, b.pending = true, now, 0
		return
	}
	b.pending += n
	d := now.Sub(b.start)
	if b.pending < b.sampleBytes || d <= 0 {
		return
	}
	b.add(sample{b: b.pending, t: int64(d), end: now})
	b.start, b.pending = now, 0
}

// Idle tells the estimator the path has nothing in flight: the open sample is
// dropped and the next OnData starts a new one.
func (b *Bandwidth) Idle() { b.open = false }

func (b *Bandwidth) add(s sample) {
	b.samples = append(b.samples, s)
	b.sumB += s.b
	drop := 0
	for len(b.samples)-drop > 1 && b.sumB-b.samples[drop].b >= b.windowBytes {
		b.sumB -= b.samples[drop].b
		drop++
	}
	if drop > 0 {
		// Shift down rather than reslice, so the backing array does not grow.
		b.samples = b.samples[:copy(b.samples, b.samples[drop:])]
	}
}

// Estimate returns the bandwidth in bytes per second at now, and false before
// the first sample.
func (b *Bandwidth) Estimate(now time.Time) (float64, bool) {
	if len(b.samples) == 0 {
		return 0, false
	}
	newest := b.samples[len(b.samples)-1].end
	wb, wt := b.weighted(newest)
	est := wb / wt * 1e9
	if !b.open {
		return est, true
	}
	d := now.Sub(b.start)
	// Late means twice the expected duration: a sample that is merely a
	// frame short of closing must not look like a stall.
	if float64(d) <= 2*float64(b.sampleBytes)/est*1e9 {
		return est, true
	}
	// The late open sample is the newest, ending now: the others age to now.
	wb, wt = b.weighted(now)
	return (float64(b.pending) + wb) / (float64(d) + wt) * 1e9, true
}

// weighted returns the samples' bytes and durations weighted by their age
// at ref.
func (b *Bandwidth) weighted(ref time.Time) (wb, wt float64) {
	for _, s := range b.samples {
		w := math.Exp2(-float64(ref.Sub(s.end)) / float64(b.halfLife))
		wb += w * float64(s.b)
		wt += w * float64(s.t)
	}
	return wb, wt
}

// Samples returns how many samples the window holds.
func (b *Bandwidth) Samples() int { return len(b.samples) }
