package drivers

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/replay/browser"
	"github.com/shunt-net/shunt/replay/site"
)

func init() {
	bench.Drivers.Register("chromium", chromiumDriver{})
}

// chromiumDriver loads the real site generated from a page's graph
// (replay/browser) in headless Chromium running in the client namespace,
// a fresh browser and profile per run, from shunt's server over TLS.
//
// Params:
//
//	proto    h1 (HTTP/2 disabled: HTTP/1.1, 6 connections) | h2 | h3
//	compute  true | false (default false): computations as busy loops
//	pacing   true | false (default false): the server paces its TCP sockets,
//	         as driver replay's pacing
//
// Objects: a page by name, as for driver replay. Metrics: plt (the
// navigation's loadEventEnd), last_response (the latest responseEnd of any
// object), dcl (domContentLoadedEventEnd), connected (the document's
// connectEnd) and first_byte (its responseStart), all from navigation start.
// Every object's length is checked (Site.Check). Counts edges, edges_kept,
// graph_depth and browser_depth say how much of the graph's download order
// the browser kept (Site.Edges).
type chromiumDriver struct{}

type chromiumParams struct {
	proto           string
	compute, pacing bool
}

func parseChromiumParams(p bench.Protocol) (chromiumParams, error) {
	cp := chromiumParams{proto: p.Params["proto"]}
	for k, v := range p.Params {
		switch k {
		case "proto":
			if v != "h1" && v != "h2" && v != "h3" {
				return cp, &bench.FieldError{Field: "params.proto", Value: v, Err: errors.New("want h1, h2 or h3")}
			}
		case "compute":
			if err := boolParam(p, k, &cp.compute); err != nil {
				return cp, err
			}
		case "pacing":
			if err := boolParam(p, k, &cp.pacing); err != nil {
				return cp, err
			}
		default:
			return cp, &bench.FieldError{Field: "params." + k, Err: errors.New("unknown parameter of driver chromium (want proto, compute, pacing)")}
		}
	}
	if cp.proto == "" {
		return cp, &bench.FieldError{Field: "params.proto", Err: errors.New("missing (h1, h2 or h3)")}
	}
	return cp, nil
}

func (chromiumDriver) Check(p bench.Protocol, o bench.Object) error {
	cp, err := parseChromiumParams(p)
	if err != nil {
		return err
	}
	pg, err := loadReplayPage(o)
	if err != nil {
		return err
	}
	_, err = browser.Build(pg, cp.compute)
	return err
}

func (chromiumDriver) Start(ctx context.Context, env *bench.Env, p bench.Protocol) (bench.Session, error) {
	cp, err := parseChromiumParams(p)
	if err != nil {
		return nil, err
	}
	if err := browser.Available(""); err != nil {
		return nil, err
	}
	s := &chromiumSession{p: cp, sites: map[string]*browser.Site{}, env: env}
	var sites []*browser.Site
	for _, o := range env.Scenario.Objects {
		pg, err := loadReplayPage(o)
		if err != nil {
			return nil, err
		}
		st, err := browser.Build(pg, cp.compute)
		if err != nil {
			return nil, err
		}
		if n, extra := st.Grown(); n > 0 {
			fmt.Fprintf(env.Log, "chromium site %s: %d objects %d bytes larger than the graph's sizes (markup)\n", pg.Name, n, extra)
		}
		s.sites[o.Name] = st
		sites = append(sites, st)
	}
	h, err := browser.NewHandler(sites...)
	if err != nil {
		return nil, err
	}
	// Chromium cannot set a socket's congestion control; the client
	// namespace's default decides, so make it the replay's there.
	if s.restoreCC, err = setNamespaceCC(env.Net.Client(), serverCC); err != nil {
		return nil, fmt.Errorf("client namespace: %w", err)
	}
	s.srv, err = serveSite(env, p, site.ServeConfig{Handler: h, TLS: true, H3: cp.proto == "h3", Pacing: cp.pacing})
	if err != nil {
		s.restoreCC()
		return nil, fmt.Errorf("site server: %w", err)
	}
	return s, nil
}

type chromiumSession struct {
	p     chromiumParams
	sites map[string]*browser.Site
	env   *bench.Env
	srv   *site.Running
	// restoreCC undoes what setNamespaceCC changed outside the namespace.
	restoreCC func() error
}

func (s *chromiumSession) Info() map[string]string {
	return map[string]string{"client": "headless " + chromiumVersion() + " (" + s.p.proto + ")", "server": "shunt (replay/browser site)",
		"server_cc": serverCC + " (per socket)", "client_cc": serverCC + " (the client namespace's default, set by the driver)",
		"server_tcp_pacing": strconv.FormatBool(s.p.pacing)}
}

// chromiumVersion is `chromium --version`, or "chromium" if it fails.
func chromiumVersion() string {
	out, err := exec.Command(browser.DefaultBinary, "--version").Output()
	if err != nil {
		return "chromium"
	}
	return strings.TrimSpace(string(out))
}

func (s *chromiumSession) Close() error { return errors.Join(s.srv.Close(), s.restoreCC()) }

func (s *chromiumSession) Run(ctx context.Context, r *bench.Run) (bench.Result, error) {
	st := s.sites[r.Object.Name]
	var stderr strings.Builder
	cfg := browser.Config{Proto: s.p.proto, H3Origin: s.srv.Addr, Cert: s.srv.Cert.Certificates[0].Leaf, Command: s.env.Net.Client().Command, Stderr: &stderr}
	l, err := browser.LoadPage(ctx, cfg, "https://"+s.srv.Addr+st.Root)
	if err != nil {
		out := stderr.String()
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		fmt.Fprintf(s.env.Log, "chromium: %v\n%s\n", err, out)
		return bench.Result{}, err
	}
	if err := st.Check(l); err != nil {
		return bench.Result{}, err
	}
	e := st.Edges(l)
	return bench.Result{
		Metrics: map[string]float64{"plt": l.PLT.Seconds(), "last_response": l.LastResponse.Seconds(), "dcl": l.DOMContentLoaded.Seconds(),
			"connected": l.Connected.Seconds(), "first_byte": l.FirstByte.Seconds()},
		Counts: map[string]float64{"objects": float64(len(st.Objects)), "resources": float64(l.Resources),
			"edges": float64(e.Total), "edges_kept": float64(e.Kept), "graph_depth": float64(e.GraphDepth), "browser_depth": float64(e.BrowserDepth)},
		Info: map[string]string{"http": l.Protocol, "transport": "chromium-" + s.p.proto},
		Sock: bench.SockOpts{CC: serverCC},
	}, nil
}
