package drivers

import (
	"slices"
	"testing"

	"github.com/shunt-net/shunt/bench"
)

func TestMPH2ParamErrors(t *testing.T) {
	obj := bench.Object{Name: "o", Size: "1MB"}
	wantCheckErrors(t, []checkCase{
		{"mph2", map[string]string{"mode": "mptcp2"}, obj, `params.mode "mptcp2"`},
		{"mph2", map[string]string{"mode": "single"}, obj, "needs path=NAME"},
		{"mph2", map[string]string{"mode": "mhttp"}, obj, "needs chunk=SIZE"},
		{"mph2", map[string]string{"mode": "mhttp", "chunk": "0"}, obj, `params.chunk "0"`},
		{"mph2", map[string]string{"end_adjust": "window"}, obj, "want flow or rst"},
		{"mph2", map[string]string{"pipelining": "maybe"}, obj, "want on or off"},
		{"mph2", map[string]string{"color": "red"}, obj, "unknown parameter"},
		{"mph2", map[string]string{"restart_links": "yes"}, obj, "want on or off"},
		{"mph2", map[string]string{"trace_shift": "-1s", "restart_links": "on"}, obj, "positive duration"},
		{"mph2", map[string]string{"trace_shift": "10s"}, obj, "needs restart_links=on"},
		{"mph2", nil, bench.Object{Name: "b", Size: "10KB", Background: "1MB"}, "size only"},
	})
	if err := (mph2Driver{}).Check(bench.Protocol{Params: map[string]string{"mode": "single", "path": "wifi", "cut": "1MB", "end_adjust": "rst"}}, obj); err != nil {
		t.Errorf("valid params: %v", err)
	}
}

func TestRotateTrace(t *testing.T) {
	tr := []int64{0, 3, 3, 5, 8, 10}
	for _, tc := range []struct {
		off, wantOff int64
		want         []int64
	}{
		{0, 0, tr},
		{10, 0, tr}, // a whole period
		{3, 3, []int64{2, 5, 7, 7, 10, 10}},
		{4, 3, []int64{2, 5, 7, 7, 10, 10}}, // snapped down to the opportunity at 3
		{15, 5, []int64{3, 5, 5, 8, 8, 10}},
		{9, 8, []int64{2, 2, 5, 5, 7, 10}},
	} {
		got, off := rotateTrace(tr, tc.off)
		if off != tc.wantOff || !slices.Equal(got, tc.want) {
			t.Errorf("rotate by %d: %v at %d, want %v at %d", tc.off, got, off, tc.want, tc.wantOff)
		}
		if len(got) != len(tr) || got[len(got)-1] != tr[len(tr)-1] {
			t.Errorf("rotate by %d: %v: opportunities or period changed", tc.off, got)
		}
		if !slices.IsSorted(got) {
			t.Errorf("rotate by %d: %v not sorted", tc.off, got)
		}
	}
	// Rotating by a then b is rotating by a+b when both land on opportunities.
	a, _ := rotateTrace(tr, 3)
	ab, _ := rotateTrace(a, 2)
	if want, _ := rotateTrace(tr, 5); !slices.Equal(ab, want) {
		t.Errorf("rotate 3 then 2: %v, want %v", ab, want)
	}
}

func TestServerTargets(t *testing.T) {
	two := []bench.PathInfo{{Name: "wifi", ServerAddr: "10.0.0.1"}, {Name: "lte", ServerAddr: "10.0.0.1"}}
	targets, addrs, err := serverTargets(two, 1)
	if err != nil || len(addrs) != 1 || targets[0] != targets[1] {
		t.Errorf("two-path: %v %v %v, want one server for both paths", targets, addrs, err)
	}
	mh := []bench.PathInfo{{Name: "wifi", ServerAddr: "10.0.0.1"}, {Name: "lte", ServerAddr: "10.0.0.2"}}
	targets, addrs, err = serverTargets(mh, 2)
	if err != nil || !slices.Equal(addrs, []string{"10.0.0.1:8445", "10.0.0.2:8445"}) || !slices.Equal(targets, addrs) {
		t.Errorf("multi-homed: %v %v %v, want each path to its own server", targets, addrs, err)
	}
	if _, _, err := serverTargets(mh, 1); err == nil {
		t.Error("two server addresses on a one-server network: no error")
	}
}
