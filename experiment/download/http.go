package download

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/smig"
	"github.com/shunt-net/shunt/testbed"
)

// Config is the download experiment's options (driver "http"): objects
// over HTTP/1.1 or HTTP/2 from shunt's server, nginx or h2o.
//
// Counts of every run: connections (dialled), and client_rx_bytes,
// client_rx_segs, client_tx_bytes, client_tx_segs, client_wire_bytes
// (TCP_INFO over all the client's connections, from the clock's start to
// the run's end: see tcpTotals).
//
// Objects: size (time to download it), size + background (+ background_after)
// (time to download size while background is in flight), or page (page load
// time: the HTML, then all images at once).
type Config struct {
	Proto   string `param:"proto" enum:"h1,h2" help:"HTTP version"`
	Server  string `param:"server" enum:"shunt,nginx,h2o" help:"the server"`
	Conns   int    `param:"conns" help:"HTTP/1.1 connections at most (1 to 64); h2 always uses one"`
	Connect string `param:"connect" enum:"warm,cold" help:"warm opens the connections the run needs before the clock starts; cold times their handshakes too"`
	TLS     bool   `param:"tls" help:"TLS (false: h2c with prior knowledge, cleartext HTTP/1.1)"`
	CC      string `param:"cc" help:"client congestion control"`
	// SMig and the SMig experiment's other knobs.
	SMig string `param:"smig" help:"nomig | migsw[:BYTES] | migsp[:BYTES] | migcp[:BYTES] (h2 against shunt only): both ends announce SMig; a server policy runs in the server, migcp in the client"`
	// NotSentLowat is 0 by default: the kernel's, as the SMig talk measured.
	NotSentLowat int `param:"notsent_lowat" help:"TCP_NOTSENT_LOWAT of shunt's server sockets in bytes (0: the kernel's default)"`
	// SendQueue kernel turns off the engine's short send queue (h2.Config
	// KernelSendQueue): the talk's HTTP/2 server, whose socket holds
	// megabytes of the large response ahead of the small one.
	SendQueue string `param:"send_queue" enum:"short,kernel" help:"shunt's HTTP/2 server: short keeps about 2 ms of sending unsent in each socket, kernel leaves the send queue to the kernel"`
	// Background complete lets the background download finish and times it
	// (metric large_time).
	Background string `param:"background" enum:"cancel,complete" help:"what happens to the background download once the object is in"`
	// Priority: by default shunt's server sends same-urgency responses one
	// after the other, a head-of-line blocking of its own that migration is
	// not about; incremental ones share the link.
	Priority string `param:"priority" help:"RFC 9218 Priority header of every request, e.g. i"`
	// SMigPool idle keeps one bound idle connection and starts runs once it
	// is ready (the talk's "idle connection available"); ondemand opens one
	// only when a migration needs it, inside the timed part ("no idle
	// connection").
	SMigPool string `param:"smig_pool" enum:"idle,ondemand" help:"SMig's pooled connection"`
}

// DefaultConfig: shunt's server, 6 connections, warm, h2c, cubic.
func DefaultConfig() Config {
	return Config{Server: "shunt", Conns: 6, Connect: "warm", CC: "cubic", Background: "cancel", SMigPool: "idle", SendQueue: "short"}
}

// Validate checks the options together.
func (c Config) Validate() error {
	switch {
	case c.Proto != "h1" && c.Proto != "h2":
		return experiment.Errorf("params.proto", c.Proto, "want h1 or h2")
	case c.Proto == "h1" && c.Server != "shunt":
		return experiment.Errorf("params.server", c.Server, "HTTP/1.1 runs against shunt only (h2c peers are configured for HTTP/2)")
	case c.Conns < 1 || c.Conns > 64:
		return experiment.Errorf("params.conns", strconv.Itoa(c.Conns), "want 1 to 64")
	case c.NotSentLowat < 0:
		return experiment.Errorf("params.notsent_lowat", strconv.Itoa(c.NotSentLowat), "want a byte count")
	case c.NotSentLowat > 0 && c.Server != "shunt":
		return experiment.Errorf("params.notsent_lowat", strconv.Itoa(c.NotSentLowat), "set per socket by shunt's server only")
	case c.SendQueue == "kernel" && c.Server != "shunt":
		return experiment.Errorf("params.send_queue", c.SendQueue, "shunt's server only")
	case c.SMigPool == "ondemand" && c.SMig == "":
		return experiment.Errorf("params.smig_pool", c.SMigPool, "needs params.smig")
	}
	if c.SMig != "" {
		if _, err := smig.ParsePolicy(c.SMig); err != nil {
			return &experiment.FieldError{Field: "params.smig", Value: c.SMig, Err: err}
		}
		if c.Proto != "h2" || c.Server != "shunt" {
			return experiment.Errorf("params.smig", c.SMig, "SMig needs proto h2 and server shunt")
		}
	}
	return nil
}

