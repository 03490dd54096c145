//go:build !linux

package mph2

import (
	"fmt"
	"net"
	"net/netip"
)

// checkRoute has no routing table to ask outside Linux: pinning is then
// only as good as the socket's bind.
func (p Path) checkRoute(netip.Addr) error { return nil }

// addrInterface is the interface that holds source address a.
func addrInterface(a netip.Addr) (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for i := range ifs {
		if hasAddr(&ifs[i], a) {
			return &ifs[i], nil
		}
	}
	return nil, fmt.Errorf("source address %s is on no interface", a)
}
