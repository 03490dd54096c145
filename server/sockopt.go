package server

import (
	"fmt"
	"net"

	"github.com/shunt-net/shunt/internal/sockctl"
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
func (o SockOpts) set(fd int) error { return sockctl.SetTCP(fd, o.CC, o.NotSentLowat) }

// apply sets o on an accepted connection, which must be TCP when any
// per-socket option is asked for.
func (o SockOpts) apply(c net.Conn) error {
	if o.CC == "" && o.NotSentLowat <= 0 {
		return nil
	}
	if err := sockctl.ConnControl(c, o.set); err != nil {
		return fmt.Errorf("socket options %v: %w", o, err)
	}
	return nil
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
	err := sockctl.ConnControl(tc, func(fd int) error {
		cc, lowat, err := sockctl.ReadTCP(fd)
		o.CC, o.NotSentLowat = cc, int(uint32(lowat))
		return err
	})
	return o, err
}
