package estimate

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

// feed delivers chunk-byte events at a constant rate (bytes/s) for total
// bytes, starting at start, and returns the time of the last event.
func feed(b *Bandwidth, start time.Duration, rate float64, chunk, total int64) time.Duration {
	now := start
	step := time.Duration(float64(chunk) / rate * 1e9)
	for sent := int64(0); sent < total; sent += chunk {
		b.OnData(at(now), chunk)
		now += step
	}
	return now - step
}

func mustBW(t testing.TB, cfg BandwidthConfig) *Bandwidth {
	t.Helper()
	b, err := NewBandwidth(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBandwidthConstantRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  float64 // bytes/s
		chunk int64
		total int64
	}{
		{"5Mbit 8KiB frames", 625000, 8 << 10, 1 << 20},
		{"10Mbit 16KiB frames", 1250000, 16 << 10, 2 << 20},
		{"1Mbit 1448B segments", 125000, 1448, 300 << 10},
		{"frames larger than a sample", 625000, 64 << 10, 2 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustBW(t, BandwidthConfig{})
			last := feed(b, 0, tc.rate, tc.chunk, tc.total)
			got, ok := b.Estimate(at(last))
			if !ok {
				t.Fatal("no estimate")
			}
			if math.Abs(got-tc.rate)/tc.rate > 1e-6 {
				t.Errorf("estimate %.0f B/s, want %.0f", got, tc.rate)
			}
		})
	}
}

func TestBandwidthNeedsOneFullSample(t *testing.T) {
	b := mustBW(t, BandwidthConfig{})
	// The opening event's bytes do not count: 20 KiB in it, then 19 KiB more.
	b.OnData(at(0), 20<<10)
	b.OnData(at(10*time.Millisecond), 19<<10)
	if _, ok := b.Estimate(at(10 * time.Millisecond)); ok {
		t.Fatal("estimate before a full sample")
	}
	b.OnData(at(20*time.Millisecond), 1<<10)
	got, ok := b.Estimate(at(20 * time.Millisecond))
	if want := float64(20<<10) / 0.020; !ok || math.Abs(got-want) > 1e-6*want {
		t.Fatalf("estimate %.0f %v, want %.0f", got, ok, want)
	}
	if b.Samples() != 1 {
		t.Fatalf("samples %d, want 1", b.Samples())
	}
}

// reference computes the documented estimate from the raw sample list and
// the open sample (pending bytes over elapsed ns, ending now).
func reference(s []sample, window, sampleBytes int64, halfLife time.Duration, pending, elapsed int64, now time.Time) float64 {
	i := len(s) - 1
	var cover int64
	for ; i > 0; i-- {
		cover += s[i].b
		if cover >= window {
			break
		}
	}
	weigh := func(ref time.Time) (wb, wt float64) {
		for _, x := range s[i:] {
			w := math.Pow(0.5, ref.Sub(x.end).Seconds()/halfLife.Seconds())
			wb += w * float64(x.b)
			wt += w * float64(x.t)
		}
		return wb, wt
	}
	wb, wt := weigh(s[len(s)-1].end)
	if float64(elapsed) > 2*float64(sampleBytes)/(wb/wt*1e9)*1e9 {
		wb, wt = weigh(now)
		return (float64(pending) + wb) / (float64(elapsed) + wt) * 1e9
	}
	return wb / wt * 1e9
}

func TestBandwidthMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for run := 0; run < 50; run++ {
		cfg := BandwidthConfig{SampleBytes: int64(1+rng.Intn(30)) << 10, WindowBytes: int64(100+rng.Intn(600)) << 10,
			HalfLife: []time.Duration{time.Hour, 300 * time.Millisecond, 50 * time.Millisecond}[run%3]}
		b := mustBW(t, cfg)
		var raw []sample
		now := time.Duration(0)
		b.OnData(at(now), 1)
		var pending int64
		last := now
		for i := 0; i < 400; i++ {
			n := int64(1 + rng.Intn(20<<10))
			now += time.Duration(1+rng.Intn(40)) * time.Millisecond
			b.OnData(at(now), n)
			pending += n
			if pending >= cfg.SampleBytes {
				raw = append(raw, sample{pending, int64(now - last), at(now)})
				pending, last = 0, now
			}
			if len(raw) == 0 {
				continue
			}
			got, ok := b.Estimate(at(now))
			want := reference(raw, cfg.WindowBytes, cfg.SampleBytes, cfg.HalfLife, pending, int64(now-last), at(now))
			if !ok || math.Abs(got-want) > 1e-9*want {
				t.Fatalf("run %d event %d cfg %+v: estimate %.3f %v, want %.3f", run, i, cfg, got, ok, want)
			}
		}
	}
}

