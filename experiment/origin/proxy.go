package origin

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/proxy"
)

// StartProxy starts shunt proxy with cfg in env's client namespace, on
// loopback, fetching over every path of the network with congestion control
// cc, for one browser run; stop ends it. Chromium's own background requests
// (sign-in, optimisation hints) come to the proxy too: it reaches server
// (HOST:PORT) and nothing else, and resolves no name.
func StartProxy(env *experiment.Env, server, cc string, cfg proxy.Config) (addr string, stop func(), err error) {
	client := env.Net.Client()
	ln, err := client.Listen("tcp", "127.0.0.1:0", experiment.SockOpts{})
	if err != nil {
		return "", nil, fmt.Errorf("proxy listener: %w", err)
	}
	for _, pi := range env.Net.Paths() {
		so := experiment.SockOpts{CC: cc, Source: pi.ClientAddr}
		cfg.Paths = append(cfg.Paths, mph2.Path{Name: pi.Name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != server {
				return nil, fmt.Errorf("%s is not the experiment's server %s", addr, server)
			}
			return client.DialContext(ctx, network, addr, so)
		}})
	}
	cfg.Listener, cfg.ErrorLog = ln, log.New(env.Log, "shunt proxy: ", log.LstdFlags)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := proxy.Start(ctx, cfg)
	if err != nil {
		cancel()
		ln.Close()
		return "", nil, err
	}
	return r.Addr, func() { cancel(); r.Wait() }, nil
}
