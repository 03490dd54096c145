package pageload

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/internal/syncio"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/site"
	"github.com/shunt-net/shunt/server"
)

// SteeringServer is param steering's value for issue 19's server-side
// steering: the client sends every request on path's SMig connection and
// opens a pooled one on the other path; the page server places each
// response by the policy (server.Steerer) and moves it there by SMig.
const SteeringServer = "server"

// cost is a path's cost per byte: 1 for the expensive paths, else 0.
func (c Config) cost(path string) float64 {
	if slices.Contains(c.expensive(), path) {
		return 1
	}
	return 0
}

// steerer is the page server's Steerer: the policy, each path's client
// address and cost, and the page model's hints (hints.FromPage, the hints
// the client-side rows get), so both sides decide on the same hints.
func (c Config) steerer(paths []experiment.PathInfo, pages []*page.Page) (*server.Steerer, error) {
	pol, err := c.policy()
	if err != nil {
		return nil, err
	}
	st := &server.Steerer{Policy: pol}
	for _, p := range paths {
		a, err := netip.ParseAddr(p.ClientAddr)
		if err != nil {
			return nil, fmt.Errorf("path %s: client address %q: %w", p.Name, p.ClientAddr, err)
		}
		st.Paths = append(st.Paths, server.SteerPath{Name: p.Name, Client: netip.PrefixFrom(a, a.BitLen()), Cost: c.cost(p.Name)})
	}
	byTarget := map[string]hints.Hint{}
	for _, pg := range pages {
		for i, h := range hints.FromPage(pg) {
			byTarget[site.URLPath(pg.Name, pg.Objects[i].Path)] = h
		}
	}
	st.Classify = func(r *http.Request, h http.Header) hints.Hint {
		if hint, ok := byTarget[site.Target(r)]; ok {
			return hint
		}
		return hints.FromResponse(r.Header, h)
	}
	return st, nil
}

// pathCounts counts what a steered load's connections read per path: TCP
// payload, TLS and HTTP/2 framing included, as the MPTCP rows count their
// subflows. nil when the load is not steered.
type pathCounts struct {
	mu sync.Mutex
	n  map[string]*atomic.Int64
}

func newPathCounts(steered bool) *pathCounts {
	if !steered {
		return nil
	}
	return &pathCounts{n: map[string]*atomic.Int64{}}
}

// count wraps c, a connection over path name, to count what it reads.
func (p *pathCounts) count(name string, c net.Conn) net.Conn {
	if p == nil || c == nil {
		return c
	}
	p.mu.Lock()
	n := p.n[name]
	if n == nil {
		n = new(atomic.Int64)
		p.n[name] = n
	}
	p.mu.Unlock()
	return syncio.CountingConn{Conn: c, N: n}
}

// poolDial opens SMig's pooled connections on the paths other than c.Path,
// in turn (nil when the load is not steered).
func (p *pathCounts) poolDial(c Config, nw experiment.Network) func(ctx context.Context, id int, network, addr string) (net.Conn, error) {
	if p == nil {
		return nil
	}
	var others []experiment.PathInfo
	for _, pi := range nw.Paths() {
		if pi.Name != c.Path {
			others = append(others, pi)
		}
	}
	client := nw.Client()
	return func(ctx context.Context, id int, network, addr string) (net.Conn, error) {
		pi := others[(id-1)%len(others)]
		conn, err := client.DialContext(ctx, network, addr, experiment.SockOpts{CC: origin.CC, Source: pi.ClientAddr})
		return p.count(pi.Name, conn), err
	}
}

func (p *pathCounts) received() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int64{}
	for name, n := range p.n {
		out[name] = n.Load()
	}
	return out
}
