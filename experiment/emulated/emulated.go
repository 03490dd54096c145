// Package emulated builds the networks of bench conditions with package
// testbed: namespaces joined by user-space emulated links (netem).
package emulated

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/netem"
	"github.com/shunt-net/shunt/testbed"
)

// Factory is the experiment.NetworkFactory of real runs (root needed).
type Factory struct {
	// LogDir, if set, receives each condition's link logs (one per path and
	// direction, see testbed.Options.LogDir) in a subdirectory named after it.
	LogDir string
	// Shipped returns a file built into the program, by the name scenarios
	// give it from the repository root (bench.ShippedFile): how a step file
	// of a shipped scenario is found when shunt runs outside the repository.
	Shipped func(name string) ([]byte, error)
}

// Check parses every link text of the condition without building anything.
func (f *Factory) Check(c experiment.Condition) error {
	var errs []error
	for i, p := range c.Paths {
		for _, d := range []struct {
			name string
			l    experiment.LinkSpec
		}{{"up", p.Up}, {"down", p.Down}} {
			if _, err := f.LinkConfig(d.l, fmt.Sprintf("paths[%d].%s", i, d.name)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// LinkConfig converts a scenario's link texts into the emulator's
// configuration; field prefixes the names in errors.
func (f *Factory) LinkConfig(l experiment.LinkSpec, field string) (netem.LinkConfig, error) {
	var c netem.LinkConfig
	var errs []error
	wrap := func(name, v string, err error) {
		if err != nil {
			errs = append(errs, &experiment.FieldError{Field: field + "." + name, Value: v, Err: err})
		}
	}
	var err error
	if l.Delay != "" {
		c.Delay, err = netem.ParseDelay(l.Delay)
		wrap("delay", l.Delay, err)
	}
	if l.Jitter != "" {
		c.Jitter, err = netem.ParseJitter(l.Jitter)
		wrap("jitter", l.Jitter, err)
	}
	if l.Rate != "" {
		c.RateBps, err = netem.ParseRate(l.Rate)
		wrap("rate", l.Rate, err)
	}
	if l.Trace != "" {
		var t string
		if t, err = f.resolveTrace(l.Trace); err == nil {
			c.Trace, err = netem.LoadTrace(t)
		}
		wrap("trace", l.Trace, err)
	}
	if l.Loss != "" {
		c.Loss, err = netem.ParseLoss(l.Loss)
		wrap("loss", l.Loss, err)
	}
	if l.Queue != "" {
		c.Queue, err = netem.ParseQueue(l.Queue)
		wrap("queue", l.Queue, err)
	}
	if l.Jitter != "" {
		wrap("jitter", l.Jitter, c.Jitter.Validate(c.Delay))
	}
	return c, errors.Join(errs...)
}

// Build creates the condition's topology.
func (f *Factory) Build(ctx context.Context, c experiment.Condition, seed int64) (experiment.Network, error) {
	specs := make([]testbed.PathSpec, len(c.Paths))
	for i, p := range c.Paths {
		up, err := f.LinkConfig(p.Up, fmt.Sprintf("paths[%d].up", i))
		if err != nil {
			return nil, err
		}
		down, err := f.LinkConfig(p.Down, fmt.Sprintf("paths[%d].down", i))
		if err != nil {
			return nil, err
		}
		specs[i] = testbed.PathSpec{Name: p.Name, Up: up, Down: down}
	}
	o := testbed.Options{Seed: seed}
	if f.LogDir != "" {
		o.LogDir = filepath.Join(f.LogDir, c.Name)
	}
	var (
		n   *testbed.Net
		err error
	)
	switch c.Topology {
	case "loopback":
		return Local(), nil
	case "single":
		n, err = testbed.NewSingle(ctx, specs[0], o)
	case "twopath":
		n, err = testbed.NewTwoPath(ctx, specs[0], specs[1], o)
	case "multihomed":
		if len(specs) != 2 {
			return nil, fmt.Errorf("topology multihomed: the testbed builds 2 paths, the condition has %d", len(specs))
		}
		n, err = testbed.NewMultiHomed(ctx, specs[0], specs[1], o)
	default:
		return nil, fmt.Errorf("unknown topology %q", c.Topology)
	}
	if err != nil {
		return nil, err
	}
	desc := map[string]string{"emulator": "shunt testbed: namespaces, TUN, user-space netem links"}
	for _, p := range specs {
		desc["link "+p.Name+" up"] = p.Up.String()
		desc["link "+p.Name+" down"] = p.Down.String()
	}
	return &network{n: n, f: f, desc: desc}, nil
}

type network struct {
	n    *testbed.Net
	f    *Factory
	desc map[string]string
}

func (w *network) Client() experiment.Host { return host{w.n.Client} }

func (w *network) Servers() []experiment.Host {
	hs := make([]experiment.Host, len(w.n.Servers))
	for i, s := range w.n.Servers {
		hs[i] = host{s}
	}
	return hs
}

func (w *network) Paths() []experiment.PathInfo {
	ps := make([]experiment.PathInfo, len(w.n.Paths))
	for i, p := range w.n.Paths {
		ps[i] = experiment.PathInfo{Name: p.Name, ClientIface: p.ClientIface, ClientAddr: p.ClientAddr.String(), ServerAddr: p.ServerAddr.String()}
	}
	return ps
}

func (w *network) EmulatorCPU() (time.Duration, error) { return w.n.EmulatorCPU(), nil }
func (w *network) Describe() map[string]string         { return w.desc }
func (w *network) Close() error                        { return w.n.Close() }

type host struct{ ns *testbed.NS }

func (h host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return h.ns.Command(ctx, name, args...)
}

func (h host) Do(fn func() error) error { return h.ns.Do(fn) }

func (h host) Name() string { return h.ns.Name }

func (h host) DialContext(ctx context.Context, network, addr string, o experiment.SockOpts) (net.Conn, error) {
	so, err := sockOpts(o)
	if err != nil {
		return nil, err
	}
	return h.ns.DialContext(ctx, network, addr, so)
}

func (h host) Listen(network, addr string, o experiment.SockOpts) (net.Listener, error) {
	so, err := sockOpts(o)
	if err != nil {
		return nil, err
	}
	return h.ns.Listen(network, addr, so)
}

func sockOpts(o experiment.SockOpts) (testbed.SockOpts, error) {
	so := testbed.SockOpts{CC: o.CC, NotSentLowat: o.NotSentLowat, MPTCP: o.MPTCP}
	if o.Source != "" {
		a, err := netip.ParseAddr(o.Source)
		if err != nil {
			return so, fmt.Errorf("source address %q: %w", o.Source, err)
		}
		so.Source = a
	}
	return so, nil
}

// ReadSockOpts reads back what the kernel uses on a connection.
func ReadSockOpts(c net.Conn) (experiment.SockOpts, error) {
	o, err := testbed.ReadSockOpts(c)
	so := experiment.SockOpts{CC: o.CC, NotSentLowat: o.NotSentLowat, MPTCP: o.MPTCP}
	if o.Source.IsValid() {
		so.Source = o.Source.String()
	}
	return so, err
}
