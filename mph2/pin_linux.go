package mph2

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// checkRoute asks the kernel's routing tables whether the path reaches dst
// where it is pinned. An interface needs a route through it that covers
// dst (bound to a device without one, a socket would ARP for an off-link
// server and get nowhere); a source address needs the route the kernel
// picks for it (source policy routing included) to leave by the interface
// that holds it, else the bytes would leave by another link.
func (p Path) checkRoute(dst netip.Addr) error {
	ip := net.IP(dst.AsSlice())
	if p.Interface != "" {
		link, err := netlink.LinkByName(p.Interface)
		if err != nil {
			return fmt.Errorf("interface %s: %w", p.Interface, err)
		}
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL,
			&netlink.Route{LinkIndex: link.Attrs().Index, Table: unix.RT_TABLE_UNSPEC},
			netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
		if err != nil {
			return fmt.Errorf("listing the routes of %s: %w", p.Interface, err)
		}
		for _, r := range routes {
			// Every table is listed: policy routing's, and local's for a
			// server on this host.
			if r.Dst != nil && r.Dst.Contains(ip) {
				return nil
			}
			if r.Dst == nil && (r.Family == unix.AF_INET) == (ip.To4() != nil) {
				return nil // a default route of dst's family
			}
		}
		return fmt.Errorf("no route to %s through interface %s", dst, p.Interface)
	}
	src := net.IP(p.LocalAddr.Unmap().AsSlice())
	routes, err := netlink.RouteGetWithOptions(ip, &netlink.RouteGetOptions{SrcAddr: src})
	if err != nil || len(routes) == 0 {
		return fmt.Errorf("no route to %s from source address %s: %v", dst, p.LocalAddr, err)
	}
	ifi, err := addrInterface(p.LocalAddr)
	if err != nil {
		return err
	}
	if out := routes[0].LinkIndex; out != ifi.Index && !dst.IsLoopback() {
		name := fmt.Sprint(out)
		if l, err := net.InterfaceByIndex(out); err == nil {
			name = l.Name
		}
		return fmt.Errorf("the route to %s from %s leaves by interface %s, not by %s, which holds the address", dst, p.LocalAddr, name, ifi.Name)
	}
	return nil
}

// addrInterface is the interface that holds source address a. The kernel
// says whether a is local (its local table); the interface is the one a is
// assigned to, or whose prefix holds it (127.0.0.2 is lo's by 127.0.0.1/8).
func addrInterface(a netip.Addr) (*net.Interface, error) {
	a = a.Unmap()
	routes, err := netlink.RouteGet(net.IP(a.AsSlice()))
	if err != nil || len(routes) == 0 || routes[0].Type != unix.RTN_LOCAL {
		return nil, fmt.Errorf("source address %s is on no interface", a)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var holder *net.Interface
	for i := range ifs {
		addrs, _ := ifs[i].Addrs()
		for _, x := range addrs {
			pfx, err := netip.ParsePrefix(x.String())
			switch {
			case err != nil:
			case pfx.Addr() == a:
				return &ifs[i], nil
			case pfx.Contains(a) && holder == nil:
				holder = &ifs[i]
			}
		}
	}
	if holder == nil {
		return nil, fmt.Errorf("source address %s is local but on no interface's prefix", a)
	}
	return holder, nil
}