func checkObject(_ Config, o experiment.Object) error {
	s, err := origin.ParseSizes(o)
	if err != nil {
		return err
	}
	if o.Page == nil && s.Size == 0 {
		return &experiment.FieldError{Field: "size", Err: errors.New("driver http needs a size or a page")}
	}
	return nil
}

// Kind is the download experiment, driver "http".
var Kind = experiment.Kind[Config, *Session]{
	Name:        "http",
	Default:     DefaultConfig,
	CheckObject: checkObject,
	Start:       Start,
}

// Start writes env's objects and starts the server on env.Port.
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	root := filepath.Join(env.Dir, "www")
	if err := origin.WriteObjects(root, env.Objects); err != nil {
		return nil, err
	}
	x := c.serverExtras()
	srv, err := origin.Start(ctx, env.Net.Servers()[0], c.Server, root, origin.Addr(env.Net, env.Port), c.TLS, env.Log, x)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", c.Server, err)
	}
	return &Session{p: c, srv: srv, client: env.Net.Client(), smig: x.SMig}, nil
}

// Session downloads from one server.
type Session struct {
	p      Config
	srv    *origin.Server
	client experiment.Host
	smig   *smig.Server // nil without SMig
}

func (s *Session) Info() map[string]string {
	info := map[string]string{"client": clientName(s.p.Proto)}
	for k, v := range s.srv.Info {
		info[k] = v
	}
	for k, v := range s.p.smigInfo() {
		info[k] = v
	}
	return info
}

func (s *Session) Close() error { return s.srv.Close() }

// client is one run's HTTP client: a fresh transport, so no connection or
// congestion state crosses runs, and a count of the connections it opened.
type client struct {
	rt    http.RoundTripper
	base  string
	dials atomic.Int64
	mu    sync.Mutex
	sock  experiment.SockOpts
	proto string // the responses' protocol and TLS, recorded to show what ran
	close func()
	smig  *smig.Transport // nil without SMig
	// awaitIdle: warm-up ends once an SMig pooled connection is bound.
	awaitIdle bool
	prio      string // Priority request header; "" sends none
	conns     []net.Conn
	wire0     tcpTotals // at markWire
	wireErr   error
}

func (s *Session) newClient() *client {
	c := &client{base: "http://" + s.srv.Addr, prio: s.p.Priority}
	if s.p.TLS {
		c.base = "https://" + s.srv.Addr
	}
	opts := experiment.SockOpts{CC: s.p.CC}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := s.client.DialContext(ctx, network, addr, opts)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
		if c.dials.Add(1) == 1 {
			// Record what the kernel uses, not what was asked for.
			so, err := testbed.ReadSockOpts(conn)
			if err != nil {
				conn.Close()
				return nil, err
			}
			c.mu.Lock()
			c.sock = experiment.SockOpts{CC: so.CC, NotSentLowat: so.NotSentLowat, MPTCP: so.MPTCP}
			c.mu.Unlock()
		}
		return conn, nil
	}
	tlsConf := &tls.Config{InsecureSkipVerify: true} // the servers' certificates are self-signed, made for this run
	if s.p.Proto == "h1" {
		tr := &http.Transport{
			DialContext:         dial,
			TLSClientConfig:     tlsConf,
			MaxConnsPerHost:     s.p.Conns,
			MaxIdleConnsPerHost: s.p.Conns,
			DisableCompression:  true,
			// A non-nil empty map turns HTTP/2 off: this is the H1 baseline.
			TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		}
		c.rt, c.close = tr, tr.CloseIdleConnections
		return c
	}
	if s.p.smigOn() {
		c.smig = &smig.Transport{AllowHTTP: true, DialContext: dial, TLSClientConfig: tlsConf, Policy: s.p.clientPolicy(),
			Pool: smig.PoolConfig{OnDemand: s.p.onDemand()}}
		c.awaitIdle = !s.p.onDemand()
		c.rt, c.close = c.smig, c.smig.CloseIdleConnections
		return c
	}
	c.rt, c.close = newH2Transport(dial, tlsConf)
	return c
}

