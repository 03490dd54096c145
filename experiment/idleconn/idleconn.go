// Package idleconn measures the memory a server holds per idle HTTP/2
// connection (driver "idle", issue 18): Conns h2c connections that sent the
// client preface and an empty SETTINGS frame and read the server's SETTINGS
// are held open while the server's resident set size is read, then closed.
// Metric rss_per_conn_kb: (RSS with the connections open - RSS before) /
// Conns, KB = 1024 bytes; counts conns, rss_before_kb, rss_after_kb.
package idleconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/peers"
	"golang.org/x/net/http2"
)

// Config is the server and how many connections it holds.
type Config struct {
	Server  string        `param:"server" enum:"shunt,nginx,h2o" help:"the server"`
	Conns   int           `param:"conns" help:"idle h2c connections held at once"`
	Workers int           `param:"workers" help:"server workers: nginx worker_processes, h2o num-threads, shunt GOMAXPROCS"`
	Settle  time.Duration `param:"settle" help:"wait after the last connection's handshake before reading the RSS"`
	// Binary runs another build of shunt as the server, to compare builds
	// in one sweep.
	Binary string `param:"binary" help:"shunt binary to serve with (default: this program)"`
	// KeepReader turns parking off (it is shunt serve's default).
	KeepReader bool `param:"keep_reader" help:"shunt serve --park-idle=false: quiet connections keep their read goroutine"`
}

// DefaultConfig: 10,000 connections to shunt serve, a worker per CPU.
func DefaultConfig() Config {
	return Config{Server: peers.Shunt, Conns: 10000, Workers: runtime.NumCPU(), Settle: 2 * time.Second}
}

// maxConns bounds Conns: each is a descriptor here and in the server.
const maxConns = 15000

// Validate checks the counts.
func (c Config) Validate() error {
	switch {
	case c.Conns < 1 || c.Conns > maxConns:
		return experiment.Errorf("params.conns", strconv.Itoa(c.Conns), "want 1 to %d", maxConns)
	case c.Workers < 1:
		return experiment.Errorf("params.workers", strconv.Itoa(c.Workers), "want at least 1")
	case c.KeepReader && c.Server != peers.Shunt:
		return experiment.Errorf("params.keep_reader", "true", "only with server shunt")
	case c.Binary != "" && c.Server != peers.Shunt:
		return experiment.Errorf("params.binary", c.Binary, "only with server shunt")
	case c.Settle < 0:
		return experiment.Errorf("params.settle", c.Settle.String(), "want a duration")
	}
	return nil
}

// Kind is the experiment of driver "idle". Its objects only name runs.
var Kind = experiment.Kind[Config, *Session]{Name: "idle", Default: DefaultConfig, Start: Start}

// Session is one server configuration; each run starts a fresh process,
// so a run's RSS does not include memory a previous run's connections left
// touched (with that, shunt's former engine measured 28.6, 55.2 and 108.3 KB
// per connection in three runs of one process).
type Session struct {
	cfg    Config
	opts   peers.Options
	client experiment.Host
	info   map[string]string
}

// Start prepares the server (a process of its own, shunt's included, so
// its memory is its own) in the network's server namespace on env.Port.
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	root := filepath.Join(env.Dir, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	// A descriptor per connection here, and one in the server, which
	// inherits this limit.
	if err := peers.RaiseFileLimit(uint64(c.Conns + 1000)); err != nil {
		return nil, err
	}
	o := peers.Options{Root: root, Addr: origin.Addr(env.Net, env.Port), Workers: c.Workers,
		Prefix: origin.Prefix(env.Net.Servers()[0]), MaxConnections: c.Conns + 100}
	bin, ver, err := origin.ServerBinary(ctx, c.Server, c.Binary)
	if err != nil {
		return nil, err
	}
	o.Binary = bin
	if c.KeepReader {
		o.Args = []string{"--park-idle=false"}
	}
	return &Session{cfg: c, opts: o, client: env.Net.Client(), info: map[string]string{
		"server": ver, "workers": strconv.Itoa(c.Workers), "max_connections": strconv.Itoa(o.MaxConnections)}}, nil
}

// Info describes the server.
func (s *Session) Info() map[string]string { return s.info }

// Close has nothing to stop: each run stops its server.
func (s *Session) Close() error { return nil }

// Run starts the server, opens the connections, reads the server's RSS,
// and closes them and the server.
func (s *Session) Run(ctx context.Context, r *experiment.Run) (res experiment.Result, err error) {
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	p, err := peers.Start(sctx, s.cfg.Server, s.opts)
	cancel()
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, p.Stop()) }()
	before, err := peers.TreeRSS(p.Pid())
	if err != nil {
		return experiment.Result{}, err
	}
	conns, err := s.open(ctx, p.Addr)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return experiment.Result{}, err
	}
	select {
	case <-time.After(s.cfg.Settle):
	case <-ctx.Done():
		return experiment.Result{}, ctx.Err()
	}
	after, err := peers.TreeRSS(p.Pid())
	if err != nil {
		return experiment.Result{}, err
	}
	n := float64(len(conns))
	return experiment.Result{
		Metrics: map[string]float64{"rss_per_conn_kb": float64(after-before) / 1024 / n},
		Counts:  map[string]float64{"conns": n, "rss_before_kb": float64(before) / 1024, "rss_after_kb": float64(after) / 1024},
		Sock:    clientSock,
	}, nil
}

// open makes Conns connections, 64 at a time, each past the handshake.
func (s *Session) open(ctx context.Context, addr string) ([]net.Conn, error) {
	conns := make([]net.Conn, s.cfg.Conns)
	errs := make([]error, s.cfg.Conns)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range conns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			conns[i], errs[i] = s.handshake(ctx, addr)
		})
	}
	wg.Wait()
	var ok []net.Conn
	for _, c := range conns {
		if c != nil {
			ok = append(ok, c)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ok, fmt.Errorf("%d of %d connections failed: %w", len(errs)-len(ok), len(errs), firstErr(errs))
	}
	return ok, nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// clientSock are the client's socket options, as the other experiments'.
var clientSock = experiment.SockOpts{CC: origin.CC}

// handshake dials, sends the preface and an empty SETTINGS, and reads
// frames until the server's SETTINGS (acknowledging it, as a client must).
func (s *Session) handshake(ctx context.Context, addr string) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := s.client.DialContext(dctx, "tcp", addr, clientSock)
	if err != nil {
		return nil, err
	}
	deadline, _ := dctx.Deadline()
	c.SetDeadline(deadline)
	fr := http2.NewFramer(c, bufio.NewReader(c))
	if _, err := io.WriteString(c, http2.ClientPreface); err == nil {
		err = fr.WriteSettings()
	}
	for err == nil {
		var f http2.Frame
		if f, err = fr.ReadFrame(); err != nil {
			break
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			err = fr.WriteSettingsAck()
			break
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
