package emulated

import (
	"context"
	"io"
	"net"
	"os/exec"
	"strconv"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/peers"
)

// Local is this machine as a network without emulation: client and server
// are the calling process's namespace and the path is loopback. Commands run
// experiments on it when no link is asked for, through the same Start and
// Run as over emulated links; nothing is built, so it needs no root.
func Local() experiment.Network { return local{} }

// LocalPort is a TCP port free on this machine's loopback now: where an
// experiment's server listens on Local().
func LocalPort() (int, error) {
	port, err := peers.FreePort("127.0.0.1")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}

// LocalEnv is an experiment's environment on Local(): a free port, dir for
// its files, objs, and no log (tests).
func LocalEnv(dir string, objs ...experiment.Object) (*experiment.Env, error) {
	p, err := LocalPort()
	if err != nil {
		return nil, err
	}
	return &experiment.Env{Net: Local(), Port: p, Dir: dir, Log: io.Discard, Objects: objs}, nil
}

type local struct{}

func (local) Client() experiment.Host    { return localHost{} }
func (local) Servers() []experiment.Host { return []experiment.Host{localHost{}} }
func (local) Paths() []experiment.PathInfo {
	return []experiment.PathInfo{{Name: "loopback", ClientIface: "lo", ClientAddr: "127.0.0.1", ServerAddr: "127.0.0.1"}}
}
func (local) EmulatorCPU() (time.Duration, error) { return 0, nil }
func (local) Describe() map[string]string {
	return map[string]string{"emulator": "none: loopback of this machine"}
}
func (local) Close() error { return nil }

type localHost struct{}

func (localHost) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, name, args...)
}

func (localHost) Do(fn func() error) error { return fn() }

func (localHost) DialContext(ctx context.Context, network, addr string, o experiment.SockOpts) (net.Conn, error) {
	so, err := sockOpts(o)
	if err != nil {
		return nil, err
	}
	return so.Dialer(network).DialContext(ctx, network, addr)
}

func (localHost) Listen(network, addr string, o experiment.SockOpts) (net.Listener, error) {
	so, err := sockOpts(o)
	if err != nil {
		return nil, err
	}
	return so.ListenConfig().Listen(context.Background(), network, addr)
}
