package mph2

import (
	"syscall"

	"github.com/shunt-net/shunt/internal/sockctl"
)

// bindToDevice makes a socket send only through the named interface.
func bindToDevice(iface string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		return sockctl.Control(c, func(fd int) error {
			return syscall.SetsockoptString(fd, syscall.SOL_SOCKET, syscall.SO_BINDTODEVICE, iface)
		})
	}
}
