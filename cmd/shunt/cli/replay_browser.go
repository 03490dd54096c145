package cli

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/browser"
	"github.com/shunt-net/shunt/replay/fetch"
	"github.com/shunt-net/shunt/replay/site"
)

// replayHandler is what the replay's server holds: the page's objects for
// the walk, or its generated site (returned too) for Chromium.
func replayHandler(p *page.Page, browserMode, compute bool) (http.Handler, *browser.Site, error) {
	if !browserMode {
		h, err := site.NewHandler(p)
		return h, nil, err
	}
	if err := browser.Available(""); err != nil {
		return nil, nil, err
	}
	s, err := browser.Build(p, compute)
	if err != nil {
		return nil, nil, err
	}
	h, err := browser.NewHandler(s)
	return h, s, err
}

// serverLeaf is srv's certificate, or nil without TLS.
func serverLeaf(srv *site.Running) *x509.Certificate {
	if srv.Cert == nil {
		return nil
	}
	return srv.Cert.Certificates[0].Leaf
}

// browserRecord is the JSON line of one Chromium load.
type browserRecord struct {
	Time   time.Time    `json:"time"`
	Config replayConfig `json:"config"`
	Client string       `json:"client"`
	browser.Load
	Edges browser.Edges `json:"edges"`
}

// runChromium loads s's root from cfg.Addr in a fresh headless Chromium.
func runChromium(ctx context.Context, s *browser.Site, cfg fetch.Config, command func(context.Context, string, ...string) *exec.Cmd, cert *x509.Certificate, rc replayConfig, jsonFile string, stdout, stderr io.Writer) error {
	if cfg.Proto != "h1" && cfg.Proto != "h2" && cfg.Proto != "h3" {
		return fmt.Errorf("--browser: --proto %q: want h1, h2 or h3", cfg.Proto)
	}
	var log strings.Builder
	bc := browser.Config{Proto: cfg.Proto, H3Origin: cfg.Addr, Cert: cert, Command: command, Stderr: &log}
	url := "https://" + cfg.Addr + s.Root
	l, err := browser.LoadPage(ctx, bc, url)
	if err != nil {
		out := log.String()
		if len(out) > 4000 {
			out = out[len(out)-4000:]
		}
		fmt.Fprintf(stderr, "chromium's log (tail):\n%s\n", out)
		return err
	}
	if err := s.Check(l); err != nil {
		return err
	}
	edges := s.Edges(l)
	rc.Label = "chromium-" + cfg.Proto
	rc.Conns, rc.Streams = 0, 0
	fmt.Fprintf(stdout, "%s in headless Chromium (%s), %d of %d objects, server %s\n", s.Page.Name, l.Protocol, l.Resources+1, len(s.Objects), rc.Server)
	if n, extra := s.Grown(); n > 0 {
		fmt.Fprintf(stdout, "site: %d objects %d bytes larger than the graph's sizes (markup)\n", n, extra)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Fprintf(stdout, "connected %.1f ms, first byte of the HTML %.1f ms\n", ms(l.Connected), ms(l.FirstByte))
	fmt.Fprintf(stdout, "DOMContentLoaded %.1f ms, last response %.1f ms\nPLT %.1f ms (loadEventEnd)\n", ms(l.DOMContentLoaded), ms(l.LastResponse), ms(l.PLT))
	fmt.Fprintf(stdout, "graph: %s\n", edges)
	if jsonFile == "" {
		return nil
	}
	return appendJSONLine(jsonFile, browserRecord{Time: time.Now().UTC(), Config: rc, Client: "chromium", Load: l, Edges: edges})
}

// siteHandler serves the pages' generated sites and names their roots.
func siteHandler(pages []*page.Page, compute bool, stderr io.Writer) (http.Handler, error) {
	var sites []*browser.Site
	for _, p := range pages {
		s, err := browser.Build(p, compute)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "site %s: root %s\n", p.Source, s.Root)
		sites = append(sites, s)
	}
	return browser.NewHandler(sites...)
}
