package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/smig"
)

// CC is the congestion control of every server socket. nginx and h2o
// cannot set it per socket, so it is also made the server namespace's default.
const CC = "cubic"

// Server is a running HTTP server in the condition's server namespace.
type Server struct {
	Addr  string            // HOST:PORT
	TLS   bool              // https (self-signed) rather than h2c/http
	Info  map[string]string // server version, congestion control, socket options
	close func() error
	host  experiment.Host
	// accessLog is nginx's or h2o's log of Extras.AccessLog ("" without one).
	accessLog string
}

// Close stops the server and undoes what starting it changed.
func (s *Server) Close() error { return s.close() }

// Start starts the named server ("shunt", "nginx", "h2o") serving root
// on addr inside h's namespace.
func Start(ctx context.Context, h experiment.Host, name, root, addr string, useTLS bool, logw io.Writer, x Extras) (*Server, error) {
	switch name {
	case "shunt":
		return startShunt(h, root, addr, useTLS, logw, x)
	case peers.Nginx, peers.H2O:
		return startPeer(ctx, h, name, root, addr, useTLS, x)
	}
	return nil, fmt.Errorf("unknown server %q (want shunt, nginx or h2o)", name)
}

// startPeer runs nginx or h2o in h's namespace. They cannot set the
// congestion control per socket, so it is made the namespace's default.
func startPeer(ctx context.Context, h experiment.Host, name, root, addr string, useTLS bool, x Extras) (*Server, error) {
	ver, err := peers.Version(name)
	if err != nil {
		return nil, err
	}
	restore, err := SetNamespaceCC(h, CC)
	if err != nil {
		return nil, err
	}
	nsCC, err := NamespaceCC(h)
	if err != nil {
		return nil, errors.Join(err, restore())
	}
	// h.Command's argv minus the command: the namespace prefix (ip netns exec NS).
	probe := h.Command(ctx, "true")
	prefix := probe.Args[:len(probe.Args)-1]
	if x.MPTCP {
		// Neither server opens MPTCP sockets by itself: mptcpize (Debian's
		// mptcpd) makes its socket(2) calls ask for IPPROTO_MPTCP.
		if err := peers.Available("mptcpize"); err != nil {
			return nil, errors.Join(err, restore())
		}
		prefix = append(slices.Clip(prefix), "mptcpize", "run")
	}
	p, err := peers.Start(ctx, name, peers.Options{Root: root, Addr: addr, TLS: useTLS, Prefix: prefix, AccessLog: x.AccessLog})
	if err != nil {
		return nil, errors.Join(err, restore())
	}
	return &Server{Addr: p.Addr, TLS: useTLS, host: h, accessLog: p.AccessLog,
		close: func() error { return errors.Join(p.Stop(), restore()) },
		Info:  map[string]string{"server": ver, "server_cc": nsCC + " (namespace default)"}}, nil
}

// Extras are server options beyond the defaults; all but MPTCP are
// shunt-only (nginx and h2o have neither).
type Extras struct {
	// MPTCP makes the listener an MPTCP one (which still accepts plain TCP):
	// shunt's per socket, nginx's and h2o's by running them under mptcpize.
	MPTCP        bool
	SMig         *smig.Server // SMig on the HTTP/2 engine; nil: plain HTTP/2
	NotSentLowat int          // TCP_NOTSENT_LOWAT per socket; 0: the kernel's default
	// KernelSendQueue turns off the HTTP/2 engine's short send queue.
	KernelSendQueue bool
	// AccessLog logs nginx's or h2o's requests, for Requests (not shunt's).
	AccessLog bool
}

