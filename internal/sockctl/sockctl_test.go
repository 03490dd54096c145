package sockctl

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// TestSetAndReadTCP sets the options on a loopback connection and reads
// them back from the kernel.
func TestSetAndReadTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := ConnControl(c, func(fd int) error { return SetTCP(fd, "reno", 16384) }); err != nil {
		t.Fatal(err)
	}
	var cc string
	var lowat int
	if err := ConnControl(c, func(fd int) (err error) { cc, lowat, err = ReadTCP(fd); return err }); err != nil {
		t.Fatal(err)
	}
	if cc != "reno" || lowat != 16384 {
		t.Errorf("read back cc %q, notsent_lowat %d; want reno, 16384", cc, lowat)
	}
	err = ConnControl(c, func(fd int) error { return SetTCP(fd, "no-such-cc", 0) })
	if err == nil || !strings.Contains(err.Error(), `TCP_CONGESTION "no-such-cc"`) {
		t.Errorf("unknown congestion control: %v, want an error naming it", err)
	}
}

func TestConnControlNeedsSocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	called := false
	err := ConnControl(a, func(int) error { called = true; return nil })
	if err == nil || called || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("net.Pipe: err %v, f called %v; want a 'not a socket' error and no call", err, called)
	}
}

// TestMPTCPSubflows reads an MPTCP loopback connection's subflow count (no
// path manager endpoint: none beyond the first) and refuses a plain TCP
// socket.
func TestMPTCPSubflows(t *testing.T) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var d net.Dialer
	d.SetMultipathTCP(true)
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if on, _ := c.(*net.TCPConn).MultipathTCP(); !on {
		t.Skip("MPTCP not available in this kernel (the connection fell back to TCP)")
	}
	var n int
	if err := ConnControl(c, func(fd int) (err error) { n, err = MPTCPSubflows(fd); return err }); err != nil || n != 0 {
		t.Errorf("MPTCPSubflows = %d, %v; want 0 extra subflows on loopback", n, err)
	}
	plain, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := ConnControl(plain, func(fd int) error { _, err := MPTCPSubflows(fd); return err }); err == nil {
		t.Error("MPTCPSubflows of a plain TCP socket: no error")
	}
}

// TestMPTCPSubflowBytes sends 100000 bytes over a loopback MPTCP connection
// and finds them received on its one subflow, from 127.0.0.1.
func TestMPTCPSubflowBytes(t *testing.T) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 100000
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		s.Write(make([]byte, size))
	}()
	var d net.Dialer
	d.SetMultipathTCP(true)
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if on, _ := c.(*net.TCPConn).MultipathTCP(); !on {
		t.Skip("MPTCP not available in this kernel (the connection fell back to TCP)")
	}
	if _, err := io.ReadFull(c, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	var sfs []Subflow
	if err := ConnControl(c, func(fd int) (err error) { sfs, err = MPTCPSubflowBytes(fd); return err }); err != nil {
		t.Fatal(err)
	}
	if len(sfs) != 1 || sfs[0].Received != size || sfs[0].Local != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("subflows %+v, want one from 127.0.0.1 with %d bytes", sfs, size)
	}
}
