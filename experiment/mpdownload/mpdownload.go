// Package mpdownload is the MP-H2 experiment (driver "mph2"): one object
// downloaded over a two-path (or multi-homed) network by MP-H2 or a
// baseline, from shunt's server in every server namespace.
package mpdownload

import (
	"context"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/internal/sockctl"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/multipath"
	"github.com/shunt-net/shunt/netem"
	"github.com/shunt-net/shunt/server"
)

// Config says how one object is downloaded over a two-path network (MP-H2 §5.3,
// Figure 8; §5.7, Figure 15) from shunt's server, with one of:
//
//	mode=mph2          MP-H2, size unknown
//	mode=mph2-fs       MP-H2+FS: the size is given
//	mode=mph2-fs-bwl   MP-H2+FS+BW/L: size given, path estimates cached
//	                   across the session's downloads (primed by one
//	                   untimed download before the first run)
//	mode=single        one path (path=NAME), package mph2 with one path
//	mode=mhttp         mHTTP [37]: fixed chunks of chunk=SIZE, each path
//	                   fetching the next unclaimed chunk when its last is done
//	mode=mptcp         one HTTP/2 connection over a kernel MPTCP socket
//	                   (primary subflow on the first path)
//
// restart_links=true re-applies every link direction with a trace just
// before the timed download, so its schedule starts with the download
// (MP-H2 §5.8's drop at 1050 ms, and §5.6's on/off rows over the same
// bandwidth); trace_shift=DURATION (with restart_links) starts mahimahi
// traces rep x DURATION into the trace, so repetitions see different
// stretches of it and rows the same ones.
//
// Multi-homing (MP-H2 §5.5): on a network whose paths reach different
// servers (topology multihomed), a server runs in every server namespace
// with the same objects, and each path sends its requests to its own server
// by the path's address mapping (mph2.Path.Map); the URL names the first
// path's server. Every run opens fresh
// connections and warms them up with a 100-byte request on every path
// before the timed download (the paper uses persistent connections); MP-H2
// rows open them with Client.Connect, which exchanges a PING on each.
// Metrics: time (request to last byte), ideal (Equation 1 with the
// condition's link rates and RTTs, multipath.IdealTime). Counts: bytes,
// requests, bytes received (tail included) and the last byte's time per
// path, tail_bytes.
type Config struct {
	Mode      string           `param:"mode" enum:"mph2,mph2-fs,mph2-fs-bwl,single,mhttp,mptcp" help:"the scheduler"`
	Path      string           `param:"path" help:"the path of mode single"`
	Chunk     experiment.Bytes `param:"chunk" help:"mHTTP's chunk size"`
	Cut       experiment.Bytes `param:"cut" help:"stop the download there (MP-H2 §5.7)"`
	EndAdjust string           `param:"end_adjust" enum:"flow,rst" help:"how a range end is moved: flow (HTTP/2 flow control, no tail bytes) or rst (RST_STREAM)"`
	// Pipelining false requests a path's next chunk only when its current one is complete.
	Pipelining   bool          `param:"pipelining" help:"request a path's next chunk before its current one is complete"`
	CC           string        `param:"cc" help:"congestion control, both ends"`
	RestartLinks bool          `param:"restart_links" help:"re-apply traced links just before the timed download"`
	TraceShift   time.Duration `param:"trace_shift" help:"with restart_links: start mahimahi traces rep x this far in"`
}

// DefaultConfig is MP-H2 with flow-control end adjustment and pipelining.
func DefaultConfig() Config {
	return Config{Mode: "mph2", EndAdjust: "flow", Pipelining: true, CC: origin.CC}
}

// Validate checks the options together.
func (c Config) Validate() error {
	switch {
	case c.Mode == "single" && c.Path == "":
		return experiment.Errorf("params.path", "", "mode single needs path=NAME")
	case c.Mode == "mhttp" && c.Chunk <= 0:
		return experiment.Errorf("params.chunk", strconv.FormatInt(int64(c.Chunk), 10), "mode mhttp needs chunk=SIZE, a positive size")
	case c.Chunk < 0:
		return experiment.Errorf("params.chunk", strconv.FormatInt(int64(c.Chunk), 10), "want a positive size")
	case c.Cut < 0:
		return experiment.Errorf("params.cut", strconv.FormatInt(int64(c.Cut), 10), "want a positive size")
	}
	return origin.CheckTraceShift(c.RestartLinks, c.TraceShift)
}

func (c Config) endAdjust() mph2.EndAdjust {
	if c.EndAdjust == "rst" {
		return mph2.EndReset
	}
	return mph2.EndFlowControl
}

