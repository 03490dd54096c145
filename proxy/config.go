package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/server"
)

// Config is shunt proxy's configuration; the CLI's flags map onto it.
type Config struct {
	Listen string // HOST:PORT the application connects to
	// Listener, when set, is served instead of listening on Listen: a
	// socket made in another network namespace, say.
	Listener net.Listener
	// Paths: at least one; CONNECT tunnels take the first without a byte
	// budget that dials. A path's Budget bounds what it receives over the
	// proxy's life, every response together (mph2.Path.Budget: the
	// proxy's one mph2.Client holds it across responses).
	Paths []mph2.Path
	// SplitMin is the smallest response split over the paths
	// (mph2.Transport.SplitMin; 0: its default).
	SplitMin int64
	// Insecure skips verifying the certificates of https origins the proxy
	// fetches itself (absolute https URLs; CONNECT tunnels are the
	// application's TLS, never the proxy's).
	Insecure bool
	// Mode is how responses use the paths (mph2.Client.Mode): aggregate
	// (split over all), handover (the first path, the next only while it
	// fails or stalls for HandoverAfter) or interactive (each response on
	// the path expected to finish it first, after a bounded probe of a path
	// not measured in the last 10 s: multipath.Interactive).
	Mode          mph2.Mode
	HandoverAfter time.Duration // 0: multipath's default
	// NoEstimateCache starts every split from even shares. By default the
	// proxy keeps each path's bandwidth and RTT per origin across responses
	// (mph2.Client.Cache, MP-H2+FS+BW/L's cache) and splits by them.
	NoEstimateCache bool
	ConnectTimeout  time.Duration // per path dial; 0: mph2's default
	IdleTimeout     time.Duration // a download with no byte on any path fails; 0: mph2's default
	ErrorLog        *log.Logger   // one line per failed request; nil: the log package's
	// Progress, if set, is told each path's running total of delivered
	// bytes of each split response (mph2.Options.Progress).
	Progress func(path int, delivered int64)

	// Policy, if set, places plain GETs instead of Mode (issue 19): each
	// origin gets one HTTP/2 connection per path (mph2.Hinted), and each
	// request goes where the policy puts its hint, read from the
	// application's headers (hints.FromHeaders). A browser sends what that
	// needs (Sec-Fetch-Dest, RFC 9218 Priority) over HTTP/2 to an HTTPS
	// proxy (TLS) and, for an http:// origin, only if it counts the origin
	// as trustworthy; over HTTP/1.1 there is no Priority, so every script
	// counts as parser-blocking. Other methods still go over MP-H2.
	Policy *hints.Policy
	// Cost is each path's cost per byte for the policy ("cheap"); nil: all 0.
	Cost []float64
	// Placed, if set, is told where the policy put each GET: its URL, the
	// hint its headers gave, and the path of the response whose header the
	// proxy passes on (the body then streams, in order, from that response
	// or from a redundant copy or tail that completes first).
	Placed func(url string, hint hints.Hint, path int)
	// TLS serves the proxy over TLS (an HTTPS proxy, with a self-signed
	// certificate), so a browser speaks HTTP/2 to it, with a request's
	// urgency in its Priority field, instead of HTTP/1.1 on at most six
	// connections per origin.
	TLS bool
	// Intercept, if set with a Policy, terminates CONNECT tunnels to the
	// origins it covers with certificates of its CA (ALPN h2 and http/1.1,
	// shunt's server and h2 engine), so a browser loading https:// origins
	// through the proxy speaks HTTP/2 to "the origin" and sends
	// Sec-Fetch-Dest and Priority; the proxy fetches those requests over
	// the policy's per-path connections (TLS to the origin, checked unless
	// Insecure). Other CONNECTs stay tunnels.
	Intercept *Intercept
}

// Validate names the first field that is wrong.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil && c.Listener == nil {
		return fmt.Errorf("proxy: Listen %q: want HOST:PORT", c.Listen)
	}
	if len(c.Paths) == 0 {
		return errors.New("proxy: Paths: need at least one path")
	}
	seen := map[string]bool{}
	for i, p := range c.Paths {
		name := p.Label(i)
		if seen[name] {
			return fmt.Errorf("proxy: Paths: two paths named %q", name)
		}
		if p.Budget < 0 {
			return fmt.Errorf("proxy: path %s: Budget %d: negative", name, p.Budget)
		}
		seen[name] = true
	}
	if c.Policy != nil && slices.ContainsFunc(c.Paths, func(p mph2.Path) bool { return p.Budget != 0 }) {
		// Its mph2.Hinted places requests by the policy's rules, which have
		// budgets of their own (budget= in a rule), per page load.
		return errors.New("proxy: a path's Budget bounds Mode's MP-H2 client; a Policy places requests itself (use budget= in its rules)")
	}
	if c.Cost != nil && len(c.Cost) != len(c.Paths) {
		return fmt.Errorf("proxy: Cost: %d costs for %d paths", len(c.Cost), len(c.Paths))
	}
	if ic := c.Intercept; ic != nil {
		switch {
		case ic.CA == nil:
			return errors.New("proxy: Intercept: no CA")
		case c.Policy == nil:
			return errors.New("proxy: Intercept: terminates the tunnels a hints Policy covers; set one")
		case c.TLS:
			// A browser sends CONNECT to an HTTPS proxy over HTTP/2,
			// which the proxy tunnels but does not terminate.
			return errors.New("proxy: Intercept needs the proxy in cleartext (not TLS): CONNECT is intercepted over HTTP/1.1 only")
		}
	}
	if c.SplitMin < 0 || c.ConnectTimeout < 0 || c.IdleTimeout < 0 || c.HandoverAfter < 0 {
		return fmt.Errorf("proxy: SplitMin %d, ConnectTimeout %v, IdleTimeout %v, HandoverAfter %v: negative", c.SplitMin, c.ConnectTimeout, c.IdleTimeout, c.HandoverAfter)
	}
	return nil
}

