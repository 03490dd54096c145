// Package h2load is the server-load experiment (driver "h2load"): h2load
// against shunt's server, nginx or h2o serving the same static files, each
// run one h2load run of a fixed count of requests (Volume / object size,
// bounded; h2load's -D reports 0 req/s here). Metrics: req_per_s and
// mb_per_s (h2load's figures, MB = 10^6 bytes of traffic), the server's CPU
// per request (cpu_per_req_us: user + system time of its processes over the
// run / requests), its resident memory at the end of the run (rss_kb), and
// the requests' median and 99th percentile times (latency_p50_ms, latency_p99_ms,
// from h2load's --log-file); counts: requests, duration_s, h2load's own CPU
// per request (client_cpu_per_req_us: h2load is the other busy process on
// the machine, one thread), and the wait after the run until the server was
// quiet (settle_ms, settle_cpu_ms).
// A new server is warmed up first with a tenth of a run per object.
package h2load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/peers"
)

// Config is the load and the server under it.
type Config struct {
	Server      string           `param:"server" enum:"shunt,nginx,h2o" help:"the server under load"`
	TLS         bool             `param:"tls" help:"h2 over TLS (false: h2c with prior knowledge)"`
	Clients     int              `param:"clients" help:"h2load clients (-c)"`
	Streams     int              `param:"streams" help:"h2load concurrent streams per client (-m)"`
	Workers     int              `param:"workers" help:"server workers: nginx worker_processes, h2o num-threads, shunt GOMAXPROCS"`
	Volume      experiment.Bytes `param:"volume" help:"response bytes per run: h2load -n is volume / object size, within [clients x streams, max_requests]"`
	MaxRequests int              `param:"max_requests" help:"upper bound of h2load -n"`
	// Binary runs another build of shunt as the server, to compare builds
	// in one sweep.
	Binary string `param:"binary" help:"shunt binary to serve with (default: this program)"`
}

