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
	d, err := direction(dir)
	if err != nil {
		return fmt.Errorf("set link %s: %w", path, err)
	}
	cfg, err := w.f.LinkConfig(l, path+"."+dir)
	if err != nil {
		return err
	}
	return w.n.SetLink(path, d, cfg)
}

// WatchDeliveries records the packets that leave one direction of a path's
// link at its far end (testbed.Net.WatchDeliveries).
func (w *network) WatchDeliveries(path, dir string) (func() []experiment.Delivery, error) {
	d, err := direction(dir)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	stop, err := w.n.WatchDeliveries(path, d)
	if err != nil {
		return nil, err
	}
	return func() []experiment.Delivery {
		got := stop()
		out := make([]experiment.Delivery, len(got))
		for i, d := range got {
			out[i] = experiment.Delivery(d)
		}
		return out
	}, nil
}

func direction(dir string) (testbed.Direction, error) {
	switch dir {
	case "up":
		return testbed.Up, nil
	case "down":
		return testbed.Down, nil
	}
	return 0, fmt.Errorf("direction %q: want up or down", dir)
}