func TestBandwidthWindowForgetsOldRate(t *testing.T) {
	b := mustBW(t, BandwidthConfig{})
	last := feed(b, 0, 1250000, 8<<10, 2<<20)
	// 5 -> 1 Mbit/s: after a little the estimate sits between the two; after a
	// full window at the new rate it is exactly the new rate.
	last = feed(b, last+(8<<10)*time.Second/125000, 125000, 8<<10, 64<<10)
	mid, _ := b.Estimate(at(last))
	if mid <= 125000 || mid >= 1250000 {
		t.Errorf("after 64 KiB at the new rate: %.0f B/s, want between the rates", mid)
	}
	last = feed(b, last+(8<<10)*time.Second/125000, 125000, 8<<10, DefaultWindowBytes+(40<<10))
	got, _ := b.Estimate(at(last))
	if math.Abs(got-125000)/125000 > 1e-6 {
		t.Errorf("after a window at the new rate: %.0f B/s, want 125000", got)
	}
}

func TestBandwidthStallLowersEstimate(t *testing.T) {
	b := mustBW(t, BandwidthConfig{})
	last := feed(b, 0, 625000, 8<<10, 1<<20)
	full, _ := b.Estimate(at(last))
	if math.Abs(full-625000)/625000 > 1e-6 {
		t.Fatalf("estimate %.0f before the stall, want 625000", full)
	}
	got, _ := b.Estimate(at(last + 500*time.Millisecond))
	if got >= full/2 {
		t.Errorf("500 ms without a sample: %.0f, want well below %.0f", got, full)
	}
}

func TestBandwidthIdleGapNotCounted(t *testing.T) {
	b := mustBW(t, BandwidthConfig{})
	last := feed(b, 0, 625000, 8<<10, 256<<10)
	b.Idle()
	// A 300 ms wait for the next response, then the same rate again.
	last = feed(b, last+300*time.Millisecond, 625000, 8<<10, 256<<10)
	got, _ := b.Estimate(at(last))
	if math.Abs(got-625000)/625000 > 1e-6 {
		t.Errorf("estimate %.0f B/s after an idle gap, want 625000", got)
	}
}

func TestBandwidthConfigErrors(t *testing.T) {
	for _, cfg := range []BandwidthConfig{{SampleBytes: -1}, {SampleBytes: 10, WindowBytes: 5}, {HalfLife: -time.Millisecond}} {
		if _, err := NewBandwidth(cfg); err == nil {
			t.Errorf("NewBandwidth(%+v): no error", cfg)
		}
	}
}

