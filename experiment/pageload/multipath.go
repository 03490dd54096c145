package pageload

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/fetch"
)

// PolicyMPH2 is the policy value of MP-H2 without hints.
const PolicyMPH2 = "mph2"

// policy is the hints policy the configuration names; nil for none and
// for MP-H2.
func (c Config) policy() (*hints.Policy, error) {
	if c.Policy == "" || c.Policy == PolicyMPH2 {
		return nil, nil
	}
	return hints.Load(c.Policy)
}

// checkPaths checks the path names the configuration gives against the
// network's, and that every path reaches the one page server.
func (c Config) checkPaths(paths []experiment.PathInfo) error {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = p.Name
		if c.Policy != "" && p.ServerAddr != paths[0].ServerAddr {
			return experiment.Errorf("params.policy", c.Policy, "path %s reaches another server (multi-homing is not supported by the page loads)", p.Name)
		}
	}
	if c.Steering != "" && len(paths) != 2 {
		return experiment.Errorf("params.steering", c.Steering, "server-side steering opens one pooled connection: it needs a network of two paths (have %d)", len(paths))
	}
	if c.Path != "" && !slices.Contains(names, c.Path) {
		return experiment.Errorf("params.path", c.Path, "no such path (have %s)", strings.Join(names, ", "))
	}
	for _, e := range c.expensive() {
		if !slices.Contains(names, e) {
			return experiment.Errorf("params.expensive", c.Expensive, "no path %s (have %s)", e, strings.Join(names, ", "))
		}
	}
	return nil
}

func (c Config) expensive() []string { return nameList(c.Expensive) }

// nameList splits a comma-separated list of path names ("": none).
func nameList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// source is the client address a single connection binds to: path's, the
// first path's for MPTCP (its first subflow), else none.
func (c Config) source(paths []experiment.PathInfo) string {
	for _, p := range paths {
		if p.Name == c.Path {
			return p.ClientAddr
		}
	}
	if c.MPTCP && len(paths) > 0 {
		return paths[0].ClientAddr
	}
	return ""
}

func (s *Session) multipathInfo(info map[string]string) {
	switch {
	case s.cfg.Steering != "":
		info["client"] = "shunt replay/fetch over smig.Transport: every request on the connection of path " + s.cfg.Path + ", a pooled connection on the other path"
		info["server"] += " with SMig, responses steered by server.Steerer (hints from the page model)"
		if pol, err := s.cfg.policy(); err == nil {
			info["policy_rules"] = pol.String()
		}
		return
	case s.cfg.Policy == PolicyMPH2:
		info["client"] = "shunt fetch.Multipath over mph2.Client (MP-H2, every object split, RST_STREAM ends)"
	case s.cfg.Policy != "":
		info["client"] = "shunt fetch.Multipath over mph2.Hinted"
		if pol, err := s.cfg.policy(); err == nil {
			info["policy_rules"] = pol.String()
		}
	case s.cfg.MPTCP:
		info["client"] += " over kernel MPTCP"
	}
	if s.cfg.Path != "" {
		info["client"] += " on path " + s.cfg.Path
	}
}

