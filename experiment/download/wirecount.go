package download

import (
	"fmt"
	"net"

	"github.com/shunt-net/shunt/internal/sockctl"
	"golang.org/x/sys/unix"
)

// tcpTotals are the kernel's per-connection TCP counters (TCP_INFO),
// summed over connections. They count what went over the client's sockets,
// whichever connection carried it, so a migration's extra frames, the
// handshake of a connection it opened and any retransmission all show.
type tcpTotals struct {
	rxBytes, rxSegs int64 // payload bytes received in order; segments received (SYN, ACKs and duplicates included)
	txBytes, txSegs int64 // payload bytes sent (retransmissions included); segments sent
}

// tcpHeaderBytes is what one segment adds on the wire of the testbed's
// IPv4 links: 20 bytes of IP, 20 of TCP, 12 of timestamp option (Linux's
// default). Handshake segments carry a few more option bytes, which the
// estimate leaves out.
const tcpHeaderBytes = 52

func (a tcpTotals) sub(b tcpTotals) tcpTotals {
	return tcpTotals{a.rxBytes - b.rxBytes, a.rxSegs - b.rxSegs, a.txBytes - b.txBytes, a.txSegs - b.txSegs}
}

// wireBytes estimates the IP bytes both ways.
func (a tcpTotals) wireBytes() int64 {
	return a.rxBytes + a.txBytes + (a.rxSegs+a.txSegs)*tcpHeaderBytes
}

// readTCPTotals sums TCP_INFO over conns. It fails if one of them is closed:
// its counters are gone, and a partial sum would read as fewer bytes.
func readTCPTotals(conns []net.Conn) (tcpTotals, error) {
	var t tcpTotals
	for _, c := range conns {
		var info *unix.TCPInfo
		err := sockctl.ConnControl(c, func(fd int) (err error) {
			info, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
			return err
		})
		if err != nil {
			return t, fmt.Errorf("TCP_INFO of %v: %w", c.LocalAddr(), err)
		}
		t.rxBytes += int64(info.Bytes_received)
		t.rxSegs += int64(info.Segs_in)
		t.txBytes += int64(info.Bytes_sent)
		t.txSegs += int64(info.Segs_out)
	}
	return t, nil
}
