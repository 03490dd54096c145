// Package h2load is the server-load experiment (driver "h2load"): h2load
// against shunt's server, nginx or h2o serving the same static files, each
// run one measured h2load run of about Target sized by a probe run, because
// h2load's -D reports 0 req/s here. Metrics: req_per_s and mb_per_s
// (h2load's figures, MB = 10^6 bytes of traffic); counts: requests.
package h2load

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/peers"
)

// Config is the load and the server under it.
type Config struct {
	Server      string        `param:"server" enum:"shunt,nginx,h2o" help:"the server under load"`
	TLS         bool          `param:"tls" help:"h2 over TLS (false: h2c with prior knowledge)"`
	Clients     int           `param:"clients" help:"h2load clients (-c)"`
	Streams     int           `param:"streams" help:"h2load concurrent streams per client (-m)"`
	Workers     int           `param:"workers" help:"server workers: nginx worker_processes, h2o num-threads, shunt GOMAXPROCS"`
	Target      time.Duration `param:"target" help:"aimed duration of each measured run"`
	MaxRequests int           `param:"max_requests" help:"upper bound of h2load -n"`
}

// DefaultConfig is h2load -c 10 -m 10 against shunt with a worker per CPU.
func DefaultConfig() Config {
	return Config{Server: peers.Shunt, Clients: 10, Streams: 10, Workers: runtime.NumCPU(), Target: 3 * time.Second, MaxRequests: 1_000_000}
}

// Validate checks the counts.
func (c Config) Validate() error {
	for _, n := range []struct {
		key string
		v   int
	}{{"clients", c.Clients}, {"streams", c.Streams}, {"workers", c.Workers}, {"max_requests", c.MaxRequests}} {
		if n.v < 1 {
			return experiment.Errorf("params."+n.key, strconv.Itoa(n.v), "want at least 1")
		}
	}
	if c.Target <= 0 {
		return experiment.Errorf("params.target", c.Target.String(), "want a positive duration")
	}
	return nil
}

// Kind is the experiment of driver "h2load".
var Kind = experiment.Kind[Config, *Session]{
	Name:        "h2load",
	Default:     DefaultConfig,
	CheckObject: func(_ Config, o experiment.Object) error { return origin.CheckSizeOnly("h2load", o) },
	Start:       Start,
}

// Session is one server under load, started once for its runs.
type Session struct {
	cfg    Config
	peer   *peers.Peer
	client []string // argv prefix that runs h2load in the client's namespace
	info   map[string]string
}

// Start writes env's objects and starts the server (a process of its own,
// shunt's included, so its CPU and workers are its own) in the network's
// server namespace on env.Port.
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	if err := peers.Available("h2load"); err != nil {
		return nil, err
	}
	root := filepath.Join(env.Dir, "www")
	if err := origin.WriteObjects(root, env.Objects); err != nil {
		return nil, err
	}
	o := peers.Options{Root: root, Addr: origin.Addr(env.Net, env.Port), TLS: c.TLS, Workers: c.Workers, Prefix: origin.Prefix(env.Net.Servers()[0])}
	if c.Server == peers.Shunt {
		bin, err := origin.ShuntBinary(ctx)
		if err != nil {
			return nil, err
		}
		o.Binary = bin
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	p, err := peers.Start(sctx, c.Server, o)
	cancel()
	if err != nil {
		return nil, err
	}
	ver, err := peers.Version(c.Server)
	if c.Server == peers.Shunt {
		ver, err = "shunt serve ("+runtime.Version()+")", nil
	}
	if err != nil {
		ver = c.Server
	}
	h2ver, _ := peers.Version("h2load")
	return &Session{cfg: c, peer: p, client: origin.Prefix(env.Net.Client()), info: map[string]string{
		"server": ver, "client": h2ver, "workers": strconv.Itoa(c.Workers),
		"load": fmt.Sprintf("h2load -c %d -m %d -t 1", c.Clients, c.Streams)}}, nil
}

// Info describes the server, the load tool and the load.
func (s *Session) Info() map[string]string { return s.info }

// Close stops the server.
func (s *Session) Close() error { return s.peer.Stop() }

// Run measures one object size: a probe of 10 requests per stream, then a
// run of about Target at the probe's rate. Every request must succeed.
func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	sz, err := origin.ParseSizes(r.Object)
	if err != nil {
		return experiment.Result{}, err
	}
	load := peers.Load{URLs: []string{s.peer.URL(origin.ObjectPath(sz.Size))}, Clients: s.cfg.Clients, Streams: s.cfg.Streams,
		Requests: 10 * s.cfg.Clients * s.cfg.Streams, Prefix: s.client}
	probe, err := s.load(ctx, load)
	if err != nil {
		return experiment.Result{}, fmt.Errorf("probe: %w", err)
	}
	load.Requests = RequestsFor(probe.ReqPerSec, s.cfg.Target, load.Requests, s.cfg.MaxRequests)
	res, err := s.load(ctx, load)
	if err != nil {
		return experiment.Result{}, err
	}
	return experiment.Result{
		Metrics: map[string]float64{"req_per_s": res.ReqPerSec, "mb_per_s": float64(res.TrafficBytes) / 1e6 / res.Duration.Seconds()},
		Counts:  map[string]float64{"requests": float64(res.Total), "duration_s": res.Duration.Seconds()},
	}, nil
}

func (s *Session) load(ctx context.Context, l peers.Load) (peers.LoadResult, error) {
	r, out, err := peers.H2load(ctx, l)
	if err != nil {
		return r, err
	}
	if r.Succeeded != l.Requests {
		return r, fmt.Errorf("h2load -n %d: %d succeeded, %d failed, %d errored\n%s", l.Requests, r.Succeeded, r.Failed, r.Errored, out)
	}
	if r.Duration <= 0 {
		return r, errors.New("h2load reported no duration")
	}
	return r, nil
}

// RequestsFor is the -n that lasts about target at rate, within [lo, hi].
func RequestsFor(rate float64, target time.Duration, lo, hi int) int {
	return max(lo, min(hi, int(rate*target.Seconds())))
}
