package peers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// TCP states as /proc/net/tcp prints them (include/net/tcp_states.h).
const (
	tcpTimeWait = 0x06
	tcpListen   = 0x0A
)

// Socket is a line of a /proc/net/tcp or /proc/net/tcp6 table.
type Socket struct {
	LocalPort, RemotePort uint16
	State                 uint8  // TCP_ESTABLISHED (1) to TCP_CLOSING (11)
	Inode                 uint64 // matches the socket:[INODE] links in /proc/PID/fd; 0 in TIME_WAIT
}

// ParseSockets returns the sockets of a /proc/net/tcp or /proc/net/tcp6
// table.
func ParseSockets(table []byte) ([]Socket, error) {
	var ss []Socket
	lines := bytes.Split(table, []byte("\n"))
	for i, line := range lines {
		f := bytes.Fields(line)
		if i == 0 || len(f) == 0 {
			continue // the header, or the empty line after the last newline
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("line %d: %d fields, want at least 10", i+1, len(f))
		}
		var s Socket
		var err error
		if s.LocalPort, err = addrPort(f[1]); err != nil {
			return nil, fmt.Errorf("line %d: local address %q: %v", i+1, f[1], err)
		}
		if s.RemotePort, err = addrPort(f[2]); err != nil {
			return nil, fmt.Errorf("line %d: remote address %q: %v", i+1, f[2], err)
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			return nil, fmt.Errorf("line %d: state %q: %v", i+1, f[3], err)
		}
		s.State = uint8(st)
		if s.Inode, err = strconv.ParseUint(string(f[9]), 10, 64); err != nil {
			return nil, fmt.Errorf("line %d: inode %q: %v", i+1, f[9], err)
		}
		ss = append(ss, s)
	}
	return ss, nil
}

// addrPort is the port of an ADDR:PORT field, both in hex.
func addrPort(a []byte) (uint16, error) {
	colon := bytes.LastIndexByte(a, ':')
	if colon < 0 {
		return 0, errors.New("no port")
	}
	p, err := strconv.ParseUint(string(a[colon+1:]), 16, 16)
	return uint16(p), err
}

// netSockets returns the sockets of the network namespace process pid is
// in (IPv4 and IPv6).
func netSockets(pid int) ([]Socket, error) {
	var all []Socket
	for _, f := range []string{"tcp", "tcp6"} {
		name := fmt.Sprintf("/proc/%d/net/%s", pid, f)
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) && f == "tcp6" {
			continue // IPv6 disabled
		} else if err != nil {
			return nil, err
		}
		ss, err := ParseSockets(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		all = append(all, ss...)
	}
	return all, nil
}