// startShunt runs shunt's server (what `shunt serve` runs) in this process,
// listening inside the server namespace with cubic set per socket.
// Its log (connections reset when a run cancels its background download)
// goes to logw, not to the terminal.
func startShunt(h experiment.Host, root, addr string, useTLS bool, logw io.Writer, x Extras) (*Server, error) {
	hd, err := content.NewHandler(root)
	if err != nil {
		return nil, err
	}
	logger := log.New(logw, "shunt server: ", log.LstdFlags)
	srv := &server.Server{Handler: hd, TLS: useTLS, CC: CC, NotSentLowat: x.NotSentLowat, MPTCP: x.MPTCP, KernelSendQueue: x.KernelSendQueue, ErrorLog: logger}
	if x.SMig != nil {
		x.SMig.Logf = logger.Printf
		srv.H2 = &h2.Server{Handler: x.SMig.Wrap(hd), Config: x.SMig.Config(h2.Config{})}
	}
	ln, err := h.Listen("tcp", addr, experiment.SockOpts{CC: CC, NotSentLowat: x.NotSentLowat, MPTCP: x.MPTCP})
	if err != nil {
		hd.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	ver := "shunt"
	if bi, ok := debug.ReadBuildInfo(); ok {
		ver += " " + bi.Main.Version + " (" + bi.GoVersion + ")"
	}
	return &Server{
		Addr: ln.Addr().String(), TLS: useTLS,
		Info: map[string]string{"server": ver, "server_cc": CC + " (per socket)", "server_sockopts": srv.SockOpts().String(), "server_send_queue": sendQueueInfo(x)},
		close: func() error {
			sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer scancel()
			err := srv.Shutdown(sctx)
			cancel()
			serr := <-done
			if errors.Is(serr, http.ErrServerClosed) || errors.Is(serr, context.Canceled) {
				serr = nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				err = nil // connections still open are closed by cancel
			}
			return errors.Join(err, serr, hd.Close())
		},
	}, nil
}

// sendQueueInfo says which send queue the engine keeps (h2/sendq.go).
func sendQueueInfo(x Extras) string {
	switch {
	case x.KernelSendQueue:
		return "kernel"
	case x.NotSentLowat > 0:
		return "kernel, notsent_lowat " + strconv.Itoa(x.NotSentLowat)
	}
	return "short"
}

const (
	ccSysctl        = "/proc/sys/net/ipv4/tcp_congestion_control"
	ccAllowedSysctl = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
)

// SetNamespaceCC makes cc the default congestion control of h's namespace
// (per namespace since Linux 4.15), for programs that cannot set it per
// socket (nginx, h2o, Chromium). Linux lets a namespace other than the
// initial one default only to an algorithm of the host's allowed list, so cc
// is added to that list if missing; restore puts the list back as it was.
// The machine's own namespace (a run without emulated links) is left alone:
// its default is the machine's, not an experiment's to change; NamespaceCC
// then reports what it is.
func SetNamespaceCC(h experiment.Host, cc string) (restore func() error, err error) {
	restore = func() error { return nil }
	var initial bool
	if err := h.Do(func() (err error) { initial, err = inInitialNamespace(); return err }); err != nil || initial {
		return restore, err
	}
	allowed, err := os.ReadFile(ccAllowedSysctl)
	if err != nil {
		return restore, err
	}
	list := strings.Fields(string(allowed))
	if !slices.Contains(list, cc) {
		if err := os.WriteFile(ccAllowedSysctl, []byte(strings.Join(append(list, cc), " ")), 0); err != nil {
			return restore, fmt.Errorf("allow congestion control %s in namespaces: %w", cc, err)
		}
		restore = func() error {
			if err := os.WriteFile(ccAllowedSysctl, allowed, 0); err != nil {
				return fmt.Errorf("restore %s to %q: %w", ccAllowedSysctl, strings.TrimSpace(string(allowed)), err)
			}
			return nil
		}
	}
	err = h.Do(func() error {
		if err := os.WriteFile(ccSysctl, []byte(cc), 0); err != nil {
			return fmt.Errorf("set the namespace's congestion control to %s: %w", cc, err)
		}
		return nil
	})
	if err != nil {
		return restore, errors.Join(err, restore())
	}
	return restore, nil
}

// startNS identifies the network namespace the process started in: the
// machine's own, as far as shunt is concerned (the testbed's namespaces are
// made from it).
var startNS, startNSErr = nsID("/proc/self/ns/net")

func nsID(file string) ([2]uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil {
		return [2]uint64{}, err
	}
	return [2]uint64{st.Dev, st.Ino}, nil
}

// inInitialNamespace reports whether the calling thread is in the network
// namespace the process started in.
func inInitialNamespace() (bool, error) {
	if startNSErr != nil {
		return false, startNSErr
	}
	id, err := nsID("/proc/thread-self/ns/net")
	return id == startNS, err
}

// NamespaceCC is the default congestion control of h's namespace.
func NamespaceCC(h experiment.Host) (string, error) {
	var cc string
	err := h.Do(func() error {
		b, err := os.ReadFile(ccSysctl)
		cc = strings.TrimSpace(string(b))
		return err
	})
	return cc, err
}

// Addr joins the server address of the first path with a port.
func Addr(nw experiment.Network, port int) string {
	return net.JoinHostPort(nw.Paths()[0].ServerAddr, fmt.Sprint(port))
}
