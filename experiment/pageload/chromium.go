package pageload

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/proxy"
	"github.com/shunt-net/shunt/replay/browser"
	"github.com/shunt-net/shunt/replay/site"
)

// ChromiumConfig is the options of a Chromium load: a fresh browser and
// profile per run, in the client namespace, from shunt's server over TLS.
type ChromiumConfig struct {
	Proto   string `param:"proto" enum:"h1,h2,h3" help:"h1 (HTTP/2 disabled: HTTP/1.1, 6 connections), h2 or h3"`
	Compute bool   `param:"compute" help:"computations as busy loops in the page's scripts"`
	Pacing  bool   `param:"pacing" help:"the server paces its TCP sockets, as the replay's pacing"`
	// Issue 19: Chromium on a multipath network.
	Via       string `param:"via" enum:"direct,mptcp,proxy,intercept" help:"direct (one path: the main route, or path=NAME), mptcp (mptcpize: Chromium's sockets become MPTCP ones, first subflow on the first path; MPTCP listener), proxy (through shunt proxy, an HTTPS proxy in the client namespace, over every path; the site served as http:// and h2c) or intercept (through shunt proxy in cleartext, which terminates the CONNECT to the https:// site with its own CA, trusted by Chromium by key; TLS and h2 to the origin over every path)"`
	Path      string `param:"path" help:"via direct: route the server's address over this path for the load (Chromium cannot bind a source address)"`
	Policy    string `param:"policy" help:"via proxy or intercept: the hints preset or rule file that places each request (empty: MP-H2's aggregate mode)"`
	Expensive string `param:"expensive" help:"the paths (NAME[,NAME]) whose bytes cost: the policy's cost 1, and expensive_pct"`
}

// proxied says whether the loads go through shunt proxy.
func (c ChromiumConfig) proxied() bool { return c.Via == "proxy" || c.Via == "intercept" }

// DefaultChromiumConfig loads over HTTP/2, directly.
func DefaultChromiumConfig() ChromiumConfig { return ChromiumConfig{Proto: "h2", Via: "direct"} }

// Validate checks the options together.
func (c ChromiumConfig) Validate() error {
	switch {
	case c.Via != "direct" && c.Via != "" && c.Proto != "h2":
		return experiment.Errorf("params.proto", c.Proto, "via %s loads over h2", c.Via)
	case c.Path != "" && c.Via != "direct" && c.Via != "":
		return experiment.Errorf("params.path", c.Path, "a path is for via direct")
	case c.Policy != "" && !c.proxied():
		return experiment.Errorf("params.policy", c.Policy, "a policy is for via proxy or intercept")
	case c.Via == "intercept" && c.Policy == "":
		return experiment.Errorf("params.via", c.Via, "the proxy terminates TLS for a hints policy: set policy")
	}
	if c.Policy != "" {
		if _, err := hints.Load(c.Policy); err != nil {
			return &experiment.FieldError{Field: "params.policy", Value: c.Policy, Err: err}
		}
	}
	return nil
}

// Chromium is the experiment of driver "chromium": the real site generated
// from a page's graph (replay/browser) loaded by headless Chromium. Metrics:
// plt (the navigation's loadEventEnd), last_response (the latest
// responseEnd of any object), dcl (domContentLoadedEventEnd), lcp (largest
// contentful paint, when the page has one), connected (the document's
// connectEnd), request_sent (its requestStart) and first_byte (its
// responseStart), all from navigation start; with expensive=, expensive_pct
// (the expensive paths' share of the IP bytes the client's interfaces
// received during the load). Every object's length is checked (Site.Check). Counts
// edges, edges_kept, graph_depth and browser_depth say how much of the
// graph's download order the browser kept (Site.Edges); the run's Info
// carries the whole load as JSON ("load", browser.Load) and the edges
// ("edges").
var Chromium = experiment.Kind[ChromiumConfig, *ChromiumSession]{
	Name:    "chromium",
	Default: DefaultChromiumConfig,
	CheckObject: func(c ChromiumConfig, o experiment.Object) error {
		pg, err := LoadPage(o)
		if err != nil {
			return err
		}
		_, err = browser.Build(pg, c.Compute)
		return err
	},
	Start: StartChromium,
}

