package drivers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/smig"
	"github.com/shunt-net/shunt/testbed"
)

// httpDriver downloads objects over HTTP/1.1 or HTTP/2.
//
// Params:
//
//	proto    h1 | h2
//	server   shunt | nginx | h2o   (default shunt)
//	conns    HTTP/1.1 connections at most (default 6); h2 always uses one
//	connect  warm | cold (default warm): warm opens the connections the run
//	         needs before the clock starts; cold times their handshakes too
//	tls      true | false (default false: h2c with prior knowledge)
//	cc       client congestion control (default cubic)
//	smig, notsent_lowat, background, priority, smig_pool: see smigParams
//
// Counts of every run: connections (dialled), and client_rx_bytes,
// client_rx_segs, client_tx_bytes, client_tx_segs, client_wire_bytes
// (TCP_INFO over all the client's connections, from the clock's start to
// the run's end: see tcpTotals).
//
// Objects: size (time to download it), size + background (+ background_after)
// (time to download size while background is in flight), or page (page load
// time: the HTML, then all images at once).
type httpDriver struct{}

type httpParams struct {
	proto, server, cc string
	conns             int
	warm, tls         bool
	smig              smigParams
}

func parseHTTPParams(p bench.Protocol) (httpParams, error) {
	hp := httpParams{proto: p.Params["proto"], server: "shunt", cc: "cubic", conns: 6, warm: true}
	known := map[string]bool{"proto": true, "server": true, "conns": true, "connect": true, "tls": true, "cc": true}
	for _, k := range smigParamKeys {
		known[k] = true
	}
	for k := range p.Params {
		if !known[k] {
			return hp, &bench.FieldError{Field: "params." + k, Err: errors.New("unknown parameter of driver http (want proto, server, conns, connect, tls, cc, smig, notsent_lowat, background, priority, smig_pool)")}
		}
	}
	if hp.proto != "h1" && hp.proto != "h2" {
		return hp, &bench.FieldError{Field: "params.proto", Value: hp.proto, Err: errors.New("want h1 or h2")}
	}
	if v, ok := p.Params["server"]; ok {
		hp.server = v
	}
	switch hp.server {
	case "shunt", "nginx", "h2o":
	default:
		return hp, &bench.FieldError{Field: "params.server", Value: hp.server, Err: errors.New("want shunt, nginx or h2o")}
	}
	if hp.proto == "h1" && hp.server != "shunt" {
		return hp, &bench.FieldError{Field: "params.server", Value: hp.server, Err: errors.New("HTTP/1.1 runs against shunt only (h2c peers are configured for HTTP/2)")}
	}
	if v, ok := p.Params["conns"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return hp, &bench.FieldError{Field: "params.conns", Value: v, Err: errors.New("want 1 to 64")}
		}
		hp.conns = n
	}
	switch v := p.Params["connect"]; v {
	case "", "warm":
	case "cold":
		hp.warm = false
	default:
		return hp, &bench.FieldError{Field: "params.connect", Value: v, Err: errors.New("want warm or cold")}
	}
	if err := boolParam(p, "tls", &hp.tls); err != nil {
		return hp, err
	}
	if v, ok := p.Params["cc"]; ok {
		hp.cc = v
	}
	var err error
	hp.smig, err = parseSMigParams(p, hp)
	return hp, err
}

func (httpDriver) Check(p bench.Protocol, o bench.Object) error {
	if _, err := parseHTTPParams(p); err != nil {
		return err
	}
	s, err := parseSizes(o)
	if err != nil {
		return err
	}
	if o.Page == nil && s.size == 0 {
		return &bench.FieldError{Field: "size", Err: errors.New("driver http needs a size or a page")}
	}
	return nil
}

// serverPort is where servers listen in the server namespace; each protocol
// of a condition gets its own, so a slow shutdown cannot collide with the next.
const serverPort = 8000

func (httpDriver) Start(ctx context.Context, env *bench.Env, p bench.Protocol) (bench.Session, error) {
	hp, err := parseHTTPParams(p)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(env.Dir, "www")
	if err := writeObjects(root, env.Scenario.Objects); err != nil {
		return nil, err
	}
	port := serverPort
	for i, q := range env.Scenario.Protocols {
		if q.Name == p.Name {
			port += i
		}
	}
	x := hp.smig.serverExtras()
	srv, err := startServer(ctx, env.Net.Servers()[0], hp.server, root, hostPort(env.Net, port), hp.tls, env.Log, x)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", hp.server, err)
	}
	return &httpSession{p: hp, srv: srv, client: env.Net.Client(), smig: x.smig}, nil
}

