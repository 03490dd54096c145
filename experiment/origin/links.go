package origin

import (
	"fmt"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/netem"
)

// RestartTraces re-applies every link direction of env's condition that has
// a trace, so its schedule starts now (the experiments' restart_links), with
// mahimahi traces rotated to start rep x shift in. It returns the offsets
// used, for the run's info.
func RestartTraces(env *experiment.Env, rep int, shift time.Duration) (map[string]string, error) {
	info := map[string]string{}
	for _, p := range env.Condition.Paths {
		for dir, l := range map[string]experiment.LinkSpec{"up": p.Up, "down": p.Down} {
			if l.Trace == "" {
				continue
			}
			l, off, err := linkAt(l, time.Duration(rep)*shift, false)
			if err != nil {
				return nil, err
			}
			if off != "" {
				info["trace_offset_"+p.Name+"_"+dir] = off
			}
			if err := setLink(env, p.Name, dir, l); err != nil {
				return nil, fmt.Errorf("restart_links: %w", err)
			}
		}
	}
	return info, nil
}

// CheckTraceShift checks an experiment's restart_links and trace_shift
// parameters together.
func CheckTraceShift(restart bool, shift time.Duration) error {
	switch {
	case shift < 0:
		return experiment.Errorf("params.trace_shift", shift.String(), "want a positive duration")
	case shift > 0 && !restart:
		return experiment.Errorf("params.trace_shift", shift.String(), "needs restart_links=true")
	}
	return nil
}

// SetPath applies both directions of path name as env's condition has them,
// a mahimahi trace taken up at offset at into it (the time since
// RestartTraces started it, plus its own rotation), and, if dead, losing
// every packet: an outage cut into the link for as long as it is set.
func SetPath(env *experiment.Env, name string, at time.Duration, dead bool) error {
	for _, p := range env.Condition.Paths {
		if p.Name != name {
			continue
		}
		for dir, l := range map[string]experiment.LinkSpec{"up": p.Up, "down": p.Down} {
			l, _, err := linkAt(l, at, dead)
			if err != nil {
				return err
			}
			if err := setLink(env, name, dir, l); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("condition %s has no path %s", env.Condition.Name, name)
}

// linkAt is l with a mahimahi trace advanced by off (its offset, said for
// the record; step traces always start at their beginning) and, if dead,
// every packet lost.
func linkAt(l experiment.LinkSpec, off time.Duration, dead bool) (experiment.LinkSpec, string, error) {
	var said string
	if l.Trace != "" {
		ref, err := netem.ParseTraceRef(l.Trace)
		if err != nil {
			return l, "", err
		}
		if !ref.Step && off > 0 {
			ref.Offset += off
			l.Trace = ref.String()
			said = ref.Offset.String()
		}
	}
	if dead {
		l.Loss = "100%"
	}
	return l, said, nil
}

func setLink(env *experiment.Env, path, dir string, l experiment.LinkSpec) error {
	ls, ok := env.Net.(experiment.LinkSetter)
	if !ok {
		return fmt.Errorf("the network of condition %s cannot replace links", env.Condition.Name)
	}
	if err := ls.SetLink(path, dir, l); err != nil {
		return fmt.Errorf("path %s %s: %w", path, dir, err)
	}
	return nil
}
