package drivers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/bench/emulated"
	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/multipath"
	"github.com/shunt-net/shunt/netem"
	"github.com/shunt-net/shunt/server"
)

func init() { bench.Drivers.Register("mph2", mph2Driver{}) }

// mph2Driver downloads one object over a two-path network (MP-H2 §5.3,
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
// Other params: end_adjust=flow|rst, pipelining=off, cut=SIZE (stop the
// download there, MP-H2 §5.7), cc (default cubic), restart_links=on (every
// link direction with a trace is re-applied just before the timed download,
// so its schedule starts with the download: MP-H2 §5.8's drop at 1050 ms,
// and §5.6's on/off rows over the same bandwidth), trace_shift=DURATION
// (with restart_links: mahimahi traces start rep x DURATION into the trace,
// so repetitions see different stretches of it and rows the same ones).
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
type mph2Driver struct{}

type mph2Params struct {
	mode      string
	path      string
	chunk     int64
	cut       int64
	endAdjust mph2.EndAdjust
	noPipe    bool
	cc        string
	restart   bool
	shift     time.Duration
}

var mph2Modes = []string{"mph2", "mph2-fs", "mph2-fs-bwl", "single", "mhttp", "mptcp"}

func parseMPH2Params(p bench.Protocol) (mph2Params, error) {
	mp := mph2Params{mode: "mph2", cc: serverCC}
	bad := func(k, v, want string) error {
		return &bench.FieldError{Field: "params." + k, Value: v, Err: errors.New(want)}
	}
	for k, v := range p.Params {
		var err error
		switch k {
		case "mode":
			if !contains(mph2Modes, v) {
				return mp, bad(k, v, "want one of "+strings.Join(mph2Modes, ", "))
			}
			mp.mode = v
		case "path":
			mp.path = v
		case "chunk":
			if mp.chunk, err = content.ParseSize(v); err != nil || mp.chunk <= 0 {
				return mp, bad(k, v, "want a positive size")
			}
		case "cut":
			if mp.cut, err = content.ParseSize(v); err != nil || mp.cut <= 0 {
				return mp, bad(k, v, "want a positive size")
			}
		case "end_adjust":
			switch v {
			case "flow":
				mp.endAdjust = mph2.EndFlowControl
			case "rst":
				mp.endAdjust = mph2.EndReset
			default:
				return mp, bad(k, v, "want flow or rst")
			}
		case "pipelining":
			if v != "on" && v != "off" {
				return mp, bad(k, v, "want on or off")
			}
			mp.noPipe = v == "off"
		case "cc":
			mp.cc = v
		case "restart_links":
			if v != "on" && v != "off" {
				return mp, bad(k, v, "want on or off")
			}
			mp.restart = v == "on"
		case "trace_shift":
			if mp.shift, err = time.ParseDuration(v); err != nil || mp.shift <= 0 {
				return mp, bad(k, v, "want a positive duration")
			}
		default:
			return mp, bad(k, v, "unknown parameter of driver mph2 (want mode, path, chunk, cut, end_adjust, pipelining, cc, restart_links, trace_shift)")
		}
	}
	switch {
	case mp.mode == "single" && mp.path == "":
		return mp, bad("path", "", "mode single needs path=NAME")
	case mp.mode == "mhttp" && mp.chunk == 0:
		return mp, bad("chunk", "", "mode mhttp needs chunk=SIZE")
	case mp.shift > 0 && !mp.restart:
		return mp, bad("trace_shift", mp.shift.String(), "needs restart_links=on")
	}
	return mp, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (mph2Driver) Check(p bench.Protocol, o bench.Object) error {
	if _, err := parseMPH2Params(p); err != nil {
		return err
	}
	return checkSizeOnly("mph2", o)
}

const mph2Port = 8445

func (mph2Driver) Start(ctx context.Context, env *bench.Env, p bench.Protocol) (bench.Session, error) {
	mp, err := parseMPH2Params(p)
	if err != nil {
		return nil, err
	}
	paths := env.Net.Paths()
	if mp.path != "" && !slicesContainsPath(paths, mp.path) {
		return nil, &bench.FieldError{Field: "params.path", Value: mp.path, Err: fmt.Errorf("no such path in condition %s", env.Condition.Name)}
	}
	if err := writeObjects(env.Dir, env.Scenario.Objects); err != nil {
		return nil, err
	}
	targets, addrs, err := serverTargets(paths, len(env.Net.Servers()))
	if err != nil {
		return nil, err
	}
	if mp.mode == "mptcp" && len(addrs) > 1 {
		return nil, &bench.FieldError{Field: "params.mode", Value: mp.mode, Err: fmt.Errorf("condition %s reaches %d servers; an MPTCP connection has one", env.Condition.Name, len(addrs))}
	}
	hd, err := content.NewHandler(env.Dir)
	if err != nil {
		return nil, err
	}
	// MPTCP needs an MPTCP listener; the other modes get plain TCP, so no
	// MPTCP socket is involved in their rows.
	sock := bench.SockOpts{CC: mp.cc, MPTCP: mp.mode == "mptcp"}
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
		srv := &server.Server{Handler: hd, CC: mp.cc, MPTCP: mp.mode == "mptcp",
			ErrorLog: log.New(env.Log, "shunt server "+a+": ", log.LstdFlags)}
		go func() { done <- srv.Serve(sctx, ln) }()
	}
	s := &mph2Session{p: mp, env: env, targets: targets, base: "http://" + targets[0], cache: estimate.NewCache(0)}
	s.close = func() error { return stop(len(addrs)) }
	return s, nil
}

