package site

import (
	"errors"
	"fmt"
	"net"
	"syscall"

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
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("pacing: %T has no socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("pacing: %w", err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, maxPacingRate)
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("pacing: set SO_MAX_PACING_RATE: %w", err)
	}
	return nil
}
