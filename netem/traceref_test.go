package netem

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTraceRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want TraceRef
		str  string
	}{
		{"x.down", TraceRef{File: "x.down"}, "trace:x.down"},
		{"trace:x.step", TraceRef{File: "x.step"}, "trace:x.step"},
		{"fig.step", TraceRef{File: "fig.step", Step: true}, "step:fig.step"},
		{"step:fig", TraceRef{File: "fig", Step: true}, "step:fig"},
		{"trace:/a/b.down@30s", TraceRef{File: "/a/b.down", Offset: 30 * time.Second}, "trace:/a/b.down@30s"},
		{"b.down@0s", TraceRef{File: "b.down"}, "trace:b.down"},
	} {
		got, err := ParseTraceRef(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTraceRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.str {
			t.Errorf("%q: String() = %q, want %q", tc.in, got.String(), tc.str)
		}
		if back, err := ParseTraceRef(got.String()); err != nil || back != got {
			t.Errorf("%q: round trip gave %+v, %v", tc.in, back, err)
		}
	}
	for _, bad := range []string{"", "trace:", "x.down@soon", "x.down@-1s", "step:x@1s", "x.step@2s"} {
		if _, err := ParseTraceRef(bad); err == nil {
			t.Errorf("ParseTraceRef(%q): no error", bad)
		}
	}
}

func msTimes(s *Schedule) []int64 {
	out := make([]int64, len(s.opps))
	for i, t := range s.opps {
		out[i] = t / int64(time.Millisecond)
	}
	return out
}

func TestRotate(t *testing.T) {
	tr, err := ParseMahimahiTrace("t", strings.NewReader("0\n3\n3\n5\n8\n10\n"))
	if err != nil {
		t.Fatal(err)
	}
	orig := msTimes(tr)
	for _, tc := range []struct {
		off, wantOff time.Duration
		want         []int64
	}{
		{0, 0, orig},
		{10 * time.Millisecond, 0, orig}, // a whole period
		{3 * time.Millisecond, 3 * time.Millisecond, []int64{2, 5, 7, 7, 10, 10}},
		{4 * time.Millisecond, 3 * time.Millisecond, []int64{2, 5, 7, 7, 10, 10}}, // snapped down to the opportunity at 3
		{15 * time.Millisecond, 5 * time.Millisecond, []int64{3, 5, 5, 8, 8, 10}},
		{9 * time.Millisecond, 8 * time.Millisecond, []int64{2, 2, 5, 5, 7, 10}},
	} {
		r := tr.Rotate(tc.off)
		got := msTimes(r)
		if r.Offset() != tc.wantOff || !slices.Equal(got, tc.want) {
			t.Errorf("rotate by %v: %v at %v, want %v at %v", tc.off, got, r.Offset(), tc.want, tc.wantOff)
		}
		if len(got) != len(orig) || got[len(got)-1] != orig[len(orig)-1] || !slices.IsSorted(got) {
			t.Errorf("rotate by %v: %v: opportunities, period or order changed", tc.off, got)
		}
		if r.MeanRate() != tr.MeanRate() {
			t.Errorf("rotate by %v: mean rate %v, want %v", tc.off, r.MeanRate(), tr.MeanRate())
		}
	}
	// Rotating by a then b is rotating by a+b when both land on opportunities,
	// and the recorded offset adds up.
	ab := tr.Rotate(3 * time.Millisecond).Rotate(2 * time.Millisecond)
	if want := tr.Rotate(5 * time.Millisecond); !slices.Equal(msTimes(ab), msTimes(want)) || ab.String() != want.String() {
		t.Errorf("rotate 3 then 2: %v (%s), want %v (%s)", msTimes(ab), ab, msTimes(want), want)
	}
}

func TestLoadTraceRefOffset(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.down")
	if err := os.WriteFile(f, []byte("0\n3\n3\n5\n8\n10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadTrace("trace:" + f + "@4ms")
	if err != nil {
		t.Fatal(err)
	}
	if got := msTimes(s); !slices.Equal(got, []int64{2, 5, 7, 7, 10, 10}) || s.String() != "trace:"+f+"@3ms" {
		t.Errorf("loaded %v as %s, want the rotation by 3 ms recorded", got, s)
	}
}

func FuzzParseTraceRef(f *testing.F) {
	for _, s := range []string{"x.down", "step:a.step", "trace:/t/x@30s", "b@", "@1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseTraceRef(s)
		if err != nil {
			return
		}
		back, err := ParseTraceRef(r.String())
		if err != nil || back != r {
			t.Fatalf("%q parsed to %+v, whose String %q parses to %+v, %v", s, r, r.String(), back, err)
		}
	})
}
