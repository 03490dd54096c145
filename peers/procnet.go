package peers

import (
	"bytes"
	"fmt"
	"strconv"
)

// tcpListen is the socket state TCP_LISTEN as /proc/net/tcp prints it.
const tcpListen = "0A"

// Listener is a listening socket in a /proc/net/tcp table.
type Listener struct {
	Port  uint16
	Inode uint64 // matches the socket:[INODE] links in /proc/PID/fd
}

// ParseListeners returns the listening sockets in a /proc/net/tcp or
// /proc/net/tcp6 table.
func ParseListeners(table []byte) ([]Listener, error) {
	var ls []Listener
	lines := bytes.Split(table, []byte("\n"))
	for i, line := range lines {
		f := bytes.Fields(line)
		if i == 0 || len(f) == 0 {
			continue // the header, or the empty line after the last newline
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("line %d: %d fields, want at least 10", i+1, len(f))
		}
		if string(f[3]) != tcpListen {
			continue
		}
		local := f[1]
		colon := bytes.LastIndexByte(local, ':')
		if colon < 0 {
			return nil, fmt.Errorf("line %d: local address %q has no port", i+1, local)
		}
		port, err := strconv.ParseUint(string(local[colon+1:]), 16, 16)
		if err != nil {
			return nil, fmt.Errorf("line %d: local address %q: %v", i+1, local, err)
		}
		inode, err := strconv.ParseUint(string(f[9]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: inode %q: %v", i+1, f[9], err)
		}
		ls = append(ls, Listener{uint16(port), inode})
	}
	return ls, nil
}