type httpSession struct {
	p      httpParams
	srv    *httpServer
	client bench.Host
	smig   *smig.Server // nil without SMig
}

func (s *httpSession) Info() map[string]string {
	info := map[string]string{"client": clientName(s.p.proto)}
	for k, v := range s.srv.info {
		info[k] = v
	}
	for k, v := range s.p.smig.info() {
		info[k] = v
	}
	return info
}

func (s *httpSession) Close() error { return s.srv.close() }

// client is one run's HTTP client: a fresh transport, so no connection or
// congestion state crosses runs, and a count of the connections it opened.
type client struct {
	rt    http.RoundTripper
	base  string
	dials atomic.Int64
	mu    sync.Mutex
	sock  bench.SockOpts
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

func (s *httpSession) newClient() *client {
	c := &client{base: "http://" + s.srv.addr, prio: s.p.smig.priority}
	if s.p.tls {
		c.base = "https://" + s.srv.addr
	}
	opts := bench.SockOpts{CC: s.p.cc}
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
			c.sock = bench.SockOpts{CC: so.CC, NotSentLowat: so.NotSentLowat, MPTCP: so.MPTCP}
			c.mu.Unlock()
		}
		return conn, nil
	}
	tlsConf := &tls.Config{InsecureSkipVerify: true} // the servers' certificates are self-signed, made for this run
	if s.p.proto == "h1" {
		tr := &http.Transport{
			DialContext:         dial,
			TLSClientConfig:     tlsConf,
			MaxConnsPerHost:     s.p.conns,
			MaxIdleConnsPerHost: s.p.conns,
			DisableCompression:  true,
			// A non-nil empty map turns HTTP/2 off: this is the H1 baseline.
			TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		}
		c.rt, c.close = tr, tr.CloseIdleConnections
		return c
	}
	if s.p.smig.on {
		c.smig = &smig.Transport{AllowHTTP: true, DialContext: dial, TLSClientConfig: tlsConf, Policy: s.p.smig.clientPolicy(),
			Pool: smig.PoolConfig{OnDemand: s.p.smig.onDemand}}
		c.awaitIdle = !s.p.smig.onDemand
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
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return reused, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return reused, fmt.Errorf("GET %s: status %s", path, resp.Status)
	}
	proto := resp.Proto
	if resp.TLS != nil {
		proto += " over " + tls.VersionName(resp.TLS.Version) + " (ALPN " + resp.TLS.NegotiatedProtocol + ")"
	}
	c.mu.Lock()
	c.proto = proto
	c.mu.Unlock()
	v := content.NewVerifier(0)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := v.Write(buf[:n]); err != nil {
				return reused, fmt.Errorf("GET %s: %w", path, err)
			}
			if progress != nil {
				progress(v.Offset())
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return reused, fmt.Errorf("GET %s after %d bytes: %w", path, v.Offset(), rerr)
		}
	}
	if v.Offset() != want {
		return reused, fmt.Errorf("GET %s: %d bytes, want %d", path, v.Offset(), want)
	}
	return reused, nil
}