// ChromiumSession loads generated sites from one server.
type ChromiumSession struct {
	cfg   ChromiumConfig
	sites map[string]*browser.Site
	addr  string            // the server's HOST:PORT
	cert  *x509.Certificate // the server's certificate to trust; nil: a server elsewhere, any certificate
	host  experiment.Host   // where Chromium runs
	log   io.Writer
	where string
	srv   *site.Running   // nil: a server elsewhere
	env   *experiment.Env // nil: a server elsewhere
	pol   *hints.Policy   // via proxy or intercept
	ca    *proxy.CA       // via intercept: the proxy's, one per session
	// restoreCC undoes what SetNamespaceCC changed outside the namespace.
	restoreCC func() error
}

// StartChromium builds the sites of env's pages and serves them.
func StartChromium(ctx context.Context, env *experiment.Env, c ChromiumConfig) (*ChromiumSession, error) {
	if err := browser.Available(""); err != nil {
		return nil, err
	}
	s := &ChromiumSession{cfg: c, host: env.Net.Client(), log: env.Log, where: where(env.Net), env: env}
	if err := c.checkPaths(env.Net.Paths()); err != nil {
		return nil, err
	}
	if c.Via == "mptcp" {
		if err := peers.Available("mptcpize"); err != nil {
			return nil, err
		}
	}
	if c.Policy != "" {
		var err error
		if s.pol, err = hints.Load(c.Policy); err != nil {
			return nil, err
		}
	}
	if c.Via == "intercept" {
		var err error
		if s.ca, err = proxy.NewCA(time.Now()); err != nil {
			return nil, err
		}
	}
	var pages []*page.Page
	for _, o := range env.Objects {
		pg, err := LoadPage(o)
		if err != nil {
			return nil, err
		}
		pages = append(pages, pg)
	}
	sites, err := s.build(env.Objects, pages)
	if err != nil {
		return nil, err
	}
	h, err := browser.NewHandler(sites...)
	if err != nil {
		return nil, err
	}
	// Chromium cannot set a socket's congestion control; the client
	// namespace's default decides, so make it the replay's there.
	if s.restoreCC, err = origin.SetNamespaceCC(env.Net.Client(), origin.CC); err != nil {
		return nil, fmt.Errorf("client namespace: %w", err)
	}
	// Through the proxy the browser asks for http:// URLs, which the proxy
	// fetches over h2c.
	s.srv, err = serveSite(env, c.Via == "mptcp", site.ServeConfig{Handler: h, TLS: c.Via != "proxy", H3: c.Proto == "h3", Pacing: c.Pacing})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("site server: %w", err), s.restoreCC())
	}
	s.addr = s.srv.Addr
	if s.srv.Cert != nil {
		s.cert = s.srv.Cert.Certificates[0].Leaf
	}
	return s, nil
}

// checkPaths checks the path names against the network's.
func (c ChromiumConfig) checkPaths(paths []experiment.PathInfo) error {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = p.Name
		if c.proxied() && p.ServerAddr != paths[0].ServerAddr {
			return experiment.Errorf("params.via", c.Via, "path %s reaches another server (multi-homing is not supported by the page loads)", p.Name)
		}
	}
	for _, n := range append(nameList(c.Expensive), nameList(c.Path)...) {
		if !slices.Contains(names, n) {
			return experiment.Errorf("params", n, "no path %s (have %s)", n, strings.Join(names, ", "))
		}
	}
	return nil
}

