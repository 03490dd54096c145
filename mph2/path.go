package mph2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/shunt-net/shunt/content"
)

// Path is one way to the server: an interface, a source address, or a dial
// function, plus where this path sends a host's requests (multi-homing: each
// path may reach a different server for the same URL, MP-H2 §5.5).
type Path struct {
	// Name labels the path in results; default: Interface, LocalAddr or
	// "pathN".
	Name string
	// Interface binds the path's sockets to a device (SO_BINDTODEVICE).
	Interface string
	// LocalAddr binds the path's sockets to a source address; with
	// source-address policy routing (as testbed.NewTwoPath sets up) the
	// address picks the path.
	LocalAddr netip.Addr
	// Dial, if set, replaces the dialer built from Interface and LocalAddr
	// (for example a testbed namespace's DialContext).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Map sends a URL's HOST:PORT (or HOST alone, or "*" for any host) to
	// another address on this path: "HOST:PORT" or "HOST" (the URL's port is
	// kept). TLS and the request's :authority still name the URL's host.
	Map map[string]string
	// Resolver, if set, resolves the URL's host for this path (a resolver
	// whose queries go over this path finds the server closest to it).
	Resolver *net.Resolver
	// Budget, if positive, bounds the response body bytes this path
	// receives over all the Client's downloads, concurrent ones included,
	// tail bytes included (a cellular data allowance): ranges are sized so
	// it cannot be overshot (budgets.go). Requests the Transport passes
	// through unsplit never go on a budgeted path; Hinted refuses one.
	Budget int64
}

// Label is the path's name in results: Name, else Interface, LocalAddr or
// "pathI".
func (p Path) Label(i int) string {
	switch {
	case p.Name != "":
		return p.Name
	case p.Interface != "":
		return p.Interface
	case p.LocalAddr.IsValid():
		return p.LocalAddr.String()
	}
	return fmt.Sprintf("path%d", i)
}

// PassThroughPaths returns, in order, the indexes of the paths that may
// carry traffic the scheduler does not size (a response passed through
// whole, a proxy's tunnel): those without a byte budget, as nothing would
// bound such traffic on a budgeted path. skipped names each path left out.
func PassThroughPaths(paths []Path) (use []int, skipped []error) {
	for i, p := range paths {
		if p.Budget > 0 {
			skipped = append(skipped, fmt.Errorf("path %s: has a byte budget", p.Label(i)))
			continue
		}
		use = append(use, i)
	}
	return use, skipped
}

// dialer returns the function that opens this path's TCP connections.
func (p Path) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	if p.LocalAddr.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: p.LocalAddr.AsSlice(), Zone: p.LocalAddr.Zone()}
	}
	if p.Interface != "" {
		d.Control = bindToDevice(p.Interface)
	}
	return d.DialContext
}

// DialContext opens a connection to addr over the path, for traffic that is
// not a download, such as a proxy's CONNECT tunnel. Map is not applied.
func (p Path) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return p.dialer()(ctx, network, addr)
}

// target is the address this path dials for the URL's hostport.
func (p Path) target(ctx context.Context, hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if m, ok := p.Map[hostport]; ok {
		return m, nil
	}
	m, ok := p.Map[host]
	if !ok {
		m, ok = p.Map[anyHost]
	}
	if ok {
		if _, _, err := net.SplitHostPort(m); err == nil {
			return m, nil
		}
		return net.JoinHostPort(m, port), nil
	}
	if p.Resolver != nil {
		if _, err := netip.ParseAddr(host); err != nil {
			ips, err := p.Resolver.LookupNetIP(ctx, "ip", host)
			if err != nil {
				return "", fmt.Errorf("resolving %s: %w", host, err)
			}
			if len(ips) == 0 {
				return "", fmt.Errorf("resolving %s: no address", host)
			}
			return net.JoinHostPort(ips[0].Unmap().String(), port), nil
		}
	}
	return hostport, nil
}

// ParsePath parses the CLI form IFACE_OR_ADDR[=MAPADDR]: an IP address
// binds the source address, anything else names an interface; MAPADDR, if
// given, is where this path sends every request (HOST or HOST:PORT).
func ParsePath(s string) (Path, error) {
	spec, mapTo, hasMap := cutLast(s, '=')
	if spec == "" {
		return Path{}, fmt.Errorf("path %q: want IFACE_OR_ADDR[=MAPADDR]", s)
	}
	var p Path
	if a, err := netip.ParseAddr(spec); err == nil {
		p.LocalAddr = a
	} else {
		p.Interface = spec
	}
	if hasMap {
		if mapTo == "" {
			return Path{}, fmt.Errorf("path %q: empty address after =", s)
		}
		p.Map = map[string]string{anyHost: mapTo}
	}
	return p, nil
}

// anyHost in Path.Map matches every host (ParsePath's MAPADDR).
const anyHost = "*"

func cutLast(s string, sep byte) (before, after string, found bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// ParseBudget reads a path's byte budget, PATH=SIZE (content.ParseSize's
// sizes, positive).
func ParseBudget(s string) (path string, n int64, err error) {
	path, size, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return "", 0, fmt.Errorf("budget %q: want PATH=SIZE", s)
	}
	n, err = content.ParseSize(size)
	if err != nil || n <= 0 {
		return "", 0, fmt.Errorf("budget %q: want a positive size after =", s)
	}
	return path, n, nil
}

// FormatBudget writes a budget in ParseBudget's syntax.
func FormatBudget(path string, n int64) string { return path + "=" + strconv.FormatInt(n, 10) }
