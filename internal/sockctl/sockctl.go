// Package sockctl runs code on a socket's descriptor and holds the TCP
// options shunt's servers, clients and testbed set and read back, so each
// of them does not repeat the RawConn dance and the option calls.
package sockctl

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Control calls f with rc's descriptor; its error is the first of reaching
// the descriptor and of f.
func Control(rc syscall.RawConn, f func(fd int) error) error {
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// ConnControl is Control for an open connection, which must be a socket.
func ConnControl(c net.Conn, f func(fd int) error) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("%T is not a socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return Control(rc, f)
}

// SetTCP sets TCP_CONGESTION to cc unless it is empty and TCP_NOTSENT_LOWAT
// to notSentLowat if it is positive.
func SetTCP(fd int, cc string, notSentLowat int) error {
	if cc != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); err != nil {
			return fmt.Errorf("set TCP_CONGESTION %q: %w", cc, err)
		}
	}
	if notSentLowat > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, notSentLowat); err != nil {
			return fmt.Errorf("set TCP_NOTSENT_LOWAT %d: %w", notSentLowat, err)
		}
	}
	return nil
}

// ReadTCP reads back TCP_CONGESTION and TCP_NOTSENT_LOWAT as the kernel
// holds them (an unset TCP_NOTSENT_LOWAT reads as -1, 4294967295 as a
// uint32).
func ReadTCP(fd int) (cc string, notSentLowat int, err error) {
	if cc, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err != nil {
		return "", 0, fmt.Errorf("get TCP_CONGESTION: %w", err)
	}
	if notSentLowat, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT); err != nil {
		return cc, 0, fmt.Errorf("get TCP_NOTSENT_LOWAT: %w", err)
	}
	return cc, notSentLowat, nil
}

// mptcpInfo is MPTCP_INFO (linux/mptcp.h, Linux 5.16), which x/sys does
// not name.
const mptcpInfo = 1

// MPTCPSubflows is the number of subflows an MPTCP socket has beyond its
// first (struct mptcp_info's mptcpi_subflows, its first byte).
func MPTCPSubflows(fd int) (int, error) {
	var info [64]byte
	n := uint32(len(info))
	if _, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_MPTCP, mptcpInfo, uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&n)), 0); errno != 0 {
		return 0, fmt.Errorf("get MPTCP_INFO: %w", errno)
	}
	if n < 1 {
		return 0, fmt.Errorf("get MPTCP_INFO: %d bytes", n)
	}
	return int(info[0]), nil
}
