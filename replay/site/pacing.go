package site

import (
	"fmt"
	"net"

	"github.com/shunt-net/shunt/internal/sockctl"
	"golang.org/x/sys/unix"
)

// maxPacingRate is far above any emulated link, so only cwnd/srtt limits
// the pace.
const maxPacingRate = 1 << 40 // bytes per second

// pacedListener turns on Linux's internal TCP pacing on accepted sockets:
// any SO_MAX_PACING_RATE but ~0 does, and the rate then follows cwnd/srtt
// (twice it in slow start, 1.2 times after), so a large congestion window
// no longer leaves as one line-rate burst. Unpaced, a single HTTP/2
// connection's burst overflows a drop-tail queue shorter than the path's
// BDP, and its lost tail costs a probe timeout and a slow start.
type pacedListener struct{ net.Listener }

func (l pacedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	if err := pace(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func pace(c net.Conn) error {
	err := sockctl.ConnControl(c, func(fd int) error {
		return unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, maxPacingRate)
	})
	if err != nil {
		return fmt.Errorf("pacing: set SO_MAX_PACING_RATE: %w", err)
	}
	return nil
}