// Kind is the experiment of driver "mph2".
var Kind = experiment.Kind[Config, *Session]{
	Name:        "mph2",
	Default:     DefaultConfig,
	CheckObject: func(_ Config, o experiment.Object) error { return origin.CheckSizeOnly("mph2", o) },
	Start:       Start,
}

// Start writes env's objects and starts shunt's server in every server
// namespace on env.Port.
func Start(ctx context.Context, env *experiment.Env, mp Config) (*Session, error) {
	paths := env.Net.Paths()
	if mp.Path != "" && !slicesContainsPath(paths, mp.Path) {
		return nil, &experiment.FieldError{Field: "params.path", Value: mp.Path, Err: fmt.Errorf("no such path in condition %s", env.Condition.Name)}
	}
	if err := origin.WriteObjects(env.Dir, env.Objects); err != nil {
		return nil, err
	}
	targets, addrs, err := serverTargets(paths, len(env.Net.Servers()), env.Port)
	if err != nil {
		return nil, err
	}
	if mp.Mode == "mptcp" && len(addrs) > 1 {
		return nil, &experiment.FieldError{Field: "params.mode", Value: mp.Mode, Err: fmt.Errorf("condition %s reaches %d servers; an MPTCP connection has one", env.Condition.Name, len(addrs))}
	}
	hd, err := content.NewHandler(env.Dir)
	if err != nil {
		return nil, err
	}
	// MPTCP needs an MPTCP listener; the other modes get plain TCP, so no
	// MPTCP socket is involved in their rows.
	sock := experiment.SockOpts{CC: mp.CC, MPTCP: mp.Mode == "mptcp"}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(addrs))
	stop := func(n int) error {
		cancel()
		for range n {
			<-done
		}
		return hd.Close()
	}
	// Every server serves the same handler, so multi-homed paths fetch the
	// same bytes from different namespaces.
	for i, a := range addrs {
		ln, err := env.Net.Servers()[i].Listen("tcp", a, sock)
		if err != nil {
			stop(i)
			return nil, err
		}
		srv := &server.Server{Handler: hd, CC: mp.CC, MPTCP: mp.Mode == "mptcp",
			ErrorLog: log.New(env.Log, "shunt server "+a+": ", log.LstdFlags)}
		go func() { done <- srv.Serve(sctx, ln) }()
	}
	s := &Session{p: mp, env: env, targets: targets, base: "http://" + targets[0], cache: estimate.NewCache(0)}
	s.close = func() error { return stop(len(addrs)) }
	return s, nil
}

// serverTargets is each path's server HOST:PORT and the distinct server
// addresses in path order, which is the order of the network's server
// namespaces (testbed: path i of a multi-homed network reaches server i).
func serverTargets(paths []experiment.PathInfo, servers, port int) (targets, addrs []string, err error) {
	for _, p := range paths {
		t := net.JoinHostPort(p.ServerAddr, strconv.Itoa(port))
		targets = append(targets, t)
		if !slices.Contains(addrs, t) {
			addrs = append(addrs, t)
		}
	}
	if len(addrs) != servers {
		return nil, nil, fmt.Errorf("paths reach %d server addresses, the network has %d servers", len(addrs), servers)
	}
	return targets, addrs, nil
}

func slicesContainsPath(ps []experiment.PathInfo, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// Session downloads from the servers of one condition.
type Session struct {
	p       Config
	env     *experiment.Env
	targets []string        // each path's server, HOST:PORT, in Net.Paths order
	base    string          // the URL's scheme and host: the first path's server
	cache   *estimate.Cache // MP-H2+FS+BW/L's estimates, across runs
	primed  bool
	close   func() error
}

func (s *Session) Info() map[string]string {
	return map[string]string{"server": "shunt (in-process)", "server_cc": s.p.CC + " (per socket)",
		"client": "shunt mph2 (" + s.p.Mode + ")"}
}

func (s *Session) Close() error { return s.close() }

// path is the network's path i as MP-H2 and mHTTP use it: dialled from the
// client namespace with the path's source address, its requests sent to
// its own server (multi-homing) by mapping the first path's.
func (s *Session) path(i int, pi experiment.PathInfo, mptcp bool) mph2.Path {
	p := mph2.Path{Name: pi.Name, Dial: s.pathDial(pi, mptcp)}
	if s.targets[i] != s.targets[0] {
		p.Map = map[string]string{s.targets[0]: s.targets[i]}
	}
	return p
}

// pathDial dials from the client namespace bound to a path's address.
func (s *Session) pathDial(pi experiment.PathInfo, mptcp bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	client := s.env.Net.Client()
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return client.DialContext(ctx, network, addr, experiment.SockOpts{CC: s.p.CC, MPTCP: mptcp, Source: pi.ClientAddr})
	}
}

