//go:build !linux

package mph2

import (
	"fmt"
	"syscall"
)

func bindToDevice(iface string) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return fmt.Errorf("mph2: binding to interface %s needs Linux (SO_BINDTODEVICE); use a source address", iface)
	}
}
