package origin

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

// PathConns reads what a plain TCP and an MPTCP connection received from
// the kernel's counters, by the path of the local address, and keeps a
// closed connection's last reading.
func TestPathConnsReceived(t *testing.T) {
	paths := []experiment.PathInfo{{Name: "lo", ClientAddr: "127.0.0.1"}}
	for _, mptcp := range []bool{false, true} {
		var lc net.ListenConfig
		lc.SetMultipathTCP(mptcp)
		ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write(make([]byte, 100000))
				c.Close()
			}
		}()
		var d net.Dialer
		d.SetMultipathTCP(mptcp)
		c, err := d.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if m, err := c.(*net.TCPConn).MultipathTCP(); mptcp && (err != nil || !m) {
			c.Close()
			ln.Close()
			t.Skipf("no MPTCP socket on loopback (net.mptcp.enabled?): %v", err)
		}
		var pc PathConns
		pc.Add(c, mptcp)
		if n, err := io.Copy(io.Discard, c); n != 100000 || err != nil {
			t.Fatalf("mptcp %v: read %d, %v", mptcp, n, err)
		}
		// tcpi_bytes_received counts the FIN too.
		got, err := pc.Received(paths)
		if n := got["lo"]; err != nil || n < 100000 || n > 100001 || len(got) != 1 {
			t.Errorf("mptcp %v: received %v, %v; want lo 100000", mptcp, got, err)
		}
		c.Close()
		if again, err := pc.Received(paths); err != nil || again["lo"] != got["lo"] {
			t.Errorf("mptcp %v: after close %v, %v; want the last reading %v", mptcp, again, err, got)
		}
		ln.Close()
	}
}