// runMultipath loads pg over every path of the network, one HTTP/2
// connection each, placed by the policy (or MP-H2), and counts each path's
// bytes.
func (s *Session) runMultipath(ctx context.Context, pg *page.Page) (experiment.Result, error) {
	if s.net == nil {
		return experiment.Result{}, errors.New("a multipath load needs the session's network (not a server elsewhere)")
	}
	pol, err := s.cfg.policy()
	if err != nil {
		return experiment.Result{}, err
	}
	client := s.net.Client()
	var paths []mph2.Path
	var cost []float64
	for _, pi := range s.net.Paths() {
		so := experiment.SockOpts{CC: origin.CC, Source: pi.ClientAddr}
		paths = append(paths, mph2.Path{Name: pi.Name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return client.DialContext(ctx, network, addr, so)
		}})
		cost = append(cost, s.cfg.cost(pi.Name))
	}
	m, err := fetch.NewMultipath(fetch.MultipathConfig{Paths: paths, Cost: cost, Policy: pol, Addr: s.addr,
		TLS: s.cfg.TLS, TLSConfig: s.tls, Page: pg, Schedule: s.cfg.Schedule})
	if err != nil {
		return experiment.Result{}, err
	}
	res, err := replay.Run(ctx, pg, m, replay.Options{Compute: s.cfg.Compute})
	st := m.Stats()
	if err = errors.Join(err, m.Close()); err != nil {
		return experiment.Result{}, err
	}
	load, err := json.Marshal(res)
	if err != nil {
		return experiment.Result{}, err
	}
	metrics := pageMetrics(pg, res)
	counts := map[string]float64{"bytes": float64(res.Bytes), "objects": float64(len(res.Objects)), "connections": float64(len(paths)),
		"redundant": float64(st.Redundant), "second_won": float64(st.SecondWon), "tails": float64(st.Tails), "tail_won": float64(st.TailWon), "cut": float64(st.Cut), "splits": float64(st.Splits), "joins": float64(st.Joins),
		"wasted_body": float64(st.Wasted)}
	received := map[string]int64{}
	for _, p := range st.Paths {
		received[p.Name] = p.Received
		counts["used_"+p.Name] = float64(p.Used)
		counts["requests_"+p.Name] = float64(p.Requests)
		// The receiver's view of the path's loss, to tell loss recovery
		// from other delays when a row is slow.
		counts["ooo_pct_"+p.Name] = 100 * p.Loss
	}
	if total := pathShares(s.cfg.expensive(), received, metrics, counts); res.Bytes > 0 {
		// DATA payload is body bytes: anything beyond the page is waste.
		counts["dup_bytes"] = float64(total - res.Bytes)
		metrics["dup_pct"] = 100 * float64(total-res.Bytes) / float64(res.Bytes)
	}
	label := "h2-mp-" + s.cfg.Policy
	if pol != nil {
		label = "h2-mp-" + pol.Name
	}
	return experiment.Result{
		Metrics: metrics,
		Counts:  counts,
		Info: map[string]string{"http": "HTTP/2.0", "transport": label, "schedule": m.Schedule(), "load": string(load), "sizes_from": sizesFrom(pg),
			UrgentInfo: urgentObjects(pg)},
		Sock: experiment.SockOpts{CC: origin.CC},
	}, nil
}

// pageMetrics are a load's times: plt; dcl, the DOMContentLoaded analogue
// (every activity of the document, its style sheets and its blocking
// scripts done); last_urgent, the last of those objects' downloads done;
// urgent_p95, the 95th percentile of their downloads' times from ready
// (the walker asked) to done.
func pageMetrics(pg *page.Page, r *replay.Result) map[string]float64 {
	hs := hints.FromPage(pg)
	urgent := map[string]bool{}
	var dcl, last time.Duration
	var times []float64
	for i, o := range r.Objects {
		if !hs[i].Urgent() {
			continue
		}
		urgent[o.ID] = true
		dcl, last = max(dcl, o.Done), max(last, o.Done)
		times = append(times, (o.Done - o.Ready).Seconds())
	}
	for _, c := range r.Comps {
		if urgent[c.Object] {
			dcl = max(dcl, c.Done)
		}
	}
	m := map[string]float64{"plt": r.PLT.Seconds(), "dcl": dcl.Seconds(), "last_urgent": last.Seconds()}
	if len(times) > 0 {
		sort.Float64s(times)
		m["urgent_p95"] = times[int(math.Ceil(0.95*float64(len(times))))-1] // nearest rank
	}
	return m
}

// UrgentInfo is the record's Info key naming the page's urgent objects
// (hints.FromPage), comma-separated, so that their times in "load" can be
// pooled over runs (a p95 over every run, not a median of per-load p95s).
const UrgentInfo = "urgent_objects"

func urgentObjects(pg *page.Page) string {
	var ids []string
	for i, h := range hints.FromPage(pg) {
		if h.Urgent() {
			ids = append(ids, pg.Objects[i].ID)
		}
	}
	return strings.Join(ids, ",")
}

// pathShares records each path's received bytes (DATA for the multipath
// rows, TCP payload per subflow for MPTCP, TLS and HTTP/2 framing
// included; IP bytes per interface for Chromium) and the expensive paths'
// share (expensive_pct), and returns the total.
func pathShares(expensive []string, received map[string]int64, metrics, counts map[string]float64) int64 {
	var total, onExpensive int64
	for name, n := range received {
		counts["received_"+name] = float64(n)
		total += n
		if slices.Contains(expensive, name) {
			onExpensive += n
		}
	}
	if total > 0 && len(expensive) > 0 {
		metrics["expensive_pct"] = 100 * float64(onExpensive) / float64(total)
	}
	return total
}