func TestRTT(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		want    time.Duration
		ok      bool
	}{
		{"none", nil, 0, false},
		{"one", []time.Duration{28 * ms}, 28 * ms, true},
		{"five", []time.Duration{10 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms}, 30 * ms, true},
		{"last five of seven", []time.Duration{900 * ms, 900 * ms, 10 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms}, 30 * ms, true},
		{"non-positive ignored", []time.Duration{0, -5 * ms, 65 * ms}, 65 * ms, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRTT(0)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.samples {
				r.Add(s)
			}
			got, ok := r.Estimate()
			if got != tc.want || ok != tc.ok {
				t.Errorf("Estimate() = %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, err := NewRTT(-1); err == nil {
		t.Error("NewRTT(-1): no error")
	}
}

func TestCache(t *testing.T) {
	c := NewCache(time.Minute)
	if _, ok := c.Get("wlan0|a", at(0)); ok {
		t.Fatal("hit on empty cache")
	}
	c.Put("wlan0|a", at(0), Path{Bandwidth: 625000, RTT: 28 * time.Millisecond})
	c.Put("wwan0|a", at(0), Path{Bandwidth: 1250000})
	c.Put("wwan0|a", at(time.Second), Path{RTT: 65 * time.Millisecond}) // merges with the bandwidth
	for _, tc := range []struct {
		key  string
		now  time.Duration
		want Path
		ok   bool
	}{
		{"wlan0|a", 30 * time.Second, Path{625000, 28 * time.Millisecond}, true},
		{"wwan0|a", 30 * time.Second, Path{1250000, 65 * time.Millisecond}, true},
		{"wlan0|a", 61 * time.Second, Path{}, false},
		{"wlan0|b", 0, Path{}, false},
	} {
		got, ok := c.Get(tc.key, at(tc.now))
		if got != tc.want || ok != tc.ok {
			t.Errorf("Get(%q, +%v) = %+v %v, want %+v %v", tc.key, tc.now, got, ok, tc.want, tc.ok)
		}
	}
	if _, when, _ := c.GetAt("wwan0|a", at(30*time.Second)); !when.Equal(at(time.Second)) {
		t.Errorf("GetAt: stored at %v, want the last Put's %v", when, at(time.Second))
	}
	c.Put("wlan0|a", at(2*time.Minute), Path{RTT: 30 * time.Millisecond}) // old entry expired: no merge
	if got, _ := c.Get("wlan0|a", at(2*time.Minute)); got != (Path{RTT: 30 * time.Millisecond}) {
		t.Errorf("after expiry Put merged stale bandwidth: %+v", got)
	}
}

func TestBandwidthFollowsDrop(t *testing.T) {
	// 5 -> 1 Mbit/s, as in MP-H2 §5.8.
	b := mustBW(t, BandwidthConfig{})
	last := feed(b, 0, mbps(5), 8<<10, 1<<20)
	step := (8 << 10) * time.Second / time.Duration(mbps(1))
	for _, tc := range []struct {
		after    int64   // bytes at the new rate
		min, max float64 // Mbit/s
	}{
		{40 << 10, 1, 2},
		{200 << 10, 1, 1.02},
	} {
		b := *b
		b.samples = append([]sample(nil), b.samples...)
		end := feed(&b, last+step, mbps(1), 8<<10, tc.after)
		got, _ := b.Estimate(at(end))
		if got < mbps(tc.min) || got > mbps(tc.max) {
			t.Errorf("%d KiB after the drop: %.2f Mbit/s, want %.1f..%.1f", tc.after>>10, got*8/1e6, tc.min, tc.max)
		}
	}
}

func mbps(m float64) float64 { return m * 1e6 / 8 }

// TestBandwidthReassemblyBurst is the spike seen in MP-H2 §5.8's scenario: on
// a 1 Mbit/s link with a deep queue a segment is lost; TCP holds the data
// behind it until the retransmission arrives some 800 ms later, then hands
// it all over within a millisecond. The link delivered those bytes during the
// stall, so the estimate must stay near the link's rate, not jump to what
// the burst's few samples of near-zero duration say.
func TestBandwidthReassemblyBurst(t *testing.T) {
	const rate = 125000.0 // 1 Mbit/s
	const frame = 16 << 10
	b := mustBW(t, BandwidthConfig{})
	last := feed(b, 0, rate, frame, 300<<10)
	stall := 800 * time.Millisecond
	burst := int64(stall.Seconds()*rate) / frame * frame // what the link carried meanwhile
	now := last + stall
	var got float64
	for sent := int64(0); sent < burst; sent += frame {
		b.OnData(at(now), frame)
		// Early in the burst the estimate is low: the bytes are yet to come.
		if got, _ = b.Estimate(at(now)); got > 1.5*rate {
			t.Fatalf("%d KiB into the burst: %.0f B/s, want at most 1.5 x the link's %.0f", (sent+frame)>>10, got, rate)
		}
		now += 200 * time.Microsecond
	}
	if got < rate/1.5 {
		t.Errorf("after the burst: %.0f B/s, want near the link's %.0f", got, rate)
	}
}
