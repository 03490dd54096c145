package origin

import (
	"errors"
	"net"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/internal/sockctl"
)

// PathConns are a run's client connections, to read the TCP payload each
// path received from the kernel's counters (tcpi_bytes_received), so the
// split between paths is read the same way for every scheme: a plain TCP
// connection counts for the path of its local address, an MPTCP one per
// subflow. A connection that has closed keeps its last reading.
type PathConns struct {
	mu    sync.Mutex
	conns []*pathConn
}

type pathConn struct {
	c     net.Conn
	mptcp bool
	last  map[netip.Addr]uint64 // bytes by local address, as last read
}

// Add counts c from now on; mptcp says it is an MPTCP socket.
func (m *PathConns) Add(c net.Conn, mptcp bool) {
	m.mu.Lock()
	m.conns = append(m.conns, &pathConn{c: c, mptcp: mptcp, last: map[netip.Addr]uint64{}})
	m.mu.Unlock()
}

// Received is the TCP payload each path received so far, by local address
// (bytes from no path's address count as "other"). It fails only if an open
// connection's counters cannot be read.
func (m *PathConns) Received(paths []experiment.PathInfo) (map[string]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for _, pc := range m.conns {
		if err := pc.read(); err != nil {
			return nil, err
		}
		for local, n := range pc.last {
			name := "other"
			for _, p := range paths {
				if a, err := netip.ParseAddr(p.ClientAddr); err == nil && a == local {
					name = p.Name
				}
			}
			out[name] += int64(n)
		}
	}
	return out, nil
}

// read refreshes pc.last, unless the connection has closed.
func (pc *pathConn) read() error {
	now := map[netip.Addr]uint64{}
	err := sockctl.ConnControl(pc.c, func(fd int) error {
		if pc.mptcp {
			sfs, err := sockctl.MPTCPSubflowBytes(fd)
			for _, sf := range sfs {
				now[sf.Local] += sf.Received
			}
			return err
		}
		ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if a, ok := pc.c.LocalAddr().(*net.TCPAddr); ok && err == nil {
			now[a.AddrPort().Addr().Unmap()] = ti.Bytes_received
		}
		return err
	})
	switch {
	case err == nil:
		if pc.mptcp {
			// A subflow that closed is no longer listed: keep its bytes.
			for a, n := range pc.last {
				now[a] = max(now[a], n)
			}
		}
		pc.last = now
	case errors.Is(err, net.ErrClosed):
	default:
		return err
	}
	return nil
}
