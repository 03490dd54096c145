package multipath

import (
	"math"
	"testing"
	"time"
)

func TestSplitEquation1(t *testing.T) {
	ms := time.Millisecond
	// Two paths: Split must agree with the paper's closed form.
	for _, tc := range []struct {
		name   string
		size   int64
		bw     [2]float64
		rtt    [2]time.Duration
		expect [2]int64 // 0 means: compute from Equation 1
	}{
		{"fig8 (5,10) 4MB", 4 << 20, [2]float64{mbit(5), mbit(10)}, [2]time.Duration{28 * ms, 65 * ms}, [2]int64{}},
		{"fig8 (10,5) 512KB", 512 << 10, [2]float64{mbit(10), mbit(5)}, [2]time.Duration{28 * ms, 65 * ms}, [2]int64{}},
		{"fig8 (5,5) 1MB", 1 << 20, [2]float64{mbit(5), mbit(5)}, [2]time.Duration{28 * ms, 65 * ms}, [2]int64{}},
		{"equal paths halve", 1 << 20, [2]float64{mbit(5), mbit(5)}, [2]time.Duration{30 * ms, 30 * ms}, [2]int64{1 << 19, 1 << 19}},
		{"slow far path gets nothing", 10 << 10, [2]float64{mbit(10), mbit(1)}, [2]time.Duration{10 * ms, 500 * ms}, [2]int64{10 << 10, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, T := Split(tc.size, []Cond{{tc.bw[0], tc.rtt[0]}, {tc.bw[1], tc.rtt[1]}})
			want := tc.expect
			if want == ([2]int64{}) {
				// D_i = (D*BW_i + BW_i*BW_j*(RTT_j - RTT_i)) / (BW_i + BW_j)
				for i, j := 0, 1; i < 2; i, j = i+1, j-1 {
					d := (float64(tc.size)*tc.bw[i] + tc.bw[i]*tc.bw[j]*(tc.rtt[j]-tc.rtt[i]).Seconds()) / (tc.bw[i] + tc.bw[j])
					want[i] = int64(d)
				}
			}
			if got[0]+got[1] != tc.size {
				t.Fatalf("shares %v sum to %d, want %d", got, got[0]+got[1], tc.size)
			}
			for i := range got {
				if math.Abs(float64(got[i]-want[i])) > 2 {
					t.Errorf("share %d = %d, want %d", i, got[i], want[i])
				}
			}
			// Every path that got bytes finishes at T.
			for i := range got {
				if got[i] == 0 {
					continue
				}
				fin := tc.rtt[i] + time.Duration(float64(got[i])/tc.bw[i]*1e9)
				if d := fin - T; d < -time.Microsecond*10 || d > time.Microsecond*10 {
					t.Errorf("path %d finishes at %v, T = %v", i, fin, T)
				}
			}
		})
	}
}

func TestSplitNPaths(t *testing.T) {
	ms := time.Millisecond
	paths := []Cond{{mbit(5), 28 * ms}, {mbit(10), 65 * ms}, {mbit(2), 10 * ms}, {0, 5 * ms}}
	size := int64(3 << 20)
	got, T := Split(size, paths)
	var sum int64
	for i, d := range got {
		sum += d
		if paths[i].Bandwidth == 0 {
			if d != 0 {
				t.Errorf("path %d without bandwidth got %d", i, d)
			}
			continue
		}
		fin := paths[i].Delay + time.Duration(float64(d)/paths[i].Bandwidth*1e9)
		if diff := fin - T; diff < -10*time.Microsecond || diff > 10*time.Microsecond {
			t.Errorf("path %d: %d bytes finish at %v, T = %v", i, d, fin, T)
		}
	}
	if sum != size {
		t.Errorf("shares %v sum to %d, want %d", got, sum, size)
	}
	// T = (D + sum BW_i*RTT_i) / sum BW_i
	var bw, bwd float64
	for _, c := range paths {
		bw += c.Bandwidth
		bwd += c.Bandwidth * c.Delay.Seconds()
	}
	if want := time.Duration((float64(size) + bwd) / bw * 1e9); math.Abs(float64(IdealTime(size, paths)-want)) > 1000 {
		t.Errorf("IdealTime = %v, want %v", IdealTime(size, paths), want)
	}
	if sh, T := Split(100, []Cond{{0, 0}}); T != -1 || sh[0] != 0 {
		t.Errorf("no bandwidth: %v %v, want [0] -1", sh, T)
	}
}

func TestSpanSet(t *testing.T) {
	var s spanSet
	for _, x := range [][2]int64{{10, 20}, {30, 40}, {20, 25}, {50, 60}, {24, 31}, {0, 5}} {
		s.add(x[0], x[1])
	}
	if want := (spanSet{{0, 5}, {10, 40}, {50, 60}}); len(s) != len(want) || s[0] != want[0] || s[1] != want[1] || s[2] != want[2] {
		t.Fatalf("after adds: %v, want %v", s, want)
	}
	var gaps []span
	s.gaps(3, 55, func(a, b int64) { gaps = append(gaps, span{a, b}) })
	if want := []span{{5, 10}, {40, 50}}; len(gaps) != 2 || gaps[0] != want[0] || gaps[1] != want[1] {
		t.Errorf("gaps(3,55) = %v, want %v", gaps, want)
	}
	for _, tc := range []struct {
		a, b int64
		want bool
	}{{0, 5, true}, {11, 39, true}, {4, 11, false}, {60, 61, false}, {7, 7, true}} {
		if got := s.covers(tc.a, tc.b); got != tc.want {
			t.Errorf("covers(%d,%d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	s.remove(12, 52)
	if want := (spanSet{{0, 5}, {10, 12}, {52, 60}}); len(s) != 3 || s[0] != want[0] || s[1] != want[1] || s[2] != want[2] || s.total() != 15 {
		t.Errorf("after remove: %v (total %d), want %v", s, s.total(), want)
	}
}
