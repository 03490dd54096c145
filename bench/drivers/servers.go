package drivers

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
	"strings"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/smig"
)

// serverCC is the congestion control of every server socket. nginx and h2o
// cannot set it per socket, so it is also made the server namespace's default.
const serverCC = "cubic"

// httpServer is a running HTTP server in the condition's server namespace.
type httpServer struct {
	addr  string // HOST:PORT
	tls   bool
	info  map[string]string
	close func() error
}

// startServer starts the named server ("shunt", "nginx", "h2o") serving root
// on addr inside h's namespace.
func startServer(ctx context.Context, h bench.Host, name, root, addr string, useTLS bool, logw io.Writer, x shuntExtras) (*httpServer, error) {
	switch name {
	case "shunt":
		return startShunt(h, root, addr, useTLS, logw, x)
	case peers.Nginx, peers.H2O:
		return startPeer(ctx, h, name, root, addr, useTLS)
	}
	return nil, fmt.Errorf("unknown server %q (want shunt, nginx or h2o)", name)
}

// startPeer runs nginx or h2o in h's namespace. They cannot set the
// congestion control per socket, so it is made the namespace's default.
func startPeer(ctx context.Context, h bench.Host, name, root, addr string, useTLS bool) (*httpServer, error) {
	ver, err := peers.Version(name)
	if err != nil {
		return nil, err
	}
	restore, err := setNamespaceCC(h, serverCC)
	if err != nil {
		return nil, err
	}
	nsCC, err := namespaceCC(h)
	if err != nil {
		return nil, errors.Join(err, restore())
	}
	// h.Command's argv minus the command: the namespace prefix (ip netns exec NS).
	probe := h.Command(ctx, "true")
	prefix := probe.Args[:len(probe.Args)-1]
	p, err := peers.Start(ctx, name, peers.Options{Root: root, Addr: addr, TLS: useTLS, Prefix: prefix})
	if err != nil {
		return nil, errors.Join(err, restore())
	}
	return &httpServer{addr: p.Addr, tls: useTLS,
		close: func() error { return errors.Join(p.Stop(), restore()) },
		info:  map[string]string{"server": ver, "server_cc": nsCC + " (namespace default)"}}, nil
}

// shuntExtras are shunt-only server options (nginx and h2o have neither).
type shuntExtras struct {
	smig         *smig.Server // SMig on the HTTP/2 engine; nil: plain HTTP/2
	notSentLowat int          // TCP_NOTSENT_LOWAT per socket; 0: the kernel's default
}

// startShunt runs shunt's server (what `shunt serve` runs) in this process,
// listening inside the server namespace with cubic set per socket.
// Its log (connections reset when a run cancels its background download)
// goes to logw, not to the terminal.
func startShunt(h bench.Host, root, addr string, useTLS bool, logw io.Writer, x shuntExtras) (*httpServer, error) {
	hd, err := content.NewHandler(root)
	if err != nil {
		return nil, err
	}
	logger := log.New(logw, "shunt server: ", log.LstdFlags)
	srv := &server.Server{Handler: hd, TLS: useTLS, CC: serverCC, NotSentLowat: x.notSentLowat, ErrorLog: logger}
	if x.smig != nil {
		x.smig.Logf = logger.Printf
		srv.H2 = &h2.Server{Handler: x.smig.Wrap(hd), Config: x.smig.Config(h2.Config{})}
	}
	ln, err := h.Listen("tcp", addr, bench.SockOpts{CC: serverCC, NotSentLowat: x.notSentLowat})
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
	return &httpServer{
		addr: ln.Addr().String(), tls: useTLS,
		info: map[string]string{"server": ver, "server_cc": serverCC + " (per socket)", "server_sockopts": srv.SockOpts().String()},
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

const (
	ccSysctl        = "/proc/sys/net/ipv4/tcp_congestion_control"
	ccAllowedSysctl = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
)

// setNamespaceCC makes cc the default congestion control of h's namespace
// (per namespace since Linux 4.15). Linux lets a namespace other than the
// initial one default only to an algorithm of the host's allowed list, so cc
// is added to that list if missing; restore puts the list back as it was.
func setNamespaceCC(h bench.Host, cc string) (restore func() error, err error) {
	restore = func() error { return nil }
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
			return fmt.Errorf("set the server namespace's congestion control to %s: %w", cc, err)
		}
		return nil
	})
	if err != nil {
		return restore, errors.Join(err, restore())
	}
	return restore, nil
}

func namespaceCC(h bench.Host) (string, error) {
	var cc string
	err := h.Do(func() error {
		b, err := os.ReadFile(ccSysctl)
		cc = strings.TrimSpace(string(b))
		return err
	})
	return cc, err
}

// hostPort joins the server address of the first path with a port.
func hostPort(nw bench.Network, port int) string {
	return net.JoinHostPort(nw.Paths()[0].ServerAddr, fmt.Sprint(port))
}