// DefaultConfig is h2load -c 10 -m 10 against shunt with a worker per CPU,
// 2 GB of responses or 100,000 requests a run, whichever is fewer: 100,000
// requests of 1 KB and 16 KB, 2,000 of 1 MB, so the shipped matrix (36 runs
// a repetition) takes ~5 minutes a repetition on this 2-core machine.
func DefaultConfig() Config {
	return Config{Server: peers.Shunt, Clients: 10, Streams: 10, Workers: runtime.NumCPU(), Volume: 2 << 30, MaxRequests: 100_000}
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
	if c.Binary != "" && c.Server != peers.Shunt {
		return experiment.Errorf("params.binary", c.Binary, "only with server shunt")
	}
	if c.Volume < 1 {
		return experiment.Errorf("params.volume", strconv.FormatInt(int64(c.Volume), 10), "want at least 1 byte")
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
	dir    string   // scratch: h2load's log file
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
	bin, ver, err := origin.ServerBinary(ctx, c.Server, c.Binary)
	if err != nil {
		return nil, err
	}
	o.Binary = bin
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	p, err := peers.Start(sctx, c.Server, o)
	cancel()
	if err != nil {
		return nil, err
	}
	h2ver, _ := peers.Version("h2load")
	s := &Session{cfg: c, peer: p, client: origin.Prefix(env.Net.Client()), dir: env.Dir, info: map[string]string{
		"server": ver, "client": h2ver, "workers": strconv.Itoa(c.Workers),
		"load": fmt.Sprintf("h2load -c %d -m %d -t 1 (after a warm-up of a tenth of a run per object)", c.Clients, c.Streams)}}
	if err := s.warmUp(ctx, env.Objects); err != nil {
		p.Stop()
		return nil, err
	}
	return s, nil
}

// warmUp runs a tenth of a run of every object, not measured: a fresh
// server's first run paid for growing its heap, stacks and caches (h76's
// four matrices: shunt's first 1 KB runs at 0.95 of its later ones' req/s
// and 1.06 of their CPU per request, h2o's CPU at 0.95).
func (s *Session) warmUp(ctx context.Context, objs []experiment.Object) error {
	for _, o := range objs {
		sz, err := origin.ParseSizes(o)
		if err != nil {
			return err
		}
		l := peers.Load{URLs: []string{s.peer.URL(origin.ObjectPath(sz.Size))}, Clients: s.cfg.Clients, Streams: s.cfg.Streams,
			Requests: max(s.cfg.Clients*s.cfg.Streams, RequestsFor(sz.Size, s.cfg)/10), Prefix: s.client}
		if _, err := s.load(ctx, l); err != nil {
			return fmt.Errorf("warm-up with %s: %w", o.Name, err)
		}
		if _, err := settle(ctx, s.peer.Conns, s.cpu, sleep); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) cpu() (time.Duration, error) { return peers.TreeCPU(s.peer.Pid()) }

// Bounds of settle: it polls every settlePoll, and the server is quiet
// when its CPU time has not moved over settleQuiet polls (/proc counts it
// in 10 ms ticks).
const (
	settlePoll  = 10 * time.Millisecond
	settleQuiet = 3
	settleMax   = 500 * time.Millisecond
)

// settle waits until the server holds no connection (conns: open or
// closing) and its CPU time (cpu) stood still over settleQuiet polls, at
// most settleMax, and returns the CPU time it spent meanwhile. On loopback
// the servers closed a run's connections 2-16 ms after h2load exited,
// spending 1-14 ms of CPU, and the next run started as soon as 12 ms after
// (h77, 28 Nov): without the wait that ran into the next server's run.
func settle(ctx context.Context, conns func() (int, error), cpu func() (time.Duration, error), sleep func(context.Context, time.Duration) error) (time.Duration, error) {
	c0, err := cpu()
	if err != nil {
		return 0, err
	}
	last, still := c0, 0
	for range settleMax / settlePoll {
		if err := sleep(ctx, settlePoll); err != nil {
			return last - c0, err
		}
		n, err := conns()
		if err != nil {
			return last - c0, err
		}
		c, err := cpu()
		if err != nil {
			return last - c0, err
		}
		if c == last {
			still++
		} else {
			last, still = c, 0
		}
		if n == 0 && still >= settleQuiet {
			break
		}
	}
	return last - c0, nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Info describes the server, the load tool and the load.
func (s *Session) Info() map[string]string { return s.info }

// Close stops the server.
func (s *Session) Close() error { return s.peer.Stop() }

// Run measures one object size: one h2load run of RequestsFor requests,
// every one of which must succeed, with the server's CPU time read from /proc
// before and after it.
func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	sz, err := origin.ParseSizes(r.Object)
	if err != nil {
		return experiment.Result{}, err
	}
	log := filepath.Join(s.dir, "h2load.log")
	load := peers.Load{URLs: []string{s.peer.URL(origin.ObjectPath(sz.Size))}, Clients: s.cfg.Clients, Streams: s.cfg.Streams,
		Requests: RequestsFor(sz.Size, s.cfg), Prefix: s.client, LogFile: log}
	cpu0, err := peers.TreeCPU(s.peer.Pid())
	if err != nil {
		return experiment.Result{}, err
	}
	res, err := s.load(ctx, load)
	if err != nil {
		return experiment.Result{}, err
	}
	cpu1, err := peers.TreeCPU(s.peer.Pid())
	if err != nil {
		return experiment.Result{}, err
	}
	rss, err := peers.TreeRSS(s.peer.Pid())
	if err != nil {
		return experiment.Result{}, err
	}
	t0 := time.Now()
	tail, err := settle(ctx, s.peer.Conns, s.cpu, sleep)
	if err != nil {
		return experiment.Result{}, err
	}
	settled := time.Since(t0)
	p50, p99, err := latencies(log, res.Succeeded)
	if err != nil {
		return experiment.Result{}, err
	}
	os.Remove(log) // a line per request: megabytes a run, and its figures are in the record
	return experiment.Result{
		Metrics: map[string]float64{
			"req_per_s":      res.ReqPerSec,
			"mb_per_s":       float64(res.TrafficBytes) / 1e6 / res.Duration.Seconds(),
			"cpu_per_req_us": float64((cpu1 - cpu0).Microseconds()) / float64(res.Succeeded),
			"rss_kb":         float64(rss) / 1024,
			"latency_p50_ms": float64(p50) / 1e6,
			"latency_p99_ms": float64(p99) / 1e6,
		},
		Counts: map[string]float64{"requests": float64(res.Total), "duration_s": res.Duration.Seconds(),
			"client_cpu_per_req_us": float64(res.CPU.Microseconds()) / float64(res.Succeeded),
			"settle_ms":             float64(settled.Microseconds()) / 1e3, "settle_cpu_ms": float64(tail.Microseconds()) / 1e3},
	}, nil
}

// latencies reads h2load's --log-file: the median and 99th percentile of
// the times of the successful requests, which must number want.
func latencies(file string, want int) (p50, p99 time.Duration, err error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	reqs, err := peers.ParseH2loadLog(b)
	if err != nil {
		return 0, 0, err
	}
	var ts []time.Duration
	for _, r := range reqs {
		if r.Status >= 200 && r.Status < 300 {
			ts = append(ts, r.Time)
		}
	}
	if len(ts) != want {
		return 0, 0, fmt.Errorf("h2load's log has %d successful requests of %d, its summary %d", len(ts), len(reqs), want)
	}
	slices.Sort(ts)
	return Percentile(ts, 0.5), Percentile(ts, 0.99), nil
}

// Percentile is the nearest-rank q-quantile of sorted, non-empty times.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func (s *Session) load(ctx context.Context, l peers.Load) (peers.LoadResult, error) {
	r, out, err := peers.H2load(ctx, l)
	if err != nil {
		return r, err
	}
	// h2load's exit code does not tell: count what succeeded.
	if r.Succeeded != l.Requests {
		return r, fmt.Errorf("h2load -n %d: %d succeeded, %d failed, %d errored\n%s", l.Requests, r.Succeeded, r.Failed, r.Errored, out)
	}
	if r.Duration <= 0 {
		return r, errors.New("h2load reported no duration")
	}
	return r, nil
}

// RequestsFor is h2load's -n for an object of size bytes: c.Volume / size,
// at least one request per stream and at most c.MaxRequests.
func RequestsFor(size int64, c Config) int {
	return int(max(int64(c.Clients*c.Streams), min(int64(c.MaxRequests), int64(c.Volume)/max(size, 1))))
}
