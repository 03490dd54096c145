package emulated

import (
	"fmt"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/testbed"
)

// SetLink replaces one direction ("up" or "down") of a path's link mid-run
// (testbed.Net.SetLink). The new link starts its rate schedule at its first
// packet, so a driver re-applying a trace restarts it: this is how a run
// lines a step schedule ("drop to 1 Mbit/s at 1050 ms") up with its own
// download rather than with the condition's first run.
func (w *network) SetLink(path, dir string, l experiment.LinkSpec) error {
	var d testbed.Direction
	switch dir {
	case "up":
		d = testbed.Up
	case "down":
		d = testbed.Down
	default:
		return fmt.Errorf("set link %s: direction %q: want up or down", path, dir)
	}
	cfg, err := w.f.LinkConfig(l, path+"."+dir)
	if err != nil {
		return err
	}
	return w.n.SetLink(path, d, cfg)
}
