// Package viaproxy is issue 14's measurement of shunt proxy (driver
// "proxy"): an unmodified curl fetches one object either through shunt proxy
// (curl -x; the proxy fetches it over every path of the condition with
// mph2.Transport) or directly on one path (curl --interface ADDR), from
// shunt's server, nginx or h2o in the server namespace.
package viaproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/internal/wiretap"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/multipath"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/proxy"
)

// Config says how curl fetches the object:
//
//	mode=proxy   curl -x through shunt proxy, in the client namespace, whose
//	             paths are the condition's (source addresses); its
//	             connections to the origin are closed before every run, so
//	             each run dials afresh as curl does
//	mode=direct  curl --interface on path=NAME's source address
//
// estimates=true (the default) keeps the proxy's path estimates across
// responses, primed by one untimed fetch of the first object at the start,
// as a proxy that has been running has them (prime=false leaves that out:
// the first run is the proxy's first response from the origin);
// estimates=false splits every response evenly at first (MP-H2 without
// +BW/L). path_mode is the proxy's mode (aggregate: split; interactive:
// each response whole on the path expected to finish it first, a path not
// yet measured probed). fresh=true starts a fresh proxy for every run
// (primed first if prime). budget=PATH=SIZE is the proxy's --budget: at
// most SIZE bytes on PATH over the proxy's life, its priming fetch
// included; it needs fresh, or the first run would spend it for the rest.
//
// Metrics: time (curl's time_total: the whole fetch as the application sees
// it, TCP handshakes included), first_byte (time_starttransfer). Counts:
// bytes, and for mode proxy bytes_PATH (what each path delivered of a split
// response; 0 on every path for one passed through whole) and wire_PATH
// (the DATA payload the path's connections read since the proxy started,
// counted by parsing what they read, tail bytes included: what a budget
// bounds).
type Config struct {
	Mode     string           `param:"mode" enum:"proxy,direct" help:"curl through shunt proxy over every path, or directly on one path"`
	Path     string           `param:"path" help:"the path of mode direct"`
	Server   string           `param:"server" enum:"shunt,nginx,h2o" help:"the origin server"`
	SplitMin experiment.Bytes `param:"split_min" help:"shunt proxy's --split-min (0: its default)"`
	CC       string           `param:"cc" help:"congestion control of the proxy's sockets (per socket) and curl's (the client namespace's default)"`
	// Estimates keeps the proxy's path estimates across responses (its
	// default), primed by one untimed fetch of the session's first object
	// as a proxy that has run a while has them; false splits evenly.
	Estimates bool   `param:"estimates" help:"mode proxy: split by path estimates learned from earlier responses (primed by one untimed fetch), else evenly"`
	Prime     bool   `param:"prime" help:"mode proxy with estimates: one untimed fetch before the runs"`
	PathMode  string `param:"path_mode" enum:"aggregate,handover,interactive" help:"mode proxy: how the proxy uses the paths"`
	Budget    string `param:"budget" help:"mode proxy with fresh: PATH=SIZE, the proxy's --budget (over its life)"`
	Fresh     bool   `param:"fresh" help:"mode proxy: a fresh proxy for every run (primed first if prime), so nothing carries over between runs"`
}

// DefaultConfig is curl through the proxy from shunt's server, cubic.
func DefaultConfig() Config {
	return Config{Mode: "proxy", Server: "shunt", CC: origin.CC, Estimates: true, Prime: true, PathMode: "aggregate"}
}

// Validate checks the options together.
func (c Config) Validate() error {
	switch {
	case c.Mode == "direct" && c.Path == "":
		return experiment.Errorf("params.path", "", "mode direct needs path=NAME")
	case c.Mode == "proxy" && c.Path != "":
		return experiment.Errorf("params.path", c.Path, "mode proxy uses every path")
	case c.Mode == "direct" && !c.Estimates:
		return experiment.Errorf("params.estimates", "false", "only for mode proxy")
	case c.Mode == "direct" && !c.Prime:
		return experiment.Errorf("params.prime", "false", "only for mode proxy")
	case c.Mode == "direct" && c.PathMode != "aggregate":
		return experiment.Errorf("params.path_mode", c.PathMode, "only for mode proxy")
	case !c.Estimates && !c.Prime:
		return experiment.Errorf("params.prime", "false", "primes the estimates: only with estimates=true")
	case c.Mode == "direct" && (c.Budget != "" || c.Fresh):
		return experiment.Errorf("params.mode", c.Mode, "budget and fresh are for mode proxy")
	case c.Budget != "" && !c.Fresh:
		// Over a session's runs the budget would be spent by the first.
		return experiment.Errorf("params.budget", c.Budget, "a budget holds over the proxy's life: set fresh=true, a proxy per run")
	case c.SplitMin < 0:
		return experiment.Errorf("params.split_min", strconv.FormatInt(int64(c.SplitMin), 10), "want a positive size")
	}
	if c.Budget != "" {
		if _, _, err := mph2.ParseBudget(c.Budget); err != nil {
			return experiment.Errorf("params.budget", c.Budget, "%v", err)
		}
	}
	return nil
}