// RemoteChromium loads the sites of pages from a server elsewhere (`shunt
// serve --site`) at addr, in Chromium on this machine, accepting the
// server's certificate whatever it is.
func RemoteChromium(c ChromiumConfig, addr, url string, log io.Writer, objs []experiment.Object, pages ...*page.Page) (*ChromiumSession, error) {
	if err := browser.Available(""); err != nil {
		return nil, err
	}
	s := &ChromiumSession{cfg: c, addr: addr, host: emulated.Local().Client(), log: log, where: url, restoreCC: func() error { return nil }}
	if _, err := s.build(objs, pages); err != nil {
		return nil, err
	}
	return s, nil
}

// build makes the generated site of each object's page.
func (s *ChromiumSession) build(objs []experiment.Object, pages []*page.Page) ([]*browser.Site, error) {
	s.sites = map[string]*browser.Site{}
	var sites []*browser.Site
	for i, pg := range pages {
		st, err := browser.Build(pg, s.cfg.Compute)
		if err != nil {
			return nil, err
		}
		if n, extra := st.Grown(); n > 0 {
			fmt.Fprintf(s.log, "chromium site %s: %d objects %d bytes larger than the graph's sizes (markup)\n", pg.Name, n, extra)
		}
		s.sites[objs[i].Name] = st
		sites = append(sites, st)
	}
	return sites, nil
}

// Info describes the browser and the server.
func (s *ChromiumSession) Info() map[string]string {
	cc, err := origin.NamespaceCC(s.host)
	if err != nil {
		cc = "unknown: " + err.Error()
	}
	client := "headless " + chromiumVersion() + " (" + s.cfg.Proto + ")"
	switch {
	case s.cfg.Via == "mptcp":
		client += " under mptcpize (kernel MPTCP)"
	case s.cfg.Via == "intercept":
		client += " through shunt proxy (cleartext HTTP proxy terminating CONNECT with its own CA, trusted by SPKI; TLS and h2 to the origin) with hints policy " + s.pol.Name
	case s.cfg.Via == "proxy" && s.pol != nil:
		client += " through shunt proxy (HTTPS proxy, h2c to the origin) with hints policy " + s.pol.Name
	case s.cfg.Via == "proxy":
		client += " through shunt proxy (HTTPS proxy, h2c to the origin), MP-H2 aggregate"
	case s.cfg.Path != "":
		client += " on path " + s.cfg.Path
	}
	info := map[string]string{"client": client, "server": "shunt (replay/browser site)",
		"server_cc": origin.CC + " (per socket)", "client_cc": cc + " (the client namespace's default)",
		"server_tcp_pacing": strconv.FormatBool(s.cfg.Pacing), "where": s.where}
	if s.srv == nil {
		info["server"], info["server_cc"] = s.where, "unknown (a server elsewhere)"
	}
	return info
}

// chromiumVersion is `chromium --version`, or "chromium" if it fails.
func chromiumVersion() string {
	out, err := exec.Command(browser.DefaultBinary, "--version").Output()
	if err != nil {
		return "chromium"
	}
	return strings.TrimSpace(string(out))
}

// Close stops the server and restores the namespace's congestion control.
func (s *ChromiumSession) Close() error {
	var err error
	if s.srv != nil {
		err = s.srv.Close()
	}
	return errors.Join(err, s.restoreCC())
}

// Site is the generated site of a page the session serves (nil if none).
func (s *ChromiumSession) Site(name string) *browser.Site { return s.sites[name] }

