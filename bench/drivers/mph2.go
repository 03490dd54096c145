package drivers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shunt-net/shunt/bench"
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
// download there, MP-H2 §5.7), cc (default cubic). Every run opens fresh
// connections and warms them up with a 100-byte request on every path
// before the timed download (the paper uses persistent connections); MP-H2
// rows open them with Client.Connect, which exchanges a PING on each.
// Metrics: time (request to last byte), ideal (Equation 1 with the
// condition's link rates and RTTs, multipath.IdealTime). Counts: bytes and
// requests per path, tail_bytes.
type mph2Driver struct{}

type mph2Params struct {
	mode      string
	path      string
	chunk     int64
	cut       int64
	endAdjust mph2.EndAdjust
	noPipe    bool
	cc        string
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
		default:
			return mp, bad(k, v, "unknown parameter of driver mph2 (want mode, path, chunk, cut, end_adjust, pipelining, cc)")
		}
	}
	switch {
	case mp.mode == "single" && mp.path == "":
		return mp, bad("path", "", "mode single needs path=NAME")
	case mp.mode == "mhttp" && mp.chunk == 0:
		return mp, bad("chunk", "", "mode mhttp needs chunk=SIZE")
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
	s, err := parseSizes(o)
	switch {
	case err != nil:
		return err
	case o.Page != nil || s.background > 0:
		return &bench.FieldError{Field: "object", Value: o.Name, Err: errors.New("driver mph2 downloads a size only")}
	case s.size == 0:
		return &bench.FieldError{Field: "size", Err: errors.New("driver mph2 needs a size")}
	}
	return nil
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
	hd, err := content.NewHandler(env.Dir)
	if err != nil {
		return nil, err
	}
	// MPTCP needs an MPTCP listener; the other modes get plain TCP, so no
	// MPTCP socket is involved in their rows.
	srv := &server.Server{Handler: hd, CC: mp.cc, MPTCP: mp.mode == "mptcp",
		ErrorLog: log.New(env.Log, "shunt server: ", log.LstdFlags)}
	ln, err := env.Net.Servers()[0].Listen("tcp", hostPort(env.Net, mph2Port), bench.SockOpts{CC: mp.cc, MPTCP: mp.mode == "mptcp"})
	if err != nil {
		hd.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	s := &mph2Session{p: mp, env: env, base: "http://" + ln.Addr().String(), cache: estimate.NewCache(0)}
	s.close = func() error {
		cancel()
		<-done
		return hd.Close()
	}
	return s, nil
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
	p      mph2Params
	env    *bench.Env
	base   string
	cache  *estimate.Cache // MP-H2+FS+BW/L's estimates, across runs
	primed bool
	close  func() error
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
// single: that path alone), with the links' configured rates and RTTs.
func (s *mph2Session) ideal(size int64) (time.Duration, error) {
	var conds []multipath.Cond
	for _, p := range s.env.Condition.Paths {
		if s.p.mode == "single" && p.Name != s.p.path {
			continue
		}
		rate, err := netem.ParseRate(p.Down.Rate)
		if err != nil {
			return 0, fmt.Errorf("path %s down rate: %w", p.Name, err)
		}
		var rtt time.Duration
		for _, d := range []string{p.Down.Delay, p.Up.Delay} {
			if d != "" {
				x, err := netem.ParseDelay(d)
				if err != nil {
					return 0, fmt.Errorf("path %s delay: %w", p.Name, err)
				}
				rtt += x
			}
		}
		conds = append(conds, multipath.Cond{Bandwidth: rate / 8, Delay: rtt})
	}
	return multipath.IdealTime(size, conds), nil
}

func (s *mph2Session) Run(ctx context.Context, r *bench.Run) (bench.Result, error) {
	sz, err := parseSizes(r.Object)
	if err != nil {
		return bench.Result{}, err
	}
	var res bench.Result
	switch s.p.mode {
	case "mhttp":
		res, err = s.runMHTTP(ctx, sz.size)
	case "mptcp":
		res, err = s.runMPTCP(ctx, sz.size)
	default:
		res, err = s.runMPH2(ctx, sz.size)
	}
	if err != nil {
		return res, err
	}
	want := sz.size
	if s.p.cut > 0 {
		want = min(want, s.p.cut)
	}
	ideal, err := s.ideal(want)
	if err != nil {
		return res, err
	}
	res.Metrics["ideal"] = ideal.Seconds()
	res.Sock = bench.SockOpts{CC: s.p.cc, MPTCP: s.p.mode == "mptcp"}
	return res, nil
}

func (s *mph2Session) runMPH2(ctx context.Context, size int64) (bench.Result, error) {
	c := &mph2.Client{EndAdjust: s.p.endAdjust, NoPipelining: s.p.noPipe}
	for _, pi := range s.env.Net.Paths() {
		if s.p.mode == "single" && pi.Name != s.p.path {
			continue
		}
		c.Paths = append(c.Paths, mph2.Path{Name: pi.Name, Dial: s.pathDial(pi, false)})
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
		out.Info["proto_"+p.Name] = p.Proto
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
func (s *mph2Session) runMHTTP(ctx context.Context, size int64) (bench.Result, error) {
	paths := s.env.Net.Paths()
	url := s.base + objectPath(size)
	trs := make([]*h2.Transport, len(paths))
	for i, pi := range paths {
		trs[i] = &h2.Transport{AllowHTTP: true, DialContext: s.pathDial(pi, false)}
		defer trs[i].CloseIdleConnections()
		if err := getVerified(ctx, trs[i], s.base+objectPath(warmSize), -1, -1, nil); err != nil {
			return bench.Result{}, fmt.Errorf("warm-up on path %s: %w", pi.Name, err)
		}
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
				err := getVerified(ctx, trs[i], url, a, a+s.p.chunk, func(obj, got int64) {
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
func (s *mph2Session) runMPTCP(ctx context.Context, size int64) (bench.Result, error) {
	tr := &h2.Transport{AllowHTTP: true, DialContext: s.pathDial(s.env.Net.Paths()[0], true)}
	defer tr.CloseIdleConnections()
	if err := getVerified(ctx, tr, s.base+objectPath(warmSize), -1, -1, nil); err != nil {
		return bench.Result{}, fmt.Errorf("warm-up: %w", err)
	}
	// The second subflow joins after the first handshake (one cell RTT and
	// the path manager's reaction): give it time, so the timed download
	// starts on both subflows as a persistent connection would.
	time.Sleep(300 * time.Millisecond)
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