// serverTargets is each path's server HOST:PORT and the distinct server
// addresses in path order, which is the order of the network's server
// namespaces (testbed: path i of a multi-homed network reaches server i).
func serverTargets(paths []bench.PathInfo, servers int) (targets, addrs []string, err error) {
	for _, p := range paths {
		t := net.JoinHostPort(p.ServerAddr, strconv.Itoa(mph2Port))
		targets = append(targets, t)
		if !contains(addrs, t) {
			addrs = append(addrs, t)
		}
	}
	if len(addrs) != servers {
		return nil, nil, fmt.Errorf("paths reach %d server addresses, the network has %d servers", len(addrs), servers)
	}
	return targets, addrs, nil
}

func slicesContainsPath(ps []bench.PathInfo, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

type mph2Session struct {
	p       mph2Params
	env     *bench.Env
	targets []string        // each path's server, HOST:PORT, in Net.Paths order
	base    string          // the URL's scheme and host: the first path's server
	cache   *estimate.Cache // MP-H2+FS+BW/L's estimates, across runs
	primed  bool
	close   func() error
}

func (s *mph2Session) Info() map[string]string {
	return map[string]string{"server": "shunt (in-process)", "server_cc": s.p.cc + " (per socket)",
		"client": "shunt mph2 (" + s.p.mode + ")"}
}

func (s *mph2Session) Close() error { return s.close() }

// pathDial dials from the client namespace bound to a path's address.
func (s *mph2Session) pathDial(pi bench.PathInfo, mptcp bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	client := s.env.Net.Client()
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return client.DialContext(ctx, network, addr, bench.SockOpts{CC: s.p.cc, MPTCP: mptcp, Source: pi.ClientAddr})
	}
}

// ideal is Equation 1's completion time for the condition's paths (for
// single: that path alone), with the links' configured rates and RTTs;
// false if a downlink's rate varies (a trace), where Equation 1 has no
// single rate to use.
func (s *mph2Session) ideal(size int64) (time.Duration, bool, error) {
	var conds []multipath.Cond
	for _, p := range s.env.Condition.Paths {
		if s.p.mode == "single" && p.Name != s.p.path {
			continue
		}
		if p.Down.Trace != "" {
			return 0, false, nil
		}
		rate, err := netem.ParseRate(p.Down.Rate)
		if err != nil {
			return 0, false, fmt.Errorf("path %s down rate: %w", p.Name, err)
		}
		var rtt time.Duration
		for _, d := range []string{p.Down.Delay, p.Up.Delay} {
			if d != "" {
				x, err := netem.ParseDelay(d)
				if err != nil {
					return 0, false, fmt.Errorf("path %s delay: %w", p.Name, err)
				}
				rtt += x
			}
		}
		conds = append(conds, multipath.Cond{Bandwidth: rate / 8, Delay: rtt})
	}
	return multipath.IdealTime(size, conds), true, nil
}