// ideal is Equation 1's completion time for the condition's paths (for
// single: that path alone), with the links' configured rates and RTTs;
// false if a downlink's rate varies (a trace), where Equation 1 has no
// single rate to use.
func (s *Session) ideal(size int64) (time.Duration, bool, error) {
	var conds []multipath.Cond
	for _, p := range s.env.Condition.Paths {
		if s.p.Mode == "single" && p.Name != s.p.Path {
			continue
		}
		if p.Down.Trace != "" {
			return 0, false, nil
		}
		rate, err := netem.ParseRate(p.Down.Rate)
		if err != nil {
			return 0, false, fmt.Errorf("path %s down rate: %w", p.Name, err)
		}
		rtt, err := p.RTT()
		if err != nil {
			return 0, false, err
		}
		conds = append(conds, multipath.Cond{Bandwidth: rate / 8, Delay: rtt})
	}
	return multipath.IdealTime(size, conds), true, nil
}

func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	sz, err := origin.ParseSizes(r.Object)
	if err != nil {
		return experiment.Result{}, err
	}
	var res experiment.Result
	// Each mode calls timed() once its connections are warm, just before
	// the timed download.
	var restarted map[string]string
	timed := func() error {
		var err error
		restarted, err = s.restartLinks(r.Rep)
		return err
	}
	switch s.p.Mode {
	case "mhttp":
		res, err = s.runMHTTP(ctx, sz.Size, timed)
	case "mptcp":
		res, err = s.runMPTCP(ctx, sz.Size, timed)
	default:
		res, err = s.runMPH2(ctx, sz.Size, timed)
	}
	if res.Info == nil {
		res.Info = map[string]string{}
	}
	maps.Copy(res.Info, restarted)
	if err != nil {
		return res, err
	}
	want := sz.Size
	if int64(s.p.Cut) > 0 {
		want = min(want, int64(s.p.Cut))
	}
	ideal, ok, err := s.ideal(want)
	if err != nil {
		return res, err
	}
	if ok {
		res.Metrics["ideal"] = ideal.Seconds()
	}
	res.Sock = experiment.SockOpts{CC: s.p.CC, MPTCP: s.p.Mode == "mptcp"}
	return res, nil
}

func (s *Session) runMPH2(ctx context.Context, size int64, timed func() error) (experiment.Result, error) {
	c := &mph2.Client{EndAdjust: s.p.endAdjust(), NoPipelining: !s.p.Pipelining}
	serverOf := map[string]string{} // path name: the server it is sent to
	for i, pi := range s.env.Net.Paths() {
		if s.p.Mode == "single" && pi.Name != s.p.Path {
			continue
		}
		serverOf[pi.Name] = s.targets[i]
		c.Paths = append(c.Paths, s.path(i, pi, false))
	}
	defer c.Close()
	var o mph2.Options
	if s.p.Mode == "mph2-fs" || s.p.Mode == "mph2-fs-bwl" {
		o.Size = size
	}
	if s.p.Mode == "mph2-fs-bwl" {
		c.Cache = s.cache
	}
	o.Cut = int64(s.p.Cut)
	if o.Cut > 0 {
		o.Settle = 300 * time.Millisecond // tail bytes still in flight count
	}
	url := s.base + origin.ObjectPath(size)
	// Connect opens every path's connection and exchanges a PING on it (h2c
	// probe), so the timed download starts on persistent connections, as in
	// the paper.
	if err := c.Connect(ctx, url); err != nil {
		return experiment.Result{}, err
	}
	if c.Cache != nil && !s.primed {
		if _, err := c.Download(ctx, url, discardAt{}, o); err != nil {
			return experiment.Result{}, fmt.Errorf("priming the estimate cache: %w", err)
		}
		s.primed = true
	}
	v := &verifyAt{want: size}
	if o.Cut > 0 {
		v.want = o.Cut
	}
	if err := timed(); err != nil {
		return experiment.Result{}, err
	}
	res, err := c.Download(ctx, url, v, o)
	if err != nil {
		return experiment.Result{}, err
	}
	if err := v.check(); err != nil {
		return experiment.Result{}, err
	}
	out := experiment.Result{
		Metrics: map[string]float64{"time": res.Total.Seconds()},
		Counts:  mph2.Counts(res),
		Info:    map[string]string{},
	}
	for _, p := range res.Paths {
		out.Info["proto_"+p.Name] = p.Proto
		out.Info["server_"+p.Name] = serverOf[p.Name]
		if p.Down {
			out.Info["down_"+p.Name] = p.Err
		}
	}
	if res.RangesIgnored {
		out.Info["ranges"] = "ignored"
	}
	return out, nil
}

