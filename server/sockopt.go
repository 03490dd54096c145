package server

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// SockOpts are the socket options shunt sets on every accepted connection.
// Experiments record them with their results (JSON field names are stable).
type SockOpts struct {
	MPTCP bool `json:"mptcp"`
	// CC is the TCP congestion control algorithm; empty means the system default.
	CC string `json:"cc,omitempty"`
	// NotSentLowat is TCP_NOTSENT_LOWAT in bytes; 0 means the system default.
	NotSentLowat int `json:"notsent_lowat,omitempty"`
}

func (o SockOpts) String() string {
	return fmt.Sprintf("mptcp=%t cc=%s notsent_lowat=%d", o.MPTCP, orDefault(o.CC), o.NotSentLowat)
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// set applies the options that are per socket (MPTCP is chosen at listen time).
func (o SockOpts) set(rc syscall.RawConn) error {
	var err error
	cerr := rc.Control(func(fd uintptr) {
		if o.CC != "" {
			if e := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.CC); e != nil {
				err = fmt.Errorf("set TCP_CONGESTION %q: %w", o.CC, e)
				return
			}
		}
		if o.NotSentLowat > 0 {
			if e := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, o.NotSentLowat); e != nil {
				err = fmt.Errorf("set TCP_NOTSENT_LOWAT %d: %w", o.NotSentLowat, e)
			}
		}
	})
	return errors.Join(cerr, err)
}

// apply sets o on an accepted connection, which must be TCP when any
// per-socket option is asked for.
func (o SockOpts) apply(c net.Conn) error {
	if o.CC == "" && o.NotSentLowat <= 0 {
		return nil
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("socket options %v: %T is not a socket", o, c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("socket options %v: %w", o, err)
	}
	return o.set(rc)
}

// ConnSockOpts reads back the options the kernel holds for a TCP connection:
// what was actually in force, as opposed to what was asked for. NotSentLowat
// is reported as the kernel holds it (4294967295 when unset on Linux).
func ConnSockOpts(c net.Conn) (SockOpts, error) {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return SockOpts{}, fmt.Errorf("socket options: %T is not a TCP connection", c)
	}
	var o SockOpts
	o.MPTCP, _ = tc.MultipathTCP()
	rc, err := tc.SyscallConn()
	if err != nil {
		return o, fmt.Errorf("socket options: %w", err)
	}
	var gerr error
	cerr := rc.Control(func(fd uintptr) {
		cc, e := unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		if e != nil {
			gerr = fmt.Errorf("get TCP_CONGESTION: %w", e)
			return
		}
		o.CC = cc
		lowat, e := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
		if e != nil {
			gerr = fmt.Errorf("get TCP_NOTSENT_LOWAT: %w", e)
			return
		}
		o.NotSentLowat = int(uint32(lowat))
	})
	return o, errors.Join(cerr, gerr)
}
