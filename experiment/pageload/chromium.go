package pageload

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/browser"
	"github.com/shunt-net/shunt/replay/site"
)

// ChromiumConfig is the options of a Chromium load: a fresh browser and
// profile per run, in the client namespace, from shunt's server over TLS.
type ChromiumConfig struct {
	Proto   string `param:"proto" enum:"h1,h2,h3" help:"h1 (HTTP/2 disabled: HTTP/1.1, 6 connections), h2 or h3"`
	Compute bool   `param:"compute" help:"computations as busy loops in the page's scripts"`
	Pacing  bool   `param:"pacing" help:"the server paces its TCP sockets, as the replay's pacing"`
}

// DefaultChromiumConfig loads over HTTP/2.
func DefaultChromiumConfig() ChromiumConfig { return ChromiumConfig{Proto: "h2"} }

// Validate has nothing to check beyond the options' own values.
func (ChromiumConfig) Validate() error { return nil }

// Chromium is the experiment of driver "chromium": the real site generated
// from a page's graph (replay/browser) loaded by headless Chromium. Metrics:
// plt (the navigation's loadEventEnd), last_response (the latest
// responseEnd of any object), dcl (domContentLoadedEventEnd), connected
// (the document's connectEnd) and first_byte (its responseStart), all from
// navigation start. Every object's length is checked (Site.Check). Counts
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
	srv   *site.Running // nil: a server elsewhere
	// restoreCC undoes what SetNamespaceCC changed outside the namespace.
	restoreCC func() error
}

// StartChromium builds the sites of env's pages and serves them.
func StartChromium(ctx context.Context, env *experiment.Env, c ChromiumConfig) (*ChromiumSession, error) {
	if err := browser.Available(""); err != nil {
		return nil, err
	}
	s := &ChromiumSession{cfg: c, host: env.Net.Client(), log: env.Log, where: where(env.Net)}
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
	s.srv, err = serveSite(env, false, site.ServeConfig{Handler: h, TLS: true, H3: c.Proto == "h3", Pacing: c.Pacing})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("site server: %w", err), s.restoreCC())
	}
	s.addr, s.cert = s.srv.Addr, s.srv.Cert.Certificates[0].Leaf
	return s, nil
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
	info := map[string]string{"client": "headless " + chromiumVersion() + " (" + s.cfg.Proto + ")", "server": "shunt (replay/browser site)",
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
	l, err := browser.LoadPage(ctx, cfg, "https://"+s.addr+st.Root)
	if err != nil {
		logTail(s.log, "chromium: "+err.Error(), stderr.String())
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
	return experiment.Result{
		Metrics: map[string]float64{"plt": l.PLT.Seconds(), "last_response": l.LastResponse.Seconds(), "dcl": l.DOMContentLoaded.Seconds(),
			"connected": l.Connected.Seconds(), "first_byte": l.FirstByte.Seconds()},
		Counts: map[string]float64{"objects": float64(len(st.Objects)), "resources": float64(l.Resources),
			"edges": float64(e.Total), "edges_kept": float64(e.Kept), "graph_depth": float64(e.GraphDepth), "browser_depth": float64(e.BrowserDepth)},
		Info: map[string]string{"http": l.Protocol, "transport": "chromium-" + s.cfg.Proto, "browser_load": string(load), "edges": string(edges), "edges_text": e.String()},
		Sock: experiment.SockOpts{CC: origin.CC},
	}, nil
}

// logTail writes what and the last 4000 bytes of out.
func logTail(w io.Writer, what, out string) {
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	fmt.Fprintf(w, "%s\n%s\n", what, out)
}
