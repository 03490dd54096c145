package testbed

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/netem"
)

func newNet(t *testing.T, build func(ctx context.Context) (*Net, error)) *Net {
	t.Helper()
	requireNet(t)
	ctx, cancel := context.WithCancel(context.Background())
	n, err := build(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// echoServer accepts on ns at addr and writes back each client's remote
// address, so the client learns which source address the server saw.
func echoServer(t *testing.T, ns *NS, addr netip.Addr) string {
	t.Helper()
	l, err := ns.Listen("tcp", netip.AddrPortFrom(addr, 0).String(), SockOpts{CC: "cubic"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr())
			c.Close()
		}
	}()
	return l.Addr().String()
}

func askSource(t *testing.T, ns *NS, addr string, o SockOpts) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ns.DialContext(ctx, "tcp", addr, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

func TestSingleReachesServerAndCloses(t *testing.T) {
	n := newNet(t, func(ctx context.Context) (*Net, error) { return NewSingle(ctx, PathSpec{}, Options{}) })
	p := n.Paths[0]
	addr := echoServer(t, p.Server, p.ServerAddr)
	if got := askSource(t, n.Client, addr, SockOpts{}); got != p.ClientAddr.String() {
		t.Errorf("server saw the client as %s, want %s", got, p.ClientAddr)
	}
	names := []string{n.Client.Name, n.Servers[0].Name}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if nsExists(name) {
			t.Errorf("namespace %s left after Close", name)
		}
	}
}

func TestCancelledContextClosesNet(t *testing.T) {
	requireNet(t)
	ctx, cancel := context.WithCancel(context.Background())
	n, err := NewSingle(ctx, PathSpec{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for nsExists(n.Client.Name) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if nsExists(n.Client.Name) {
		t.Errorf("namespace %s still there 5 s after the context was cancelled", n.Client.Name)
	}
}

// TestTwoPathSourceChoosesPath binds each client address in turn and checks
// that the server sees it and that the packets crossed that path's link.
func TestTwoPathSourceChoosesPath(t *testing.T) {
	n := newNet(t, func(ctx context.Context) (*Net, error) {
		return NewTwoPath(ctx, PathSpec{}, PathSpec{}, Options{})
	})
	if len(n.Paths) != 2 || n.Paths[0].ServerAddr != n.Paths[1].ServerAddr {
		t.Fatalf("paths %+v: want two paths to one server address", n.Paths)
	}
	addr := echoServer(t, n.Servers[0], n.Paths[0].ServerAddr)
	for _, p := range n.Paths {
		before, _ := n.Stats(p.Name, Up)
		if got := askSource(t, n.Client, addr, SockOpts{Source: p.ClientAddr}); got != p.ClientAddr.String() {
			t.Errorf("bound to %s, the server saw %s", p.ClientAddr, got)
		}
		after, _ := n.Stats(p.Name, Up)
		if after.Read == before.Read {
			t.Errorf("connection from %s sent nothing over path %s", p.ClientAddr, p.Name)
		}
	}
}

func TestMultiHomedPathsReachTheirServers(t *testing.T) {
	n := newNet(t, func(ctx context.Context) (*Net, error) {
		return NewMultiHomed(ctx, PathSpec{}, PathSpec{}, Options{})
	})
	if len(n.Servers) != 2 || n.Paths[0].Server != n.Servers[0] || n.Paths[1].Server != n.Servers[1] {
		t.Fatalf("servers %v, paths %+v: want wifi to server A and cell to server B", n.Servers, n.Paths)
	}
	for _, p := range n.Paths {
		addr := echoServer(t, p.Server, p.ServerAddr)
		// Unbound: the route to each server's address picks the right path.
		if got := askSource(t, n.Client, addr, SockOpts{}); got != p.ClientAddr.String() {
			t.Errorf("server %s saw the client as %s, want %s (path %s)", p.ServerAddr, got, p.ClientAddr, p.Name)
		}
	}
}

// TestSockOptsAppliedAndInherited checks that the options are set on dialled
// sockets, inherited by accepted ones, and that MPTCP stays off unless asked
// (Go listeners default to MPTCP).
func TestSockOptsAppliedAndInherited(t *testing.T) {
	n := newNet(t, func(ctx context.Context) (*Net, error) { return NewSingle(ctx, PathSpec{}, Options{}) })
	p := n.Paths[0]
	for _, o := range []SockOpts{{CC: "cubic", NotSentLowat: 16384}, {CC: "reno", MPTCP: true}} {
		l, err := p.Server.Listen("tcp", netip.AddrPortFrom(p.ServerAddr, 0).String(), o)
		if err != nil {
			t.Fatal(err)
		}
		acc := make(chan net.Conn, 1)
		go func() {
			c, _ := l.Accept()
			acc <- c
		}()
		c, err := n.Client.DialContext(context.Background(), "tcp", l.Addr().String(), o)
		if err != nil {
			t.Fatal(err)
		}
		sc := <-acc
		l.Close()
		if sc == nil {
			t.Fatal("accept failed")
		}
		for side, conn := range map[string]net.Conn{"dialled": c, "accepted": sc} {
			got, err := ReadSockOpts(conn)
			if err != nil {
				t.Fatalf("%s: %v", side, err)
			}
			if got.CC != o.CC || got.MPTCP != o.MPTCP || (o.NotSentLowat != 0 && got.NotSentLowat != o.NotSentLowat) {
				t.Errorf("%s socket: %+v, want %+v", side, got, o)
			}
		}
		c.Close()
		sc.Close()
	}
}

func TestSetLinkAndLinkConfig(t *testing.T) {
	n := newNet(t, func(ctx context.Context) (*Net, error) { return NewSingle(ctx, PathSpec{Name: "lte"}, Options{}) })
	cfg := netem.LinkConfig{Delay: 5 * time.Millisecond, RateBps: 5e6}
	if err := n.SetLink("lte", Down, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := n.LinkConfig("lte", Down)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != cfg.String() {
		t.Errorf("LinkConfig after SetLink: %s, want %s", got, cfg)
	}
	if err := n.SetLink("wifi", Up, cfg); err == nil {
		t.Error("SetLink on a path that does not exist: no error")
	}
	p := n.Paths[0]
	addr := echoServer(t, p.Server, p.ServerAddr)
	if got := askSource(t, n.Client, addr, SockOpts{}); got != p.ClientAddr.String() {
		t.Errorf("after SetLink the server saw %s, want %s", got, p.ClientAddr)
	}
}

func TestLinkLogsWritten(t *testing.T) {
	dir := t.TempDir()
	n := newNet(t, func(ctx context.Context) (*Net, error) { return NewSingle(ctx, PathSpec{}, Options{LogDir: dir}) })
	p := n.Paths[0]
	addr := echoServer(t, p.Server, p.ServerAddr)
	askSource(t, n.Client, addr, SockOpts{})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"link-up.log", "link-down.log"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "# shunt netem link log") || !strings.Contains(string(b), " + ") {
			t.Errorf("%s: no header or no arrivals:\n%s", f, b)
		}
	}
}

func TestCleanupStaleRemovesDeadOwners(t *testing.T) {
	requireNet(t)
	// PIDs never exceed pid_max, so this owner cannot be alive.
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	var max int
	fmt.Sscan(string(b), &max)
	stale := fmt.Sprintf("shunt-%d-1c", max+1)
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", stale, err, out)
	}
	t.Cleanup(func() { deleteNS(stale) })
	live := newNet(t, func(ctx context.Context) (*Net, error) { return NewSingle(ctx, PathSpec{}, Options{}) })
	// NewSingle already cleaned up; a second pass must leave the live net alone.
	if nsExists(stale) {
		t.Errorf("stale namespace %s survived NewSingle", stale)
	}
	removed, err := CleanupStale()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range removed {
		if r == live.Client.Name || r == live.Servers[0].Name {
			t.Errorf("CleanupStale removed the live namespace %s", r)
		}
	}
	if !nsExists(live.Client.Name) {
		t.Errorf("live namespace %s gone", live.Client.Name)
	}
}

func TestBadPathName(t *testing.T) {
	_, err := NewTwoPath(context.Background(), PathSpec{Name: "a-name-longer-than-15"}, PathSpec{}, Options{})
	if err == nil || !strings.Contains(err.Error(), "a-name-longer-than-15") {
		t.Errorf("error %v, want one naming the bad path name", err)
	}
	_, err = NewTwoPath(context.Background(), PathSpec{Name: "x"}, PathSpec{Name: "x"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("error %v, want one about the duplicate name", err)
	}
}

func TestWatchDeliveries(t *testing.T) {
	n := newNet(t, func(ctx context.Context) (*Net, error) { return NewSingle(ctx, PathSpec{Name: "lte"}, Options{}) })
	p := n.Paths[0]
	l, err := p.Server.Listen("tcp", netip.AddrPortFrom(p.ServerAddr, 0).String(), SockOpts{CC: "cubic"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const size = 100_000
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write(make([]byte, size))
		c.Close()
	}()
	stop, err := n.WatchDeliveries("lte", Down)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.WatchDeliveries("lte", Down); err == nil {
		t.Error("a second watch of the same direction: no error")
	}
	stopUp, err := n.WatchDeliveries("lte", Up)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := n.Client.DialContext(ctx, "tcp", l.Addr().String(), SockOpts{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.Copy(io.Discard, c)
	c.Close()
	if err != nil || got != size {
		t.Fatalf("read %d bytes (%v), want %d", got, err, size)
	}
	// The connection's last packets (the ACK of the client's FIN) pass
	// before the watch stops: the count stays put for 100 ms.
	st, err := n.Stats("lte", Down)
	for quiet := 0; err == nil && quiet < 5 && time.Since(before) < 5*time.Second; {
		time.Sleep(20 * time.Millisecond)
		var now DirStats
		now, err = n.Stats("lte", Down)
		if now.Written == st.Written {
			quiet++
		} else {
			quiet = 0
		}
		st = now
	}
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	down := stop()
	// Every packet, in order: what the link counted, and the data in
	// full-sized packets (MTU 1500) but for the last.
	var total, full int
	for i, d := range down {
		if d.At.Before(before) || d.At.After(after) || i > 0 && d.At.Before(down[i-1].At) {
			t.Fatalf("delivery %d at %v: outside [%v, %v] or out of order", i, d.At, before, after)
		}
		total += d.Bytes
		if d.Bytes >= 1000 {
			full++
		}
	}
	if uint64(len(down)) != st.Written || uint64(total) != st.WrittenBytes {
		t.Errorf("watched %d packets, %d bytes; the link wrote %d, %d", len(down), total, st.Written, st.WrittenBytes)
	}
	if full < size/1500 || full > size/1000 {
		t.Errorf("%d packets of >= 1000 bytes delivered down for %d bytes", full, size)
	}
	var upBytes int
	for _, d := range stopUp() {
		upBytes += d.Bytes
	}
	if upBytes > 10_000 {
		t.Errorf("%d bytes up (ACKs and a request only)", upBytes)
	}
	if again, err := n.WatchDeliveries("lte", Down); err != nil {
		t.Errorf("watch after stop: %v", err)
	} else {
		again()
	}
}