// Kind is the experiment of driver "proxy".
var Kind = experiment.Kind[Config, *Session]{
	Name:        "proxy",
	Default:     DefaultConfig,
	CheckObject: func(_ Config, o experiment.Object) error { return origin.CheckSizeOnly("proxy", o) },
	Start:       Start,
}

// Session fetches from one condition's origin.
type Session struct {
	c      Config
	env    *experiment.Env
	origin *origin.Server
	source string // mode direct: the path's client address
	px     *proxy.Running
	stop   context.CancelFunc
	info   map[string]string
	undo   func() error

	mu        sync.Mutex
	delivered []int64        // this run's bytes per path (mode proxy)
	wire      []func() int64 // DATA read per path since the proxy started, once its connections are closed
	runs      int
}

// Start writes the objects, starts the origin, makes c.CC the client
// namespace's default (curl cannot set it per socket) and, for mode proxy,
// starts the proxy in the client namespace.
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	curl, err := peers.Version("curl")
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, env: env, stop: func() {}, undo: func() error { return nil }}
	paths := env.Net.Paths()
	if c.Mode == "direct" {
		for _, p := range paths {
			if p.Name == c.Path {
				s.source = p.ClientAddr
			}
		}
		if s.source == "" {
			return nil, &experiment.FieldError{Field: "params.path", Value: c.Path, Err: fmt.Errorf("no such path in condition %s", env.Condition.Name)}
		}
	}
	if err := origin.WriteObjects(env.Dir, env.Objects); err != nil {
		return nil, err
	}
	s.origin, err = origin.Start(ctx, env.Net.Servers()[0], c.Server, env.Dir, origin.Addr(env.Net, env.Port), false, env.Log, origin.Extras{})
	if err != nil {
		return nil, err
	}
	s.info = map[string]string{"client": curl}
	for k, v := range s.origin.Info {
		s.info[k] = v
	}
	client := env.Net.Client()
	if s.undo, err = origin.SetNamespaceCC(client, c.CC); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	if cc, err := origin.NamespaceCC(client); err == nil {
		s.info["client_cc"] = cc + " (curl: the client namespace's default)"
	}
	if c.Mode == "direct" {
		s.info["via"] = "direct, source address " + s.source
		return s, nil
	}
	if c.Budget != "" {
		s.info["budget"] = c.Budget + " over the proxy's life"
	}
	if err := s.startProxy(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	split := "256KiB (default)"
	if c.SplitMin > 0 {
		split = strconv.FormatInt(int64(c.SplitMin), 10) + " bytes"
	}
	est := "even splits (no estimate cache)"
	if c.Estimates && !c.Prime {
		est = "path estimates cached across responses, none before the first run"
	}
	if c.Estimates && c.Prime {
		est = "path estimates cached across responses, primed by one untimed fetch"
	}
	fresh := "fresh connections per run"
	if c.Fresh {
		fresh = "a fresh proxy per run"
	}
	s.info["via"] = "shunt proxy (mph2.Transport over every path, mode " + c.PathMode + ", " + fresh + ", split_min " + split + ", " + est + ", " + c.CC + " per socket)"
	return s, nil
}

// startProxy starts shunt proxy in the client namespace over every path
// (each path's reads counted, wiretap) and primes its estimates with one
// untimed fetch of the first object if the config says so.
func (s *Session) startProxy(ctx context.Context) error {
	c, client := s.c, s.env.Net.Client()
	pm, _ := multipath.ParseMode(c.PathMode) // checked by the enum
	cfg := proxy.Config{SplitMin: int64(c.SplitMin), NoEstimateCache: !c.Estimates, Mode: pm}
	budgetPath, budget := "", int64(0)
	if c.Budget != "" {
		budgetPath, budget, _ = mph2.ParseBudget(c.Budget) // checked by Validate
	}
	s.wire = nil
	for _, pi := range s.env.Net.Paths() {
		dial, wire := wiretap.Dial(func(ctx context.Context, network, addr string) (net.Conn, error) {
			return client.DialContext(ctx, network, addr, experiment.SockOpts{CC: c.CC, Source: pi.ClientAddr})
		})
		p := mph2.Path{Name: pi.Name, Dial: dial}
		if pi.Name == budgetPath {
			p.Budget, budgetPath = budget, ""
		}
		cfg.Paths = append(cfg.Paths, p)
		s.wire = append(s.wire, wire)
	}
	if budgetPath != "" {
		return &experiment.FieldError{Field: "params.budget", Value: c.Budget, Err: fmt.Errorf("no path %s in condition %s", budgetPath, s.env.Condition.Name)}
	}
	ln, err := client.Listen("tcp", "127.0.0.1:0", experiment.SockOpts{CC: c.CC})
	if err != nil {
		return err
	}
	pctx, stop := context.WithCancel(context.Background())
	s.delivered = make([]int64, len(cfg.Paths))
	cfg.Listener = ln
	cfg.ErrorLog = log.New(s.env.Log, "shunt proxy: ", log.LstdFlags)
	cfg.Progress = func(p int, n int64) {
		s.mu.Lock()
		s.delivered[p] = n
		s.mu.Unlock()
	}
	if s.px, err = proxy.Start(pctx, cfg); err != nil {
		stop()
		ln.Close()
		return err
	}
	s.stop = stop
	if c.Estimates && c.Prime && len(s.env.Objects) > 0 {
		sz, err := origin.ParseSizes(s.env.Objects[0])
		if err == nil {
			_, err = s.fetch(ctx, sz.Size)
		}
		if err != nil {
			return fmt.Errorf("priming the proxy's estimates: %w", err)
		}
	}
	return nil
}