func (s *mph2Session) Run(ctx context.Context, r *bench.Run) (bench.Result, error) {
	sz, err := parseSizes(r.Object)
	if err != nil {
		return bench.Result{}, err
	}
	var res bench.Result
	// Each mode calls timed() once its connections are warm, just before
	// the timed download.
	var restarted map[string]string
	timed := func() error {
		var err error
		restarted, err = s.restartLinks(r.Rep)
		return err
	}
	switch s.p.mode {
	case "mhttp":
		res, err = s.runMHTTP(ctx, sz.size, timed)
	case "mptcp":
		res, err = s.runMPTCP(ctx, sz.size, timed)
	default:
		res, err = s.runMPH2(ctx, sz.size, timed)
	}
	if res.Info == nil {
		res.Info = map[string]string{}
	}
	maps.Copy(res.Info, restarted)
	if err != nil {
		return res, err
	}
	want := sz.size
	if s.p.cut > 0 {
		want = min(want, s.p.cut)
	}
	ideal, ok, err := s.ideal(want)
	if err != nil {
		return res, err
	}
	if ok {
		res.Metrics["ideal"] = ideal.Seconds()
	}
	res.Sock = bench.SockOpts{CC: s.p.cc, MPTCP: s.p.mode == "mptcp"}
	return res, nil
}

