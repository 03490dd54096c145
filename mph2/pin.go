package mph2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"

	"github.com/shunt-net/shunt/h2"
)

// checkPaths makes sure, before anything is sent, that every path pinned to
// an interface or a source address can be: the interface exists and is up,
// the address is on an interface that is up, and the kernel has a route to
// the path's server through it. A download that silently left by another
// interface would bill the wrong link (aria2's and axel's users find out
// from their bills). Paths with a Dial function are the caller's to check.
func (c *Client) checkPaths(ctx context.Context, u *url.URL) error {
	for i, p := range c.Paths {
		if p.Dial != nil || (p.Interface == "" && !p.LocalAddr.IsValid()) {
			continue
		}
		if err := p.check(ctx, h2.HostPort(u.Host, u.Scheme)); err != nil {
			return fmt.Errorf("mph2: path %s: %w", p.Label(i), err)
		}
	}
	return nil
}

func (p Path) check(ctx context.Context, hostport string) error {
	if p.Interface != "" {
		ifi, err := net.InterfaceByName(p.Interface)
		if err != nil {
			return fmt.Errorf("interface %s does not exist", p.Interface)
		}
		if err := isUp(ifi); err != nil {
			return err
		}
		if p.LocalAddr.IsValid() && !hasAddr(ifi, p.LocalAddr) {
			return fmt.Errorf("source address %s is not on interface %s", p.LocalAddr, p.Interface)
		}
	} else {
		ifi, err := addrInterface(p.LocalAddr)
		if err != nil {
			return err
		}
		if err := isUp(ifi); err != nil {
			return err
		}
	}
	target, err := p.target(ctx, hostport)
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return err
	}
	dst, err := netip.ParseAddr(host)
	if err != nil {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return fmt.Errorf("resolving %s: %v", host, err)
		}
		dst = ips[0]
	}
	return p.checkRoute(dst.Unmap())
}

func isUp(ifi *net.Interface) error {
	switch {
	case ifi.Flags&net.FlagUp == 0:
		return fmt.Errorf("interface %s is down", ifi.Name)
	case ifi.Flags&net.FlagRunning == 0:
		return fmt.Errorf("interface %s is down (no carrier)", ifi.Name)
	}
	return nil
}

func hasAddr(ifi *net.Interface, a netip.Addr) bool {
	addrs, err := ifi.Addrs()
	if err != nil {
		return false
	}
	for _, x := range addrs {
		if pfx, err := netip.ParsePrefix(x.String()); err == nil && pfx.Addr() == a.Unmap() {
			return true
		}
	}
	return false
}
