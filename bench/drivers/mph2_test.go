package drivers

import (
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

func TestMPH2ParamErrors(t *testing.T) {
	obj := experiment.Object{Name: "o", Size: "1MB"}
	wantCheckErrors(t, []checkCase{
		{"mph2", map[string]string{"mode": "mptcp2"}, obj, `params.mode "mptcp2"`},
		{"mph2", map[string]string{"mode": "single"}, obj, "needs path=NAME"},
		{"mph2", map[string]string{"mode": "mhttp"}, obj, "needs chunk=SIZE"},
		{"mph2", map[string]string{"mode": "mhttp", "chunk": "0"}, obj, `params.chunk "0"`},
		{"mph2", map[string]string{"end_adjust": "window"}, obj, "want flow or rst"},
		{"mph2", map[string]string{"pipelining": "maybe"}, obj, "want true or false"},
		{"mph2", map[string]string{"color": "red"}, obj, "unknown parameter"},
		{"mph2", map[string]string{"restart_links": "yes"}, obj, "want true or false"},
		{"mph2", map[string]string{"trace_shift": "-1s", "restart_links": "true"}, obj, "positive duration"},
		{"mph2", map[string]string{"trace_shift": "10s"}, obj, "needs restart_links=true"},
		{"mph2", nil, experiment.Object{Name: "b", Size: "10KB", Background: "1MB"}, "size only"},
	})
	if err := Table["mph2"].Check(experiment.Protocol{Params: map[string]string{"mode": "single", "path": "wifi", "cut": "1MB", "end_adjust": "rst"}}, obj); err != nil {
		t.Errorf("valid params: %v", err)
	}
}
