package multipath

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/estimate"
)

func mustNew(t testing.TB, cfg Config) *Scheduler {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ms(n int) time.Time { return epoch.Add(time.Duration(n) * time.Millisecond) }

func kinds(acts []Action, k Kind) []Action {
	var out []Action
	for _, a := range acts {
		if a.Kind == k {
			out = append(out, a)
		}
	}
	return out
}

func TestStart(t *testing.T) {
	wifi := estimate.Path{Bandwidth: mbit(5), RTT: 28 * time.Millisecond}
	lte := estimate.Path{Bandwidth: mbit(10), RTT: 65 * time.Millisecond}
	eq1, _ := Split(4<<20, []Cond{{wifi.Bandwidth, wifi.RTT}, {lte.Bandwidth, lte.RTT}})
	for _, tc := range []struct {
		name string
		cfg  Config
		want []Action
	}{
		{"MP-H2: whole object on the primary", Config{Paths: 2, Size: -1},
			[]Action{{Kind: Request, Stream: 1, Path: 0, Start: 0, End: -1}}},
		{"+FS: halves at once", Config{Paths: 2, Size: 4 << 20},
			[]Action{{Kind: Request, Stream: 1, Path: 0, Start: 0, End: 2 << 20}, {Kind: Request, Stream: 2, Path: 1, Start: 2 << 20, End: 4 << 20}}},
		{"+FS+BW/L: Equation 1", Config{Paths: 2, Size: 4 << 20, Prior: []estimate.Path{wifi, lte}},
			[]Action{{Kind: Request, Stream: 1, Path: 0, Start: 0, End: eq1[0]}, {Kind: Request, Stream: 2, Path: 1, Start: eq1[0], End: 4 << 20}}},
		{"+FS with a partial prior: halves", Config{Paths: 2, Size: 4 << 20, Prior: []estimate.Path{wifi, {}}},
			[]Action{{Kind: Request, Stream: 1, Path: 0, Start: 0, End: 2 << 20}, {Kind: Request, Stream: 2, Path: 1, Start: 2 << 20, End: 4 << 20}}},
		{"three paths, odd size", Config{Paths: 3, Size: 10},
			[]Action{{Kind: Request, Stream: 1, Path: 0, Start: 0, End: 4}, {Kind: Request, Stream: 2, Path: 1, Start: 4, End: 7}, {Kind: Request, Stream: 3, Path: 2, Start: 7, End: 10}}},
		{"empty object", Config{Paths: 2, Size: 0}, []Action{{Kind: Done}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustNew(t, tc.cfg).OnStart(ms(0))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OnStart:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestUnknownSizeSplit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		paths  int
		status int
		want   []Action
	}{
		{"200: second half on the secondary", 2, 200,
			[]Action{{Kind: Request, Stream: 2, Path: 1, Start: 500, End: 1000}}},
		{"206 to bytes=0-", 2, 206,
			[]Action{{Kind: Request, Stream: 2, Path: 1, Start: 500, End: 1000}}},
		{"three paths: thirds", 3, 200,
			[]Action{{Kind: Request, Stream: 2, Path: 1, Start: 334, End: 667}, {Kind: Request, Stream: 3, Path: 2, Start: 667, End: 1000}}},
		{"one path: nothing more", 1, 200, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Config{Paths: tc.paths, Size: -1})
			s.OnStart(ms(0))
			got, err := s.OnHeaders(ms(30), 1, tc.status, 1000)
			if err != nil {
				t.Fatal(err)
			}
			// The primary's cut at the midpoint is lazy: no SetEnd yet.
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OnHeaders:\n got %v\nwant %v", got, tc.want)
			}
			if err := s.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestHeadersErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int64
		status int
		got    int64
		want   string
	}{
		{"not found", 1000, 404, 1000, "status 404"},
		{"206 without length", -1, 206, -1, "without a complete length"},
		{"size differs from the application's", 1000, 206, 999, "object size 999, expected 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Config{Paths: 2, Size: tc.size})
			s.OnStart(ms(0))
			_, err := s.OnHeaders(ms(30), 1, tc.status, tc.got)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Paths: 0},
		{Paths: 1, Size: -2},
		{Paths: 2, Prior: make([]estimate.Path, 1)},
		{Paths: 1, Delta: -1},
		{Paths: 1, EndAdjust: 7},
		{Paths: 1, Bandwidth: estimate.BandwidthConfig{Decay: 2}},
		{Paths: 1, RTTSamples: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// TestCutEnd drives one path through MP-H2 §5.7's experiment by hand: a
// 2 MB object cut at 1 MB. Flow control announces the end one
// bandwidth-delay product (plus margin) ahead; RST_STREAM resets at the end.
func TestCutEnd(t *testing.T) {
	const frame, cut = 16 << 10, 1 << 20
	for _, mode := range []EndAdjust{FlowControl, ResetStream} {
		t.Run(mode.String(), func(t *testing.T) {
			s := mustNew(t, Config{Paths: 1, Size: 2 << 20, EndAdjust: mode})
			s.OnStart(ms(0))
			if acts := s.Cut(ms(0), cut); len(acts) != 0 {
				t.Fatalf("Cut: %v, want nothing yet (lazy)", acts)
			}
			if _, err := s.OnHeaders(ms(28), 1, 206, 2<<20); err != nil {
				t.Fatal(err)
			}
			s.OnRTT(ms(28), 0, 28*time.Millisecond)
			var delivered int64
			now := 28 * time.Millisecond
			for pos := int64(0); ; pos += frame {
				now += time.Duration(frame) * time.Second / time.Duration(mbit(5))
				acts := s.OnData(epoch.Add(now), 1, frame)
				for _, d := range kinds(acts, Deliver) {
					delivered += d.End - d.Start
				}
				if err := s.check(); err != nil {
					t.Fatal(err)
				}
				if set := kinds(acts, SetEnd); len(set) > 0 {
					if mode != FlowControl || set[0].End != cut {
						t.Fatalf("at %d: %v", pos+frame, set)
					}
					e := s.Estimate(epoch.Add(now), 0)
					lead := int64(e.Bandwidth*e.RTT.Seconds()) + DefaultLeadMargin
					if pos+frame+lead < cut || pos+lead >= cut {
						t.Errorf("SetEnd at offset %d, want it once within lead %d of %d", pos+frame, lead, cut)
					}
				}
				if len(kinds(acts, Done)) > 0 {
					if r := kinds(acts, Reset); len(r) != 1 || r[0].Stream != 1 {
						t.Errorf("at the cut: %v, want stream 1 reset", acts)
					}
					break
				}
				if pos > cut {
					t.Fatal("no Done past the cut")
				}
			}
			if delivered != cut {
				t.Errorf("delivered %d bytes, want %d", delivered, cut)
			}
		})
	}
}