// estimateMaxAge bounds how old a path's cached estimates may be: paths
// that are mobile links change within minutes.
const estimateMaxAge = 10 * time.Minute

// Running is a started proxy.
type Running struct {
	Addr   string // where it listens
	client *mph2.Client
	hinted *hintedTransport // nil without a policy
	done   chan error
}

// Start listens on cfg.Listen and serves the proxy (HTTP/1.1 and h2c on
// one socket) until ctx ends; Wait returns then.
func Start(ctx context.Context, cfg Config) (*Running, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	newClient := func() *mph2.Client {
		return &mph2.Client{Paths: cfg.Paths, TLSConfig: &tls.Config{InsecureSkipVerify: cfg.Insecure},
			DialTimeout: cfg.ConnectTimeout, StallTimeout: cfg.IdleTimeout, Mode: cfg.Mode, HandoverAfter: cfg.HandoverAfter}
	}
	c := newClient()
	if !cfg.NoEstimateCache {
		c.Cache = estimate.NewCache(estimateMaxAge)
	}
	var tr http.RoundTripper = &mph2.Transport{Client: c, SplitMin: cfg.SplitMin, Options: mph2.Options{Progress: cfg.Progress}}
	var hinted *hintedTransport
	if cfg.Policy != nil {
		hinted = &hintedTransport{newClient: newClient, policy: cfg.Policy, cost: cfg.Cost, placed: cfg.Placed, next: tr}
		tr = hinted
	}
	p := &Proxy{Transport: tr, Dial: firstPath(cfg.Paths), ErrorLog: cfg.ErrorLog, Intercept: cfg.Intercept}
	srv := &server.Server{Addr: cfg.Listen, Handler: p, TLS: cfg.TLS, ErrorLog: cfg.ErrorLog}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = srv.Listen(ctx); err != nil {
			return nil, err
		}
	}
	r := &Running{Addr: ln.Addr().String(), client: c, hinted: hinted, done: make(chan error, 1)}
	p.Self = []string{r.Addr}
	if host, port, _ := net.SplitHostPort(r.Addr); host == "0.0.0.0" || host == "::" {
		p.Self = append(p.Self, net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("localhost", port), net.JoinHostPort("::1", port))
	}
	terminated := make(chan struct{})
	if cfg.Intercept != nil {
		p.Preconnect = hinted.preconnect
		p.Terminated = server.NewConnListener(ln.Addr())
		tsrv := &server.Server{Handler: http.HandlerFunc(p.serveIntercepted), TLS: true, ErrorLog: cfg.ErrorLog,
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cfg.Intercept.CA.getCertificate}}
		go func() {
			defer close(terminated)
			tsrv.Serve(ctx, p.Terminated)
		}()
	} else {
		close(terminated)
	}
	go func() {
		err := srv.Serve(ctx, ln)
		<-terminated
		r.CloseConnections()
		r.done <- err
	}()
	return r, nil
}

// CloseConnections closes the proxy's connections to origins; the next
// request opens fresh ones (a measurement that wants no warm connections).
func (r *Running) CloseConnections() {
	r.client.Close()
	if r.hinted != nil {
		r.hinted.closeAll()
	}
}

// Wait returns once the proxy has stopped.
func (r *Running) Wait() error {
	err := <-r.done
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// firstPath dials on the first path without a byte budget that connects:
// a tunnel is one TCP connection, carried on one path, and its bytes are
// the application's, which no budget could bound.
func firstPath(paths []mph2.Path) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		use, errs := mph2.PassThroughPaths(paths)
		for _, i := range use {
			c, err := paths[i].DialContext(ctx, network, addr)
			if err == nil {
				return c, nil
			}
			errs = append(errs, fmt.Errorf("path %s: %w", paths[i].Label(i), err))
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
}

// ParsePath parses the CLI form NAME=IFACE or NAME=ADDR (an IP address
// binds the source address, anything else names an interface); NAME= may
// be left out, and the path is named after its interface or address.
func ParsePath(s string) (mph2.Path, error) {
	name, spec, named := strings.Cut(s, "=")
	if !named {
		name, spec = "", s
	}
	if spec == "" || (named && name == "") || strings.ContainsAny(spec, "= \t") || strings.ContainsAny(name, " \t") {
		return mph2.Path{}, fmt.Errorf("path %q: want NAME=IFACE or NAME=ADDR", s)
	}
	p := mph2.Path{Name: name}
	if a, err := netip.ParseAddr(spec); err == nil {
		p.LocalAddr = a
	} else {
		p.Interface = spec
	}
	return p, nil
}

// FormatPath is ParsePath's inverse.
func FormatPath(p mph2.Path) string {
	spec := p.Interface
	if p.LocalAddr.IsValid() {
		spec = p.LocalAddr.String()
	}
	if p.Name == "" {
		return spec
	}
	return p.Name + "=" + spec
}