func (s *Session) Info() map[string]string { return s.info }

// Close stops the proxy and the origin and restores the namespace's CC.
func (s *Session) Close() error {
	var errs []error
	errs = append(errs, s.stopProxy())
	errs = append(errs, s.undo())
	if s.origin != nil {
		errs = append(errs, s.origin.Close())
	}
	return errors.Join(errs...)
}

// stopProxy stops the proxy, if one runs, and waits for it.
func (s *Session) stopProxy() error {
	if s.px == nil {
		return nil
	}
	s.stop()
	err := s.px.Wait()
	s.px = nil
	return err
}

// Run fetches the object once with curl and checks it by length and
// SHA-256 against the generated bytes; with fresh, every run after the
// first starts a new proxy.
func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	sz, err := origin.ParseSizes(r.Object)
	if err != nil {
		return experiment.Result{}, err
	}
	if s.c.Fresh && s.runs > 0 {
		if err := errors.Join(s.stopProxy(), s.startProxy(ctx)); err != nil {
			return experiment.Result{}, fmt.Errorf("a fresh proxy for the run: %w", err)
		}
	}
	s.runs++
	w, err := s.fetch(ctx, sz.Size)
	if err != nil {
		return experiment.Result{}, err
	}
	res := experiment.Result{
		Metrics: map[string]float64{"time": w.total, "first_byte": w.firstByte},
		Counts:  map[string]float64{"bytes": float64(sz.Size)},
		Info:    map[string]string{},
		Sock:    experiment.SockOpts{CC: s.c.CC, Source: s.source},
	}
	if s.px != nil {
		// Closed, the connections have read their last byte: the counts
		// are final up to this run.
		s.px.CloseConnections()
		s.mu.Lock()
		for i, p := range s.env.Net.Paths() {
			res.Counts["bytes_"+p.Name] = float64(s.delivered[i])
			res.Counts["wire_"+p.Name] = float64(s.wire[i]())
		}
		s.mu.Unlock()
	}
	return res, nil
}

// fetch runs curl for the object of size bytes, through the proxy on fresh
// connections or directly, and checks the body.
func (s *Session) fetch(ctx context.Context, size int64) (curlTimes, error) {
	url := "http://" + s.origin.Addr + origin.ObjectPath(size)
	args := []string{"-sS", "--fail", "-o", "-", "-w", "%{stderr}" + writeOut}
	if s.px != nil {
		s.px.CloseConnections()
		s.mu.Lock()
		clear(s.delivered)
		s.mu.Unlock()
		args = append(args, "-x", "http://"+s.px.Addr)
	} else {
		args = append(args, "--interface", s.source)
	}
	cmd := s.env.Net.Client().Command(ctx, "curl", append(args, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	body, err := cmd.StdoutPipe()
	if err != nil {
		return curlTimes{}, err
	}
	if err := cmd.Start(); err != nil {
		return curlTimes{}, err
	}
	h := sha256.New()
	n, cerr := io.Copy(h, body)
	if err := errors.Join(cerr, cmd.Wait()); err != nil {
		return curlTimes{}, fmt.Errorf("curl %s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if want := content.Digest(size); n != size || [32]byte(h.Sum(nil)) != want {
		return curlTimes{}, fmt.Errorf("curl %s: %d bytes, SHA-256 %x; want %d bytes, %x", url, n, h.Sum(nil), size, want)
	}
	w, err := parseWriteOut(stderr.String())
	if err != nil {
		return curlTimes{}, fmt.Errorf("curl %s: %w", url, err)
	}
	return w, nil
}

// writeOut is curl's -w after %{stderr}: the last line of its stderr.
const writeOut = "\\nshunt-curl %{http_code} %{time_total} %{time_starttransfer}\\n"

type curlTimes struct{ total, firstByte float64 }

// parseWriteOut reads writeOut's line from curl's stderr.
func parseWriteOut(stderr string) (curlTimes, error) {
	for _, line := range strings.Split(stderr, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "shunt-curl" {
			continue
		}
		if f[1] != "200" {
			return curlTimes{}, fmt.Errorf("status %s, want 200", f[1])
		}
		total, err1 := strconv.ParseFloat(f[2], 64)
		first, err2 := strconv.ParseFloat(f[3], 64)
		if err := errors.Join(err1, err2); err != nil {
			return curlTimes{}, fmt.Errorf("write-out %q: %w", line, err)
		}
		return curlTimes{total, first}, nil
	}
	return curlTimes{}, fmt.Errorf("no write-out line in curl's stderr %q", stderr)
}
