package drivers

import (
	"strings"
	"testing"

	"github.com/shunt-net/shunt/bench"
)

func TestMPH2ParamErrors(t *testing.T) {
	obj := bench.Object{Name: "o", Size: "1MB"}
	for _, tc := range []struct {
		params map[string]string
		obj    bench.Object
		want   string
	}{
		{map[string]string{"mode": "mptcp2"}, obj, `params.mode "mptcp2"`},
		{map[string]string{"mode": "single"}, obj, "needs path=NAME"},
		{map[string]string{"mode": "mhttp"}, obj, "needs chunk=SIZE"},
		{map[string]string{"mode": "mhttp", "chunk": "0"}, obj, `params.chunk "0"`},
		{map[string]string{"end_adjust": "window"}, obj, "want flow or rst"},
		{map[string]string{"pipelining": "maybe"}, obj, "want on or off"},
		{map[string]string{"color": "red"}, obj, "unknown parameter"},
		{nil, bench.Object{Name: "b", Size: "10KB", Background: "1MB"}, "size only"},
	} {
		err := mph2Driver{}.Check(bench.Protocol{Name: "x", Driver: "mph2", Params: tc.params}, tc.obj)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("params %v: %v, want an error with %q", tc.params, err, tc.want)
		}
	}
	if err := (mph2Driver{}).Check(bench.Protocol{Params: map[string]string{"mode": "single", "path": "wifi", "cut": "1MB", "end_adjust": "rst"}}, obj); err != nil {
		t.Errorf("valid params: %v", err)
	}
}
