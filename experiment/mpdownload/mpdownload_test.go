package mpdownload

import (
	"slices"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

func TestServerTargets(t *testing.T) {
	two := []experiment.PathInfo{{Name: "wifi", ServerAddr: "10.0.0.1"}, {Name: "lte", ServerAddr: "10.0.0.1"}}
	targets, addrs, err := serverTargets(two, 1, 8445)
	if err != nil || len(addrs) != 1 || targets[0] != targets[1] {
		t.Errorf("two-path: %v %v %v, want one server for both paths", targets, addrs, err)
	}
	mh := []experiment.PathInfo{{Name: "wifi", ServerAddr: "10.0.0.1"}, {Name: "lte", ServerAddr: "10.0.0.2"}}
	targets, addrs, err = serverTargets(mh, 2, 8445)
	if err != nil || !slices.Equal(addrs, []string{"10.0.0.1:8445", "10.0.0.2:8445"}) || !slices.Equal(targets, addrs) {
		t.Errorf("multi-homed: %v %v %v, want each path to its own server", targets, addrs, err)
	}
	if _, _, err := serverTargets(mh, 1, 8445); err == nil {
		t.Error("two server addresses on a one-server network: no error")
	}
}
