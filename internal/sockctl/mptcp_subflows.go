package sockctl

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MPTCP socket options of linux/mptcp.h (Linux 6.0) that x/sys does not name.
const (
	mptcpTCPInfo      = 2 // MPTCP_TCPINFO: a struct tcp_info per subflow
	mptcpSubflowAddrs = 3 // MPTCP_SUBFLOW_ADDRS: local and remote address per subflow
	subflowHeader     = 16
	subflowAddrsSize  = 2 * 128 // two struct __kernel_sockaddr_storage
	maxSubflows       = 8
)

// Subflow is one subflow of an MPTCP connection.
type Subflow struct {
	Local    netip.Addr
	Received uint64 // tcpi_bytes_received
}

// MPTCPSubflowBytes lists an MPTCP socket's current subflows with the bytes
// each received (subflows already closed are not listed).
func MPTCPSubflowBytes(fd int) ([]Subflow, error) {
	var ti unix.TCPInfo
	infos, infoStride, err := subflowData(fd, mptcpTCPInfo, int(unsafe.Sizeof(ti)))
	if err != nil {
		return nil, fmt.Errorf("get MPTCP_TCPINFO: %w", err)
	}
	addrs, addrStride, err := subflowData(fd, mptcpSubflowAddrs, subflowAddrsSize)
	if err != nil {
		return nil, fmt.Errorf("get MPTCP_SUBFLOW_ADDRS: %w", err)
	}
	n := min(len(infos)/max(infoStride, 1), len(addrs)/max(addrStride, 1))
	off := int(unsafe.Offsetof(ti.Bytes_received))
	out := make([]Subflow, 0, n)
	for i := range n {
		info := infos[i*infoStride : (i+1)*infoStride]
		var sf Subflow
		if off+8 <= len(info) {
			sf.Received = binary.NativeEndian.Uint64(info[off:])
		}
		sf.Local = sockaddrIP(addrs[i*addrStride : (i+1)*addrStride])
		out = append(out, sf)
	}
	return out, nil
}

// subflowData runs a getsockopt that fills struct mptcp_subflow_data and an
// array of elem-byte elements, and returns the elements' bytes and stride.
func subflowData(fd, opt, elem int) ([]byte, int, error) {
	buf := make([]byte, subflowHeader+maxSubflows*elem)
	binary.NativeEndian.PutUint32(buf[0:], subflowHeader)
	binary.NativeEndian.PutUint32(buf[12:], uint32(elem))
	n := uint32(len(buf))
	if _, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_MPTCP, uintptr(opt), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0); errno != 0 {
		return nil, 0, errno
	}
	if n < subflowHeader {
		return nil, 0, fmt.Errorf("%d bytes", n)
	}
	num := int(binary.NativeEndian.Uint32(buf[4:]))
	stride := int(binary.NativeEndian.Uint32(buf[12:]))
	if stride <= 0 || stride > elem {
		return nil, 0, fmt.Errorf("element size %d, asked for %d", stride, elem)
	}
	end := min(int(n), subflowHeader+min(num, maxSubflows)*stride)
	return buf[subflowHeader:end], stride, nil
}

// sockaddrIP reads the address of a struct sockaddr (AF_INET or AF_INET6).
func sockaddrIP(b []byte) netip.Addr {
	if len(b) < 24 {
		return netip.Addr{}
	}
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		return netip.AddrFrom4([4]byte(b[4:8]))
	case unix.AF_INET6:
		return netip.AddrFrom16([16]byte(b[8:24])).Unmap()
	}
	return netip.Addr{}
}