// Run loads r.Object's site in a fresh Chromium.
func (s *ChromiumSession) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	st, ok := s.sites[r.Object.Name]
	if !ok {
		return experiment.Result{}, fmt.Errorf("page %s: not served by this session", r.Object.Name)
	}
	var stderr strings.Builder
	cfg := browser.Config{Proto: s.cfg.Proto, H3Origin: s.addr, Cert: s.cert, Command: s.host.Command, Stderr: &stderr}
	url := "https://" + s.addr + st.Root
	var cls classTally
	switch s.cfg.Via {
	case "mptcp":
		cfg.Wrap = []string{"mptcpize", "run"}
	case "proxy", "intercept":
		if s.env == nil {
			return experiment.Result{}, errors.New("via proxy needs the session's network (not a server elsewhere)")
		}
		pc := proxy.Config{Policy: s.pol, TLS: s.ca == nil}
		if s.ca != nil {
			// The origin's certificate is the experiment's own server's.
			pc.Intercept, pc.Insecure = &proxy.Intercept{CA: s.ca, Hosts: []string{s.addr}}, true
		}
		if s.pol != nil {
			pc.Cost = s.costs()
			pc.Placed = cls.placer(st)
		}
		addr, stop, err := origin.StartProxy(s.env, s.addr, origin.CC, pc)
		if err != nil {
			return experiment.Result{}, err
		}
		defer stop()
		cfg.Proxy = addr
		if s.ca != nil {
			// Chromium trusts the proxy's certificates by their keys and
			// nothing else; it never sees the origin's.
			cfg.Cert = nil
			if cfg.TrustSPKI, err = s.ca.SPKIHashes(); err != nil {
				return experiment.Result{}, err
			}
			break
		}
		url = "http://" + s.addr + st.Root
		// Chromium sends Sec-Fetch-Dest only to origins it trusts.
		cfg.ProxyTLS, cfg.SecureOrigins = true, []string{"http://" + s.addr}
	}
	if s.cfg.Path != "" {
		restore, err := s.routeOver(ctx, s.cfg.Path)
		if err != nil {
			return experiment.Result{}, err
		}
		defer restore()
	}
	before, err := s.received()
	if err != nil {
		return experiment.Result{}, err
	}
	l, err := browser.LoadPage(ctx, cfg, url)
	if err != nil {
		logTail(s.log, "chromium: "+err.Error(), stderr.String())
		return experiment.Result{}, err
	}
	after, err := s.received()
	if err != nil {
		return experiment.Result{}, err
	}
	if err := st.Check(l); err != nil {
		return experiment.Result{}, err
	}
	e := st.Edges(l)
	load, err := json.Marshal(l)
	if err != nil {
		return experiment.Result{}, err
	}
	edges, err := json.Marshal(e)
	if err != nil {
		return experiment.Result{}, err
	}
	metrics := map[string]float64{"plt": l.PLT.Seconds(), "last_response": l.LastResponse.Seconds(), "dcl": l.DOMContentLoaded.Seconds(),
		"connected": l.Connected.Seconds(), "request_sent": l.RequestSent.Seconds(), "first_byte": l.FirstByte.Seconds()}
	if l.LCP > 0 {
		metrics["lcp"] = l.LCP.Seconds()
	}
	counts := map[string]float64{"objects": float64(len(st.Objects)), "resources": float64(l.Resources),
		"edges": float64(e.Total), "edges_kept": float64(e.Kept), "graph_depth": float64(e.GraphDepth), "browser_depth": float64(e.BrowserDepth)}
	rx := map[string]int64{}
	for name, n := range after {
		rx[name] = n - before[name]
	}
	pathShares(nameList(s.cfg.Expensive), rx, metrics, counts)
	info := map[string]string{"http": l.Protocol, "transport": "chromium-" + s.cfg.Proto, "browser_load": string(load), "edges": string(edges), "edges_text": e.String()}
	cls.record(metrics, counts, info)
	return experiment.Result{
		Metrics: metrics,
		Counts:  counts,
		Info:    info,
		Sock:    experiment.SockOpts{CC: origin.CC},
	}, nil
}

// costs are the policy's per-path costs: 1 for the expensive paths.
func (s *ChromiumSession) costs() []float64 {
	var cost []float64
	for _, p := range s.env.Net.Paths() {
		cost = append(cost, map[bool]float64{true: 1}[slices.Contains(nameList(s.cfg.Expensive), p.Name)])
	}
	return cost
}

