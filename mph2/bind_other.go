//go:build !linux

package mph2

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

func bindToDevice(iface string) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return fmt.Errorf("mph2: binding to interface %s needs Linux (SO_BINDTODEVICE); use a source address", iface)
	}
}

// tcpLoss needs Linux's TCP_INFO.
func tcpLoss(net.Conn) (float64, error) { return 0, errors.New("mph2: TCP_INFO needs Linux") }