// get fetches path and verifies the body against the generated object of
// want bytes, calling progress (if set) with the byte count as it arrives.
// It returns when the last byte has been read.
func (c *client) get(ctx context.Context, path string, want int64, progress func(int64)) (reused bool, err error) {
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, c.base+path, nil)
	if err != nil {
		return false, err
	}
	if c.prio != "" {
		req.Header.Set("Priority", c.prio)
	}
	resp, err := origin.Fetch(c.rt, req, want, progress)
	if resp != nil {
		c.mu.Lock()
		c.proto = h2.ResponseProto(resp)
		c.mu.Unlock()
	}
	return reused, err
}

// warmUp opens n connections by sending n requests at once for a tiny object.
func (c *client) warmUp(ctx context.Context, n int) error {
	errs := make(chan error, n)
	for range n {
		go func() { _, err := c.get(ctx, origin.ObjectPath(origin.WarmSize), origin.WarmSize, nil); errs <- err }()
	}
	var all []error
	for range n {
		all = append(all, <-errs)
	}
	if err := errors.Join(all...); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	if c.awaitIdle {
		return awaitIdle(ctx, c.smig)
	}
	return nil
}

// markWire starts the run's TCP counts: call it when the clock starts.
func (c *client) markWire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wire0, c.wireErr = readTCPTotals(c.conns)
}

// wireCounts adds the TCP counts since markWire to counts, unless a
// connection closed in between (its counters went with it).
func (c *client) wireCounts(counts map[string]float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, err := readTCPTotals(c.conns)
	if err = errors.Join(c.wireErr, err); err != nil {
		return err
	}
	d := now.sub(c.wire0)
	counts["client_rx_bytes"] = float64(d.rxBytes)
	counts["client_rx_segs"] = float64(d.rxSegs)
	counts["client_tx_bytes"] = float64(d.txBytes)
	counts["client_tx_segs"] = float64(d.txSegs)
	counts["client_wire_bytes"] = float64(d.wireBytes())
	return nil
}

func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	sz, err := origin.ParseSizes(r.Object)
	if err != nil {
		return experiment.Result{}, err
	}
	c := s.newClient()
	defer c.close()
	before := snapshotSMig(s.smig)
	var res experiment.Result
	switch {
	case r.Object.Page != nil:
		res, err = s.runPage(ctx, c, r.Object.Name, sz)
	case sz.Background > 0:
		res, err = s.runDuring(ctx, c, sz)
	default:
		res, err = s.runAlone(ctx, c, sz)
	}
	c.mu.Lock()
	res.Sock = c.sock
	if res.Info == nil {
		res.Info = map[string]string{}
	}
	res.Info["http"] = c.proto
	c.mu.Unlock()
	if res.Counts == nil {
		res.Counts = map[string]float64{}
	}
	res.Counts["connections"] = float64(c.dials.Load())
	if werr := c.wireCounts(res.Counts); werr != nil {
		res.Info["wire_counts"] = werr.Error()
	}
	smigCounts(&res, s.smig, before, c.smig)
	return res, err
}

func (s *Session) runAlone(ctx context.Context, c *client, sz origin.Sizes) (experiment.Result, error) {
	if s.p.warm() {
		if err := c.warmUp(ctx, 1); err != nil {
			return experiment.Result{}, err
		}
	}
	c.markWire()
	t0 := time.Now()
	reused, err := c.get(ctx, origin.ObjectPath(sz.Size), sz.Size, nil)
	el := time.Since(t0)
	if err != nil {
		return experiment.Result{}, err
	}
	return experiment.Result{
		Metrics: map[string]float64{"time": el.Seconds()},
		Info:    map[string]string{"conn_reused": strconv.FormatBool(reused)},
	}, nil
}