// warmUp opens n connections by sending n requests at once for a tiny object.
func (c *client) warmUp(ctx context.Context, n int) error {
	errs := make(chan error, n)
	for range n {
		go func() { _, err := c.get(ctx, objectPath(warmSize), warmSize, nil); errs <- err }()
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

func (s *httpSession) Run(ctx context.Context, r *bench.Run) (bench.Result, error) {
	sz, err := parseSizes(r.Object)
	if err != nil {
		return bench.Result{}, err
	}
	c := s.newClient()
	defer c.close()
	before := snapshotSMig(s.smig)
	var res bench.Result
	switch {
	case r.Object.Page != nil:
		res, err = s.runPage(ctx, c, r.Object.Name, sz)
	case sz.background > 0:
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

func (s *httpSession) runAlone(ctx context.Context, c *client, sz sizes) (bench.Result, error) {
	if s.p.warm {
		if err := c.warmUp(ctx, 1); err != nil {
			return bench.Result{}, err
		}
	}
	c.markWire()
	t0 := time.Now()
	reused, err := c.get(ctx, objectPath(sz.size), sz.size, nil)
	el := time.Since(t0)
	if err != nil {
		return bench.Result{}, err
	}
	return bench.Result{
		Metrics: map[string]float64{"time": el.Seconds()},
		Info:    map[string]string{"conn_reused": strconv.FormatBool(reused)},
	}, nil
}

// runDuring requests the object once background_after bytes of the
// background download have arrived, times it to its last byte, then cancels
// the background download.
func (s *httpSession) runDuring(ctx context.Context, c *client, sz sizes) (bench.Result, error) {
	if s.p.warm {
		n := 1
		if s.p.proto == "h1" {
			n = min(2, s.p.conns) // one for the background, one idle for the object
		}
		if err := c.warmUp(ctx, n); err != nil {
			return bench.Result{}, err
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
		_, err := c.get(bgCtx, objectPath(sz.background), sz.background, func(n int64) {
			bgBytes.Store(n)
			if n >= sz.after {
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
			err = fmt.Errorf("background download of %d bytes ended before the object was requested", sz.background)
		}
		return bench.Result{}, fmt.Errorf("background: %w", err)
	case <-ctx.Done():
		return bench.Result{}, ctx.Err()
	}
	atRequest := bgBytes.Load()
	t0 := time.Now()
	reused, err := c.get(ctx, objectPath(sz.size), sz.size, nil)
	el := time.Since(t0)
	atEnd := bgBytes.Load()
	metrics := map[string]float64{"time": el.Seconds()}
	if s.p.smig.complete {
		select {
		case bgErr := <-bgDone:
			err = errors.Join(err, bgErr)
			metrics["large_time"] = bgTime.Seconds()
		case <-ctx.Done():
			err = errors.Join(err, fmt.Errorf("background download of %d bytes: %w after %d bytes", sz.background, ctx.Err(), bgBytes.Load()))
		}
	} else {
		cancelBg()
		select {
		case bgErr := <-bgDone:
			if bgErr == nil && err == nil {
				err = fmt.Errorf("background download of %d bytes finished before the object: not 'during'", sz.background)
			}
		case <-time.After(5 * time.Second):
			err = errors.Join(err, errors.New("background download did not stop within 5 s of its cancellation"))
		}
	}
	if err != nil {
		return bench.Result{}, err
	}
	return bench.Result{
		Metrics: metrics,
		Counts:  map[string]float64{"background_bytes_at_request": float64(atRequest), "background_bytes_at_end": float64(atEnd)},
		Info:    map[string]string{"conn_reused": strconv.FormatBool(reused)},
	}, nil
}

// runPage loads the HTML, then every image at once (the transport queues
// them on its connections), and times the whole page.
func (s *httpSession) runPage(ctx context.Context, c *client, page string, sz sizes) (bench.Result, error) {
	if s.p.warm {
		if err := c.warmUp(ctx, 1); err != nil {
			return bench.Result{}, err
		}
	}
	c.markWire()
	t0 := time.Now()
	if _, err := c.get(ctx, pagePath(page), sz.html, nil); err != nil {
		return bench.Result{}, err
	}
	tHTML := time.Since(t0)
	errs := make(chan error, sz.images)
	for i := range sz.images {
		go func() { _, err := c.get(ctx, imagePath(page, i), sz.image, nil); errs <- err }()
	}
	var all []error
	for range sz.images {
		all = append(all, <-errs)
	}
	el := time.Since(t0)
	if err := errors.Join(all...); err != nil {
		return bench.Result{}, err
	}
	return bench.Result{Metrics: map[string]float64{"plt": el.Seconds(), "html": tHTML.Seconds()}}, nil
}

// boolParam sets *dst from the protocol's parameter key when it is given,
// and leaves it as it is when not.
func boolParam(p bench.Protocol, key string, dst *bool) error {
	v, ok := p.Params[key]
	if !ok {
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return &bench.FieldError{Field: "params." + key, Value: v, Err: errors.New("want true or false")}
	}
	*dst = b
	return nil
}
