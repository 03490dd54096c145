package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/server"
)

// Config is shunt proxy's configuration; the CLI's flags map onto it.
type Config struct {
	Listen string // HOST:PORT the application connects to
	// Listener, when set, is served instead of listening on Listen: a
	// socket made in another network namespace, say.
	Listener net.Listener
	Paths    []mph2.Path // at least one; CONNECT tunnels take the first that dials
	// SplitMin is the smallest response split over the paths
	// (mph2.Transport.SplitMin; 0: its default).
	SplitMin int64
	// Insecure skips verifying the certificates of https origins the proxy
	// fetches itself (absolute https URLs; CONNECT tunnels are the
	// application's TLS, never the proxy's).
	Insecure bool
	// Mode is how responses use the paths (mph2.Client.Mode): aggregate
	// (split over all), handover (the first path, the next only while it
	// fails or stalls for HandoverAfter) or interactive (each response whole
	// on the path expected to finish it first).
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
		seen[name] = true
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
	done   chan error
}

// Start listens on cfg.Listen and serves the proxy (HTTP/1.1 and h2c on
// one socket) until ctx ends; Wait returns then.
func Start(ctx context.Context, cfg Config) (*Running, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &mph2.Client{Paths: cfg.Paths, TLSConfig: &tls.Config{InsecureSkipVerify: cfg.Insecure},
		DialTimeout: cfg.ConnectTimeout, StallTimeout: cfg.IdleTimeout, Mode: cfg.Mode, HandoverAfter: cfg.HandoverAfter}
	if !cfg.NoEstimateCache {
		c.Cache = estimate.NewCache(estimateMaxAge)
	}
	tr := &mph2.Transport{Client: c, SplitMin: cfg.SplitMin, Options: mph2.Options{Progress: cfg.Progress}}
	p := &Proxy{Transport: tr, Dial: firstPath(cfg.Paths), ErrorLog: cfg.ErrorLog}
	srv := &server.Server{Addr: cfg.Listen, Handler: p}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = srv.Listen(ctx); err != nil {
			return nil, err
		}
	}
	r := &Running{Addr: ln.Addr().String(), client: c, done: make(chan error, 1)}
	p.Self = []string{r.Addr}
	if host, port, _ := net.SplitHostPort(r.Addr); host == "0.0.0.0" || host == "::" {
		p.Self = append(p.Self, net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("localhost", port), net.JoinHostPort("::1", port))
	}
	go func() {
		err := srv.Serve(ctx, ln)
		c.Close()
		r.done <- err
	}()
	return r, nil
}

// CloseConnections closes the proxy's connections to origins; the next
// request opens fresh ones (a measurement that wants no warm connections).
func (r *Running) CloseConnections() { r.client.Close() }

// Wait returns once the proxy has stopped.
func (r *Running) Wait() error {
	err := <-r.done
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// firstPath dials on the first path that connects: a tunnel is one TCP
// connection, carried on one path.
func firstPath(paths []mph2.Path) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var errs []error
		for i, p := range paths {
			c, err := p.DialContext(ctx, network, addr)
			if err == nil {
				return c, nil
			}
			errs = append(errs, fmt.Errorf("path %s: %w", p.Label(i), err))
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
