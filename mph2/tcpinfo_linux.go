package mph2

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"

	"github.com/shunt-net/shunt/internal/sockctl"
)

// tcpLoss is the share of a TCP connection's received segments that came
// out of order: what a receiver sees of the loss on its downlink (every
// lost segment leaves the ones behind it out of order until it is
// repaired), 0 on a clean path.
func tcpLoss(c net.Conn) (float64, error) {
	if c == nil {
		return 0, errors.New("no TCP connection")
	}
	var info *unix.TCPInfo
	err := sockctl.ConnControl(c, func(fd int) (err error) {
		info, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return err
	})
	if err != nil || info.Segs_in == 0 {
		return 0, err
	}
	return float64(info.Rcv_ooopack) / float64(info.Segs_in), nil
}
