package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"time"

	"github.com/shunt-net/shunt/experiment"
)

// fakeNet is a Network that builds nothing; it counts what was set up and
// torn down so tests can check the runner's lifecycle.
type fakeNet struct {
	f   *fakeFactory
	cpu time.Duration
}

type fakeHost struct{}

func (fakeHost) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}
func (fakeHost) Do(fn func() error) error { return fn() }
func (fakeHost) DialContext(ctx context.Context, network, addr string, _ experiment.SockOpts) (net.Conn, error) {
	return nil, errors.New("fake host dials nothing")
}

func (fakeHost) Listen(network, addr string, _ experiment.SockOpts) (net.Listener, error) {
	return nil, errors.New("fake host listens on nothing")
}

func (n *fakeNet) Client() experiment.Host    { return fakeHost{} }
func (n *fakeNet) Servers() []experiment.Host { return []experiment.Host{fakeHost{}} }
func (n *fakeNet) Paths() []experiment.PathInfo {
	return []experiment.PathInfo{{Name: "p", ServerAddr: "10.0.0.2"}}
}
func (n *fakeNet) EmulatorCPU() (time.Duration, error) {
	n.cpu += 10 * time.Millisecond // each call: as if the emulator worked 10 ms
	return n.cpu, nil
}
func (n *fakeNet) Describe() map[string]string { return map[string]string{"emulator": "fake"} }
func (n *fakeNet) Close() error {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	n.f.open--
	return nil
}

type fakeFactory struct {
	mu     sync.Mutex
	built  []string // condition names, in build order
	open   int
	failOn string // condition whose build fails
}

func (f *fakeFactory) Check(c experiment.Condition) error {
	for i, p := range c.Paths {
		if p.Down.Rate == "bogus" {
			return fieldErr(fmt.Sprintf("paths[%d].down.rate", i), p.Down.Rate, "not a rate")
		}
	}
	return nil
}

func (f *fakeFactory) Build(ctx context.Context, c experiment.Condition, seed int64) (experiment.Network, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Name == f.failOn {
		return nil, errors.New("no TUN device")
	}
	f.built = append(f.built, c.Name)
	f.open++
	return &fakeNet{f: f}, nil
}

// fakeDriver measures a deterministic function of the run's seed; it fails
// the runs for which fail returns true and can cancel the sweep mid-run.
type fakeDriver struct {
	mu       sync.Mutex
	started  []string // "condition/protocol" per Start
	open     int
	ran      []string // run IDs in order
	fail     func(r *experiment.Run) bool
	cancelAt int // cancel the sweep during the n-th run (1-based); 0 never
	cancel   context.CancelFunc
}

func (d *fakeDriver) Check(p experiment.Protocol, o experiment.Object) error {
	if o.Size == "" {
		return fieldErr("size", "", "missing")
	}
	if v, ok := p.Params["speed"]; ok && v != "fast" && v != "slow" {
		return fieldErr("params.speed", v, "want fast or slow")
	}
	return nil
}

func (d *fakeDriver) Start(ctx context.Context, env *experiment.Env, p experiment.Protocol) (experiment.Session, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started = append(d.started, fmt.Sprintf("%s/%s", env.Condition.Name, p.Name))
	d.open++
	return &fakeSession{d: d}, nil
}

type fakeSession struct{ d *fakeDriver }

func (s *fakeSession) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	s.d.mu.Lock()
	s.d.ran = append(s.d.ran, r.ID)
	n := len(s.d.ran)
	s.d.mu.Unlock()
	if s.d.cancelAt == n {
		s.d.cancel()
		<-ctx.Done()
		return experiment.Result{}, ctx.Err()
	}
	if s.d.fail != nil && s.d.fail(r) {
		return experiment.Result{}, fmt.Errorf("server reset the stream of %s", r.Object.Name)
	}
	v := float64(r.Seed%1000) / 1000
	return experiment.Result{
		Metrics: map[string]float64{"time": v, "first_byte": v / 2},
		Counts:  map[string]float64{"bytes": 10000},
		Sock:    experiment.SockOpts{CC: "cubic"},
		Info:    map[string]string{"reused": "true"},
	}, nil
}

func (s *fakeSession) Info() map[string]string { return map[string]string{"server": "fake/1.0"} }

func (s *fakeSession) Close() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.d.open--
	return nil
}
