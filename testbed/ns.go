package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shunt-net/shunt/internal/sockctl"
	"github.com/vishvananda/netns"
)

// netnsDir is where iproute2 keeps named namespaces.
const netnsDir = "/run/netns"

// NS is a network namespace created by the testbed.
type NS struct {
	Name   string
	handle netns.NsHandle
}

// newNS creates a named namespace with lo up. It uses ip(8) so the mount
// propagation of /run/netns is set up the way `ip netns exec` expects.
func newNS(name string) (*NS, error) {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	h, err := netns.GetFromName(name)
	if err != nil {
		deleteNS(name)
		return nil, fmt.Errorf("open namespace %s: %w", name, err)
	}
	return &NS{Name: name, handle: h}, nil
}

// close kills the processes left in the namespace and deletes it.
func (n *NS) close() error {
	n.handle.Close()
	return deleteNS(n.Name)
}

// deleteNS kills every process still inside the namespace (their owner is gone
// or closing) and removes it.
func deleteNS(name string) error {
	if out, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Command returns a command that runs name in the namespace via `ip netns exec`.
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Do runs f on an OS thread switched into the namespace. Sockets and devices f
// creates belong to the namespace and stay usable from any goroutine afterwards.
func (n *NS) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		// A fresh locked goroutine keeps the caller's thread in its namespace.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("get current namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(n.handle); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter namespace %s: %w", n.Name, err)
			return
		}
		err = f()
		// If switching back fails the thread stays locked and exits with this
		// goroutine, so no other goroutine runs in the wrong namespace.
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// SockOpts are the socket settings the testbed applies explicitly to every
// socket it creates, so that no namespace or runtime default decides them.
// Runners record them with every run.
type SockOpts struct {
	CC           string     `json:"cc"`                      // TCP_CONGESTION, e.g. "cubic"; "" keeps the namespace default (bbr here)
	NotSentLowat int        `json:"notsent_lowat,omitempty"` // TCP_NOTSENT_LOWAT in bytes; 0 leaves it unset
	MPTCP        bool       `json:"mptcp"`                   // IPPROTO_MPTCP socket; off unless asked (Go listeners default to on)
	Source       netip.Addr `json:"source,omitzero"`         // local address to bind (chooses the path in TwoPath)
}

// control applies o to a freshly created socket.
func (o SockOpts) control(network string, c syscall.RawConn) error {
	if !strings.HasPrefix(network, "tcp") {
		return nil
	}
	return sockctl.Control(c, func(fd int) error { return sockctl.SetTCP(fd, o.CC, o.NotSentLowat) })
}

// DialContext dials addr from inside the namespace with o applied.
func (n *NS) DialContext(ctx context.Context, network, addr string, o SockOpts) (net.Conn, error) {
	d := o.Dialer(network)
	var c net.Conn
	err := n.Do(func() (err error) {
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s %s in %s: %w", network, addr, n.Name, err)
	}
	return c, nil
}

// Dialer is a net.Dialer that applies o; it dials in the namespace of the
// thread that calls it (inside Do for a namespace of the testbed).
func (o SockOpts) Dialer(network string) *net.Dialer {
	d := &net.Dialer{Control: func(nw, _ string, c syscall.RawConn) error { return o.control(nw, c) }}
	d.SetMultipathTCP(o.MPTCP)
	if o.Source.IsValid() {
		ip := net.IP(o.Source.AsSlice())
		if strings.HasPrefix(network, "udp") {
			d.LocalAddr = &net.UDPAddr{IP: ip}
		} else {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		}
	}
	return d
}

// Listen listens on addr inside the namespace with o applied to the listening
// socket; accepted connections inherit the congestion control and
// TCP_NOTSENT_LOWAT from it.
func (n *NS) Listen(network, addr string, o SockOpts) (net.Listener, error) {
	lc := o.ListenConfig()
	var l net.Listener
	err := n.Do(func() (err error) {
		l, err = lc.Listen(context.Background(), network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen %s %s in %s: %w", network, addr, n.Name, err)
	}
	return l, nil
}

// ListenPacket opens a packet socket (UDP) on addr inside the namespace.
func (n *NS) ListenPacket(network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := n.Do(func() (err error) {
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen %s %s in %s: %w", network, addr, n.Name, err)
	}
	return pc, nil
}

// ListenConfig listens with o applied to the listening socket, in the
// namespace of the thread that calls it.
func (o SockOpts) ListenConfig() *net.ListenConfig {
	lc := &net.ListenConfig{Control: func(nw, _ string, c syscall.RawConn) error { return o.control(nw, c) }}
	lc.SetMultipathTCP(o.MPTCP)
	return lc
}

// ReadSockOpts reads back the settings of a TCP connection, so a runner records
// what the kernel uses rather than what was asked for.
func ReadSockOpts(c net.Conn) (SockOpts, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return SockOpts{}, fmt.Errorf("read socket options: %T is not a TCP connection", c)
	}
	var o SockOpts
	if la, ok := tc.LocalAddr().(*net.TCPAddr); ok {
		o.Source = la.AddrPort().Addr().Unmap()
	}
	o.MPTCP, _ = tc.MultipathTCP()
	err := sockctl.ConnControl(tc, func(fd int) (err error) {
		o.CC, o.NotSentLowat, err = sockctl.ReadTCP(fd)
		return err
	})
	return o, err
}

// nsName is the name of a namespace owned by this process: the PID lets
// CleanupStale tell live namespaces from ones whose owner died.
func nsName(net int, role string) string {
	return fmt.Sprintf("shunt-%d-%d%s", os.Getpid(), net, role)
}

var staleRe = regexp.MustCompile(`^shunt-(\d+)-`)

// CleanupStale removes the testbed namespaces whose owning process is gone
// (killed, crashed) together with the processes left inside them. It returns
// the names it removed.
func CleanupStale() ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		m := staleRe.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pidAlive(pid) {
			continue
		}
		if err := deleteNS(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// pidAlive reports whether pid is a running process. A recycled PID keeps a
// stale namespace until that process exits, which errs on the safe side.
func pidAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// WaitListening waits until some TCP socket listens in the namespace (a
// server started there is ready), for at most timeout.
func WaitListening(ctx context.Context, ns *NS, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var listening bool
		err := ns.Do(func() error {
			for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
				b, err := os.ReadFile(f)
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					return err
				}
				// Lines: "sl local_address rem_address st ..."; st 0A is LISTEN.
				for _, line := range strings.Split(string(b), "\n")[1:] {
					if fs := strings.Fields(line); len(fs) > 3 && fs[3] == "0A" {
						listening = true
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read sockets of %s: %w", ns.Name, err)
		}
		if listening {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on TCP in %s after %v", ns.Name, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