// routeOver sends the client namespace's traffic to the server over the
// named path (its interface and source address) until restore: Chromium's
// sockets follow the main route, the first path's.
func (s *ChromiumSession) routeOver(ctx context.Context, name string) (restore func(), err error) {
	paths := s.env.Net.Paths()
	i := slices.IndexFunc(paths, func(p experiment.PathInfo) bool { return p.Name == name })
	if i <= 0 {
		return func() {}, nil // the main route already
	}
	set := func(p experiment.PathInfo) error {
		out, err := s.host.Command(ctx, "ip", "route", "replace", p.ServerAddr+"/32", "dev", p.ClientIface, "src", p.ClientAddr, "scope", "link").CombinedOutput()
		if err != nil {
			return fmt.Errorf("route to %s over %s: %v: %s", p.ServerAddr, p.Name, err, out)
		}
		return nil
	}
	if err := set(paths[i]); err != nil {
		return nil, err
	}
	return func() {
		if err := set(paths[0]); err != nil {
			fmt.Fprintf(s.log, "chromium: restoring the main route: %v\n", err)
		}
	}, nil
}

// received is the IP bytes each path's client interface has received.
func (s *ChromiumSession) received() (map[string]int64, error) {
	if s.env == nil {
		return nil, nil
	}
	rx := map[string]int64{}
	err := s.host.Do(func() error {
		for _, p := range s.env.Net.Paths() {
			l, err := netlink.LinkByName(p.ClientIface)
			if err != nil {
				return fmt.Errorf("interface of path %s: %w", p.Name, err)
			}
			rx[p.Name] = int64(l.Attrs().Statistics.RxBytes)
		}
		return nil
	})
	return rx, err
}

// classTally counts how often the class the proxy read from Chromium's
// headers is the page model's (hints.FromPage).
type classTally struct {
	mu                         sync.Mutex
	placed, right, urgentRight int
	unknown                    int      // requests for no object of the page
	wrong                      []string // TARGET=HEADERS'CLASS/MODEL'S
	paths                      []string // TARGET=CLASS@PATH, in the order the responses came
}

// placer is the proxy's Placed hook for the page of st.
func (t *classTally) placer(st *browser.Site) func(string, hints.Hint, int) {
	model := hints.FromPage(st.Page)
	return func(rawURL string, h hints.Hint, path int) {
		t.mu.Lock()
		defer t.mu.Unlock()
		u, err := neturl.Parse(rawURL)
		i := -1
		if err == nil {
			i = st.ObjectIndex(u.RequestURI())
			t.paths = append(t.paths, fmt.Sprintf("%s=%s@%d", u.RequestURI(), h.Class, path))
		}
		if i < 0 {
			t.unknown++
			return
		}
		t.placed++
		if h.Class == model[i].Class {
			t.right++
		} else {
			t.wrong = append(t.wrong, fmt.Sprintf("%s=%s/%s", u.RequestURI(), h.Class, model[i].Class))
		}
		if h.Urgent() == model[i].Urgent() {
			t.urgentRight++
		}
	}
}

// record adds the tally to a run's figures (nothing without a policy):
// Info class_wrong lists TARGET=HEADERS'CLASS/MODEL'S, placed
// TARGET=CLASS@PATH (the path's index).
func (t *classTally) record(metrics, counts map[string]float64, info map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.placed+t.unknown == 0 {
		return
	}
	slices.Sort(t.wrong)
	info["class_wrong"], info["placed"] = strings.Join(t.wrong, " "), strings.Join(t.paths, " ")
	counts["classified"], counts["class_right"], counts["urgent_right"], counts["unknown_requests"] = float64(t.placed), float64(t.right), float64(t.urgentRight), float64(t.unknown)
	if t.placed > 0 {
		metrics["class_right_pct"] = 100 * float64(t.right) / float64(t.placed)
		metrics["urgent_right_pct"] = 100 * float64(t.urgentRight) / float64(t.placed)
	}
}

// logTail writes what and the last 4000 bytes of out.
func logTail(w io.Writer, what, out string) {
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	fmt.Fprintf(w, "%s\n%s\n", what, out)
}