// runDuring requests the object once background_after bytes of the
// background download have arrived, times it to its last byte, then cancels
// the background download.
func (s *Session) runDuring(ctx context.Context, c *client, sz origin.Sizes) (experiment.Result, error) {
	if s.p.warm() {
		n := 1
		if s.p.Proto == "h1" {
			n = min(2, s.p.Conns) // one for the background, one idle for the object
		}
		if err := c.warmUp(ctx, n); err != nil {
			return experiment.Result{}, err
		}
	}
	bgCtx, cancelBg := context.WithCancel(ctx)
	defer cancelBg()
	var bgBytes atomic.Int64
	reached := make(chan struct{})
	var once sync.Once
	bgDone := make(chan error, 1)
	var bgTime time.Duration // written before bgDone is sent
	c.markWire()
	tBg := time.Now()
	go func() {
		_, err := c.get(bgCtx, origin.ObjectPath(sz.Background), sz.Background, func(n int64) {
			bgBytes.Store(n)
			if n >= sz.After {
				once.Do(func() { close(reached) })
			}
		})
		bgTime = time.Since(tBg)
		bgDone <- err
	}()
	select {
	case <-reached:
	case err := <-bgDone:
		if err == nil {
			err = fmt.Errorf("background download of %d bytes ended before the object was requested", sz.Background)
		}
		return experiment.Result{}, fmt.Errorf("background: %w", err)
	case <-ctx.Done():
		return experiment.Result{}, ctx.Err()
	}
	atRequest := bgBytes.Load()
	t0 := time.Now()
	reused, err := c.get(ctx, origin.ObjectPath(sz.Size), sz.Size, nil)
	el := time.Since(t0)
	atEnd := bgBytes.Load()
	metrics := map[string]float64{"time": el.Seconds()}
	if s.p.complete() {
		select {
		case bgErr := <-bgDone:
			err = errors.Join(err, bgErr)
			metrics["large_time"] = bgTime.Seconds()
		case <-ctx.Done():
			err = errors.Join(err, fmt.Errorf("background download of %d bytes: %w after %d bytes", sz.Background, ctx.Err(), bgBytes.Load()))
		}
	} else {
		cancelBg()
		select {
		case bgErr := <-bgDone:
			if bgErr == nil && err == nil {
				err = fmt.Errorf("background download of %d bytes finished before the object: not 'during'", sz.Background)
			}
		case <-time.After(5 * time.Second):
			err = errors.Join(err, errors.New("background download did not stop within 5 s of its cancellation"))
		}
	}
	if err != nil {
		return experiment.Result{}, err
	}
	return experiment.Result{
		Metrics: metrics,
		Counts:  map[string]float64{"background_bytes_at_request": float64(atRequest), "background_bytes_at_end": float64(atEnd)},
		Info:    map[string]string{"conn_reused": strconv.FormatBool(reused)},
	}, nil
}

// runPage loads the HTML, then every image at once (the transport queues
// them on its connections), and times the whole page.
func (s *Session) runPage(ctx context.Context, c *client, page string, sz origin.Sizes) (experiment.Result, error) {
	if s.p.warm() {
		if err := c.warmUp(ctx, 1); err != nil {
			return experiment.Result{}, err
		}
	}
	c.markWire()
	t0 := time.Now()
	if _, err := c.get(ctx, origin.PagePath(page), sz.HTML, nil); err != nil {
		return experiment.Result{}, err
	}
	tHTML := time.Since(t0)
	errs := make(chan error, sz.Images)
	for i := range sz.Images {
		go func() { _, err := c.get(ctx, origin.ImagePath(page, i), sz.Image, nil); errs <- err }()
	}
	var all []error
	for range sz.Images {
		all = append(all, <-errs)
	}
	el := time.Since(t0)
	if err := errors.Join(all...); err != nil {
		return experiment.Result{}, err
	}
	return experiment.Result{Metrics: map[string]float64{"plt": el.Seconds(), "html": tHTML.Seconds()}}, nil
}
