package dash

import (
	"math"
	"sort"
	"time"
)

// State is what an ABR sees before choosing the next segment's representation.
type State struct {
	Buffer   time.Duration // media buffered ahead of the playhead
	Current  int           // the last segment's representation; -1 before the first
	Bitrates []int64       // the ladder, bit/s, lowest first
	SegDur   time.Duration
}

// ABR chooses each segment's representation and learns from every transfer.
type ABR interface {
	Choose(s State) int
	Observe(bytes int64, elapsed time.Duration)
}

// Exo is ExoPlayer's AdaptiveTrackSelection with its published defaults,
// fed by DefaultBandwidthMeter's estimate (a sliding median of per-transfer
// throughputs weighted by the square root of their bytes). ExoPlayer's
// minDurationToRetainAfterDiscardMs (25 s) only matters when a player
// discards buffered media to re-fetch it at a higher quality; this player
// never discards, so it has no counterpart here.
type Exo struct {
	BandwidthFraction      float64       // 0.7
	MinDurationForIncrease time.Duration // 10 s
	MaxDurationForDecrease time.Duration // 25 s
	InitialBitrate         float64       // bit/s before the meter has an estimate: 1 Mbit/s
	meter                  slidingPercentile
	transferred            int64 // totalBytesTransferred
	elapsed                int64 // totalElapsedTimeMs
	sample                 int64 // sampleBytesTransferred: bytes not in a sample yet
	estimate               int64 // bitrateEstimate, bit/s; 0 until published
}

// NewExo is ExoPlayer's defaults.
func NewExo() *Exo {
	return &Exo{BandwidthFraction: 0.7, MinDurationForIncrease: 10 * time.Second,
		MaxDurationForDecrease: 25 * time.Second, InitialBitrate: 1e6}
}

// DefaultBandwidthMeter publishes an estimate once 2 s of transfer or 512 KB
// have been seen (ELAPSED_MILLIS_FOR_ESTIMATE, BYTES_TRANSFERRED_FOR_ESTIMATE).
const (
	exoElapsedForEstimate = 2 * time.Second
	exoBytesForEstimate   = 512 * 1024
	exoMaxWeight          = 2000
)

// Estimate is the meter's bandwidth estimate, bit/s.
func (e *Exo) Estimate() float64 {
	if e.estimate == 0 {
		return e.InitialBitrate
	}
	return float64(e.estimate)
}

// Observe is DefaultBandwidthMeter.onTransferEnd for one transfer of bytes
// over elapsed (its response headers to its last byte). The meter counts
// whole milliseconds, and a transfer under one (a small init segment
// arriving with its headers) adds no sample: its bytes are carried into
// the next one, and counted in the total again then, as ExoPlayer does.
// ExoPlayer subtracts two millisecond clock readings; truncating the
// duration differs from that by at most 1 ms.
func (e *Exo) Observe(bytes int64, elapsed time.Duration) {
	ms := elapsed.Milliseconds()
	e.sample += bytes
	e.elapsed += ms
	e.transferred += e.sample
	if ms <= 0 {
		return
	}
	// Weight (int) sqrt(bytes), as ExoPlayer's addSample takes it.
	e.meter.add(math.Floor(math.Sqrt(float64(e.sample))), float64(e.sample)*8000/float64(ms))
	e.sample = 0
	// The estimate is published only when a sample is added, once enough has been seen.
	if e.elapsed >= exoElapsedForEstimate.Milliseconds() || e.transferred >= exoBytesForEstimate {
		e.estimate = int64(e.meter.percentile(0.5))
	}
}

func (e *Exo) Choose(s State) int {
	ideal := 0
	eff := e.Estimate() * e.BandwidthFraction
	for i, b := range s.Bitrates {
		if float64(b) <= eff {
			ideal = i
		}
	}
	if s.Current < 0 {
		return ideal
	}
	switch {
	case ideal > s.Current && s.Buffer < e.MinDurationForIncrease:
		return s.Current // not enough buffered to risk a higher quality
	case ideal < s.Current && s.Buffer >= e.MaxDurationForDecrease:
		return s.Current // enough buffered to ride out the dip
	}
	return ideal
}

// slidingPercentile is ExoPlayer's SlidingPercentile: samples with weights,
// the oldest dropped (or shrunk) once the total weight exceeds the maximum.
type slidingPercentile struct {
	samples []wsample // in arrival order
	total   float64
}

type wsample struct{ weight, value float64 }

func (p *slidingPercentile) add(weight, value float64) {
	p.samples = append(p.samples, wsample{weight, value})
	p.total += weight
	for p.total > exoMaxWeight {
		excess := p.total - exoMaxWeight
		if p.samples[0].weight <= excess {
			p.total -= p.samples[0].weight
			p.samples = p.samples[1:]
		} else {
			p.samples[0].weight -= excess
			p.total -= excess
		}
	}
}

func (p *slidingPercentile) percentile(q float64) float64 {
	s := append([]wsample(nil), p.samples...)
	sort.SliceStable(s, func(a, b int) bool { return s[a].value < s[b].value })
	want, acc := q*p.total, 0.0
	for _, x := range s {
		acc += x.weight
		if acc >= want {
			return x.value
		}
	}
	return s[len(s)-1].value
}

// BOLA is BOLA-BASIC (Spiteri et al., INFOCOM 2016): the representation
// maximising (V (v_m + gamma p) - Q) / S_m, with v_m = ln(S_m / S_1) the
// utility, Q the buffer in segments, S_m the segment size (bitrate x
// duration) and V set so that the top rung is chosen with the buffer full at
// BufferTarget. It needs no bandwidth estimate.
type BOLA struct {
	BufferTarget time.Duration // the buffer BOLA aims for; 25 s
	GammaP       float64       // gamma x p, in segments: 5
}

// NewBOLA is BOLA with a 25 s buffer target (dash.js's stable buffer time
// for long-form content is 30 s; 25 s keeps it below the player's 50 s cap).
func NewBOLA() *BOLA { return &BOLA{BufferTarget: 25 * time.Second, GammaP: 5} }

func (b *BOLA) Observe(int64, time.Duration) {}

func (b *BOLA) Choose(s State) int {
	n := len(s.Bitrates)
	if n == 1 || s.SegDur <= 0 {
		return 0
	}
	v := func(m int) float64 { return math.Log(float64(s.Bitrates[m]) / float64(s.Bitrates[0])) }
	qmax := b.BufferTarget.Seconds() / s.SegDur.Seconds()
	V := (qmax - 1) / (v(n-1) + b.GammaP)
	q := s.Buffer.Seconds() / s.SegDur.Seconds()
	best, bestScore := 0, math.Inf(-1)
	for m := range n {
		score := (V*(v(m)+b.GammaP) - q) / float64(s.Bitrates[m])
		if score > bestScore {
			best, bestScore = m, score
		}
	}
	return best
}
