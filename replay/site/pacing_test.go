package site

import (
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPacedListener checks that accepted sockets have Linux's internal
// pacing turned on (a max pacing rate other than unlimited) and that a
// plain listener's do not.
func TestPacedListener(t *testing.T) {
	for _, paced := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if paced {
			ln = pacedListener{ln}
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		rc, err := sc.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var rate uint64
		var gerr error
		if err := rc.Control(func(fd uintptr) {
			rate, gerr = unix.GetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		want := uint64(1<<64 - 1) // unlimited: no pacing
		if paced {
			want = maxPacingRate
		}
		if rate != want {
			t.Errorf("paced %v: SO_MAX_PACING_RATE %d, want %d", paced, rate, want)
		}
	}
}