type discardAt struct{}

func (discardAt) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// verifyAt checks bytes written at offsets against the generated object
// and that each of [0, want) is written exactly once.
type verifyAt struct {
	mu   sync.Mutex
	want int64
	got  int64
	err  error
}

func (v *verifyAt) WriteAt(p []byte, off int64) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ver := content.NewVerifier(off)
	if _, err := ver.Write(p); err != nil && v.err == nil {
		v.err = fmt.Errorf("bytes at %d: %w", off, err)
	}
	v.got += int64(len(p))
	return len(p), nil
}

// check: every byte verified, and as many as wanted (with each written
// once, verified by package mph2's tests, the count means full coverage).
func (v *verifyAt) check() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		return v.err
	}
	if v.got != v.want {
		return fmt.Errorf("%d bytes written, want %d", v.got, v.want)
	}
	return nil
}

// runMHTTP downloads with mph2.MHTTP over every path.
func (s *Session) runMHTTP(ctx context.Context, size int64, timed func() error) (experiment.Result, error) {
	m := &mph2.MHTTP{Chunk: int64(s.p.Chunk)}
	for i, pi := range s.env.Net.Paths() {
		m.Paths = append(m.Paths, s.path(i, pi, false))
	}
	defer m.Close()
	if err := m.Warm(ctx, s.base+origin.ObjectPath(origin.WarmSize)); err != nil {
		return experiment.Result{}, err
	}
	if err := timed(); err != nil {
		return experiment.Result{}, err
	}
	v := &verifyAt{want: size}
	res, err := m.Download(ctx, s.base+origin.ObjectPath(size), v, nil)
	if err != nil {
		return experiment.Result{}, err
	}
	if err := v.check(); err != nil {
		return experiment.Result{}, err
	}
	out := experiment.Result{Metrics: map[string]float64{"time": res.Total.Seconds()}, Counts: map[string]float64{"bytes": float64(res.Size)}}
	for _, p := range res.Paths {
		out.Counts["bytes_"+p.Name] = float64(p.Delivered)
		out.Counts["requests_"+p.Name] = float64(p.Requests)
	}
	return out, nil
}

// runMPTCP downloads over one HTTP/2 connection on a kernel MPTCP socket
// whose first subflow leaves by the first path; the testbed's endpoint for
// the second path's address adds the second subflow.
func (s *Session) runMPTCP(ctx context.Context, size int64, timed func() error) (experiment.Result, error) {
	var conn net.Conn
	dial := s.pathDial(s.env.Net.Paths()[0], true)
	tr := &h2.Transport{AllowHTTP: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		conn = c
		return c, err
	}}
	defer tr.CloseIdleConnections()
	if err := s.get(ctx, tr, origin.WarmSize); err != nil {
		return experiment.Result{}, fmt.Errorf("warm-up: %w", err)
	}
	// The second subflow joins after the first handshake (one cell RTT and
	// the path manager's reaction): wait for it, so the timed download
	// starts on both subflows as a persistent connection would.
	if err := awaitSubflow(ctx, conn, 5*time.Second); err != nil {
		return experiment.Result{}, err
	}
	if err := timed(); err != nil {
		return experiment.Result{}, err
	}
	start := time.Now()
	if err := s.get(ctx, tr, size); err != nil {
		return experiment.Result{}, err
	}
	elapsed := time.Since(start)
	return experiment.Result{Metrics: map[string]float64{"time": elapsed.Seconds()}, Counts: map[string]float64{"bytes": float64(size)}}, nil
}

// get fetches the whole object of size bytes from the first path's server
// and verifies it.
func (s *Session) get(ctx context.Context, rt http.RoundTripper, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+origin.ObjectPath(size), nil)
	if err != nil {
		return err
	}
	_, err = origin.Fetch(rt, req, size, nil)
	return err
}

// awaitSubflow waits until the MPTCP connection c has a subflow beyond its
// first, reading the kernel's count every few milliseconds up to timeout.
func awaitSubflow(ctx context.Context, c net.Conn, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var n int
		if err := sockctl.ConnControl(c, func(fd int) (err error) { n, err = sockctl.MPTCPSubflows(fd); return err }); err != nil {
			return fmt.Errorf("mptcp: %w", err)
		}
		if n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mptcp: no second subflow joined within %v of the first handshake", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// restartLinks restarts the condition's traced links for the timed
// download (restart_links), rep x trace_shift into mahimahi traces.
func (s *Session) restartLinks(rep int) (map[string]string, error) {
	if !s.p.RestartLinks {
		return nil, nil
	}
	return origin.RestartTraces(s.env, rep, s.p.TraceShift)
}