func (s *mph2Session) runMPH2(ctx context.Context, size int64, timed func() error) (bench.Result, error) {
	c := &mph2.Client{EndAdjust: s.p.endAdjust, NoPipelining: s.p.noPipe}
	serverOf := map[string]string{} // path name: the server it is sent to
	for i, pi := range s.env.Net.Paths() {
		if s.p.mode == "single" && pi.Name != s.p.path {
			continue
		}
		p := mph2.Path{Name: pi.Name, Dial: s.pathDial(pi, false)}
		if s.targets[i] != s.targets[0] {
			p.Map = map[string]string{s.targets[0]: s.targets[i]}
		}
		serverOf[pi.Name] = s.targets[i]
		c.Paths = append(c.Paths, p)
	}
	defer c.Close()
	var o mph2.Options
	if s.p.mode == "mph2-fs" || s.p.mode == "mph2-fs-bwl" {
		o.Size = size
	}
	if s.p.mode == "mph2-fs-bwl" {
		c.Cache = s.cache
	}
	o.Cut = s.p.cut
	if o.Cut > 0 {
		o.Settle = 300 * time.Millisecond // tail bytes still in flight count
	}
	url := s.base + objectPath(size)
	// Connect opens every path's connection and exchanges a PING on it (h2c
	// probe), so the timed download starts on persistent connections, as in
	// the paper.
	if err := c.Connect(ctx, url); err != nil {
		return bench.Result{}, err
	}
	if c.Cache != nil && !s.primed {
		if _, err := c.Download(ctx, url, discardAt{}, o); err != nil {
			return bench.Result{}, fmt.Errorf("priming the estimate cache: %w", err)
		}
		s.primed = true
	}
	v := &verifyAt{want: size}
	if o.Cut > 0 {
		v.want = o.Cut
	}
	if err := timed(); err != nil {
		return bench.Result{}, err
	}
	res, err := c.Download(ctx, url, v, o)
	if err != nil {
		return bench.Result{}, err
	}
	if err := v.check(); err != nil {
		return bench.Result{}, err
	}
	out := bench.Result{
		Metrics: map[string]float64{"time": res.Total.Seconds()},
		Counts:  map[string]float64{"bytes": float64(res.Size), "tail_bytes": float64(res.TailBytes)},
		Info:    map[string]string{},
	}
	for _, p := range res.Paths {
		out.Counts["bytes_"+p.Name] = float64(p.Delivered)
		out.Counts["requests_"+p.Name] = float64(p.Requests)
		out.Counts["received_"+p.Name] = float64(p.Received)
		// When each path finished tells a path that holds the download back
		// (MP-H2 §5.8) from one that was merely slow.
		out.Counts["last_data_s_"+p.Name] = p.LastData.Seconds()
		out.Info["proto_"+p.Name] = p.Proto
		out.Info["server_"+p.Name] = serverOf[p.Name]
		if p.Down {
			return out, fmt.Errorf("path %s went down: %s", p.Name, p.Err)
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

// runMHTTP is mHTTP's scheduler [37]: the object in fixed chunks, every
// path fetching the next unclaimed chunk as soon as its previous one is
// complete (no pipelining), over one HTTP/2 connection per path. The size
// comes from the first response's Content-Range; until then each path
// claims chunks blindly, and one past the end is answered 416.
func (s *mph2Session) runMHTTP(ctx context.Context, size int64, timed func() error) (bench.Result, error) {
	paths := s.env.Net.Paths()
	trs := make([]*h2.Transport, len(paths))
	for i, pi := range paths {
		trs[i] = &h2.Transport{AllowHTTP: true, DialContext: s.pathDial(pi, false)}
		defer trs[i].CloseIdleConnections()
		if err := getVerified(ctx, trs[i], "http://"+s.targets[i]+objectPath(warmSize), -1, -1, nil); err != nil {
			return bench.Result{}, fmt.Errorf("warm-up on path %s: %w", pi.Name, err)
		}
	}
	if err := timed(); err != nil {
		return bench.Result{}, err
	}
	var (
		mu    sync.Mutex
		next  int64
		total = int64(-1)
		bytes = make([]int64, len(paths))
		reqs  = make([]int64, len(paths))
	)
	claim := func() (int64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if total >= 0 && next >= total {
			return 0, false
		}
		a := next
		next += s.p.chunk
		return a, true
	}
	start := time.Now()
	errs := make(chan error, len(paths))
	for i := range paths {
		go func() {
			for {
				a, ok := claim()
				if !ok {
					errs <- nil
					return
				}
				var n int64
				err := getVerified(ctx, trs[i], "http://"+s.targets[i]+objectPath(size), a, a+s.p.chunk, func(obj, got int64) {
					mu.Lock()
					if total < 0 {
						total = obj
					}
					mu.Unlock()
					n = got
				})
				if errors.Is(err, errBeyondEnd) {
					errs <- nil
					return
				}
				if err != nil {
					errs <- fmt.Errorf("path %s: %w", paths[i].Name, err)
					return
				}
				mu.Lock()
				bytes[i] += n
				reqs[i]++
				mu.Unlock()
			}
		}()
	}
	var all []error
	for range paths {
		all = append(all, <-errs)
	}
	elapsed := time.Since(start)
	if err := errors.Join(all...); err != nil {
		return bench.Result{}, err
	}
	out := bench.Result{Metrics: map[string]float64{"time": elapsed.Seconds()}, Counts: map[string]float64{}}
	var sum int64
	for i, pi := range paths {
		out.Counts["bytes_"+pi.Name] = float64(bytes[i])
		out.Counts["requests_"+pi.Name] = float64(reqs[i])
		sum += bytes[i]
	}
	out.Counts["bytes"] = float64(sum)
	if sum != size {
		return out, fmt.Errorf("mhttp: %d bytes received, want %d", sum, size)
	}
	return out, nil
}

var errBeyondEnd = errors.New("range beyond the object")

// getVerified GETs url (bytes [a, b) if a >= 0), verifies the body against
// the generated object and reports the object's size and the bytes read.
func getVerified(ctx context.Context, rt http.RoundTripper, url string, a, b int64, done func(obj, got int64)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if a >= 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(a, 10)+"-"+strconv.FormatInt(b-1, 10))
	}
	res, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	first, obj := int64(0), res.ContentLength
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusPartialContent:
		var last int64
		if _, err := fmt.Sscanf(res.Header.Get("Content-Range"), "bytes %d-%d/%d", &first, &last, &obj); err != nil {
			return fmt.Errorf("Content-Range %q: %w", res.Header.Get("Content-Range"), err)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		return errBeyondEnd
	default:
		return fmt.Errorf("status %s", res.Status)
	}
	v := content.NewVerifier(first)
	n, err := io.Copy(v, res.Body)
	if err != nil {
		return err
	}
	if done != nil {
		done(obj, n)
	}
	return nil
}

// runMPTCP downloads over one HTTP/2 connection on a kernel MPTCP socket
// whose first subflow leaves by the first path; the testbed's endpoint for
// the second path's address adds the second subflow.
func (s *mph2Session) runMPTCP(ctx context.Context, size int64, timed func() error) (bench.Result, error) {
	tr := &h2.Transport{AllowHTTP: true, DialContext: s.pathDial(s.env.Net.Paths()[0], true)}
	defer tr.CloseIdleConnections()
	if err := getVerified(ctx, tr, s.base+objectPath(warmSize), -1, -1, nil); err != nil {
		return bench.Result{}, fmt.Errorf("warm-up: %w", err)
	}
	// The second subflow joins after the first handshake (one cell RTT and
	// the path manager's reaction): give it time, so the timed download
	// starts on both subflows as a persistent connection would.
	time.Sleep(300 * time.Millisecond)
	if err := timed(); err != nil {
		return bench.Result{}, err
	}
	start := time.Now()
	var got int64
	err := getVerified(ctx, tr, s.base+objectPath(size), -1, -1, func(_, n int64) { got = n })
	elapsed := time.Since(start)
	if err != nil {
		return bench.Result{}, err
	}
	if got != size {
		return bench.Result{}, fmt.Errorf("mptcp: %d bytes, want %d", got, size)
	}
	return bench.Result{Metrics: map[string]float64{"time": elapsed.Seconds()}, Counts: map[string]float64{"bytes": float64(got)}}, nil
}

// linkSetter is the part of a bench.Network that replaces a link mid-run
// (bench/emulated's networks have it).
type linkSetter interface {
	SetLink(path, dir string, l bench.LinkSpec) error
}

// restartLinks re-applies every link direction of the condition that has a
// trace, so its schedule starts now (restart_links=on), with mahimahi traces
// rotated to start rep x trace_shift in. It returns the offsets used.
func (s *mph2Session) restartLinks(rep int) (map[string]string, error) {
	if !s.p.restart {
		return nil, nil
	}
	ls, ok := s.env.Net.(linkSetter)
	if !ok {
		return nil, fmt.Errorf("restart_links: the network of condition %s cannot replace links", s.env.Condition.Name)
	}
	info := map[string]string{}
	for _, p := range s.env.Condition.Paths {
		for dir, l := range map[string]bench.LinkSpec{"up": p.Up, "down": p.Down} {
			if l.Trace == "" {
				continue
			}
			if isMahimahi(l.Trace) && s.p.shift > 0 {
				file, err := emulated.TraceFile(l.Trace)
				if err != nil {
					return nil, err
				}
				shifted, off, err := shiftTraceFile(file, time.Duration(rep)*s.p.shift, s.env.Dir)
				if err != nil {
					return nil, err
				}
				l.Trace = "trace:" + shifted
				info["trace_offset_"+p.Name+"_"+dir] = off.String()
			}
			if err := ls.SetLink(p.Name, dir, l); err != nil {
				return nil, fmt.Errorf("restart_links: path %s %s: %w", p.Name, dir, err)
			}
		}
	}
	return info, nil
}

// isMahimahi: the trace text (netem.LoadTrace syntax) names a mahimahi
// trace, not a step trace.
func isMahimahi(trace string) bool {
	return strings.HasPrefix(trace, "trace:") || !strings.HasPrefix(trace, "step:") && filepath.Ext(trace) != ".step"
}

// shiftTraceFile writes the mahimahi trace file rotated by off (see
// rotateTrace) into dir and returns its name and the offset used.
func shiftTraceFile(file string, off time.Duration, dir string) (string, time.Duration, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", 0, fmt.Errorf("trace_shift: %w", err)
	}
	var times []int64
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		t, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return "", 0, fmt.Errorf("trace %s line %d: %q is not a time in ms", file, i+1, line)
		}
		times = append(times, t)
	}
	rot, offMs := rotateTrace(times, off.Milliseconds())
	var b strings.Builder
	for _, t := range rot {
		b.WriteString(strconv.FormatInt(t, 10))
		b.WriteByte('\n')
	}
	out := filepath.Join(dir, fmt.Sprintf("%s@%dms", filepath.Base(file), offMs))
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return "", 0, err
	}
	return out, time.Duration(offMs) * time.Millisecond, nil
}

// rotateTrace returns the mahimahi delivery opportunities times (sorted, in
// ms, the last being the period P) as seen from off ms into the trace
// (modulo P), and the offset actually used: off snapped down to the time of
// an opportunity, which keeps the period exactly P (that opportunity moves
// to the end, at P). Opportunities in the same period are the same ones,
// only their order in time turns.
func rotateTrace(times []int64, off int64) ([]int64, int64) {
	if len(times) == 0 {
		return nil, 0
	}
	period := times[len(times)-1]
	if period <= 0 {
		return slices.Clone(times), 0
	}
	if off %= period; off == 0 {
		return slices.Clone(times), 0
	}
	k, _ := slices.BinarySearch(times, off+1) // first opportunity after off
	if k == 0 {
		return slices.Clone(times), 0
	}
	snapped := times[k-1]
	out := make([]int64, 0, len(times))
	for _, t := range times[k:] {
		out = append(out, t-snapped)
	}
	for _, t := range times[:k] {
		out = append(out, t+period-snapped)
	}
	return out, snapped
}
