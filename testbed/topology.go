// Package testbed builds emulated networks between Linux network namespaces:
// a client namespace and one or two server namespaces joined by TUN devices,
// with each link direction's packets held, shaped and dropped by a netem.Link
// in user space. See docs/testbed.md for the design and its measured accuracy.
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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shunt-net/shunt/netem"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// PathSpec is one emulated path: a name (also the client's interface name) and
// the link in each direction (Up: client to server).
type PathSpec struct {
	Name     string           `json:"name"`
	Up, Down netem.LinkConfig `json:"-"`
}

// Options configure a topology.
type Options struct {
	// LogDir, if set, receives one link log per path and direction:
	// PATH-up.log and PATH-down.log.
	LogDir string
	// Seed seeds the loss models; direction i of the topology uses Seed+i.
	Seed int64

	// newLink replaces netem.NewLink in tests.
	newLink func(cfg netem.LinkConfig, seed int64, log *netem.Log) (linkModel, error)
}

// realLink builds a netem.Link whose dropped packets go back to the pool.
func realLink(cfg netem.LinkConfig, seed int64, log *netem.Log) (linkModel, error) {
	l, err := netem.NewLink(cfg, seed, log)
	if err != nil {
		return nil, err
	}
	l.SetDropHook(recycle)
	return l, nil
}

// Path is one path of a built topology, as the client sees it.
type Path struct {
	Name        string
	ClientIface string     // interface in the client namespace
	ClientAddr  netip.Addr // bind to it to use this path
	ServerAddr  netip.Addr // the server reached over this path
	Server      *NS        // namespace of that server
}

// Direction names one direction of a path.
type Direction int

const (
	Up   Direction = iota // client to server
	Down                  // server to client
)

func (d Direction) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// Net is a built topology. Close removes everything it created.
type Net struct {
	Client  *NS
	Servers []*NS
	Paths   []Path

	opts      Options
	emu       *emulator
	dirs      map[string]*direction // "PATH up" / "PATH down"
	cfgs      map[string]netem.LinkConfig
	fds       []int // TUN fds; closing them removes the devices
	logFiles  []*os.File
	logs      []*netem.Log
	setCount  map[string]int // SetLink calls per direction, for seeds and log names
	stopAfter func() bool
	setMu     sync.Mutex // serialises SetLink
	closeOnce sync.Once
	closeErr  error
}

var netCount atomic.Int64

// Addresses: servers are 10.99.0.N on their lo, path i's client end is 10.99.(i+1).2.
func serverAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 99, 0, byte(i + 1)}) }
func clientAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 99, byte(i + 1), 2}) }

// NewSingle builds a client and a server namespace joined by one path. The
// Net is closed when ctx is done, so a cancelled command leaves nothing behind.
func NewSingle(ctx context.Context, p PathSpec, o Options) (*Net, error) {
	if p.Name == "" {
		p.Name = "link"
	}
	return build(ctx, 1, []PathSpec{p}, []int{0}, false, o)
}

// NewTwoPath builds a client with two interfaces, each over its own link, to one
// server address reachable over both. Source-address policy routing in the
// client makes the bound source address pick the path; the server routes its
// replies by destination. Kernel MPTCP is configured: up to 2 subflows and an
// endpoint for the cell address, so an MPTCP socket opens a subflow per path.
func NewTwoPath(ctx context.Context, wifi, cell PathSpec, o Options) (*Net, error) {
	wifi.Name, cell.Name = defaultName(wifi.Name, "wifi"), defaultName(cell.Name, "cell")
	return build(ctx, 1, []PathSpec{wifi, cell}, []int{0, 0}, true, o)
}

// NewMultiHomed builds the client of NewTwoPath whose wifi path reaches server
// A (Servers[0]) and cell path reaches server B (Servers[1]).
func NewMultiHomed(ctx context.Context, wifi, cell PathSpec, o Options) (*Net, error) {
	wifi.Name, cell.Name = defaultName(wifi.Name, "wifi"), defaultName(cell.Name, "cell")
	return build(ctx, 2, []PathSpec{wifi, cell}, []int{0, 1}, false, o)
}

func defaultName(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

func build(ctx context.Context, nservers int, specs []PathSpec, serverOf []int, mptcp bool, o Options) (_ *Net, err error) {
	if o.newLink == nil {
		o.newLink = realLink
	}
	for i, s := range specs {
		if len(s.Name) > unix.IFNAMSIZ-1 || strings.ContainsAny(s.Name, "/ \t\n") {
			return nil, fmt.Errorf("path name %q: must be a valid interface name (at most 15 characters, no '/' or spaces)", s.Name)
		}
		for _, t := range specs[:i] {
			if t.Name == s.Name {
				return nil, fmt.Errorf("path name %q used twice", s.Name)
			}
		}
	}
	CleanupStale() // best effort: a stale namespace never collides with ours (other PID)

	n := &Net{opts: o, dirs: map[string]*direction{}, cfgs: map[string]netem.LinkConfig{}, setCount: map[string]int{}}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	id := netCount.Add(1)
	if n.Client, err = newNS(nsName(int(id), "c")); err != nil {
		return nil, err
	}
	for i := range nservers {
		role := "s"
		if nservers > 1 {
			role = fmt.Sprintf("s%d", i+1)
		}
		s, err := newNS(nsName(int(id), role))
		if err != nil {
			return nil, err
		}
		n.Servers = append(n.Servers, s)
	}
	for _, ns := range append([]*NS{n.Client}, n.Servers...) {
		if err := prepareNS(ns); err != nil {
			return nil, err
		}
	}
	for i, s := range n.Servers {
		if err := withHandle(s, func(h *netlink.Handle) error {
			lo, err := h.LinkByName("lo")
			if err != nil {
				return err
			}
			return h.AddrAdd(lo, &netlink.Addr{IPNet: prefix32(serverAddr(i))})
		}); err != nil {
			return nil, fmt.Errorf("server address %v in %s: %w", serverAddr(i), s.Name, err)
		}
	}

	if n.emu, err = newEmulator(); err != nil {
		return nil, err
	}
	for i, s := range specs {
		srv := n.Servers[serverOf[i]]
		p := Path{Name: s.Name, ClientIface: s.Name, ClientAddr: clientAddr(i), ServerAddr: serverAddr(serverOf[i]), Server: srv}
		cfd, err := n.addTUN(n.Client, s.Name)
		if err != nil {
			return nil, err
		}
		sfd, err := n.addTUN(srv, s.Name)
		if err != nil {
			return nil, err
		}
		if err := routeClient(n.Client, p, i, firstWith(n.Paths, p.ServerAddr)); err != nil {
			return nil, err
		}
		if err := routeServer(srv, p, firstWith(n.Paths, p.ServerAddr)); err != nil {
			return nil, err
		}
		for _, d := range []struct {
			dir     Direction
			cfg     netem.LinkConfig
			in, out int
		}{{Up, s.Up, cfd, sfd}, {Down, s.Down, sfd, cfd}} {
			name := s.Name + " " + d.dir.String()
			l, err := n.newLink(name, len(n.emu.dirs), d.cfg)
			if err != nil {
				return nil, err
			}
			if err := n.emu.add(name, d.in, d.out, l); err != nil {
				return nil, err
			}
			n.dirs[name] = n.emu.dirs[len(n.emu.dirs)-1]
			n.cfgs[name] = d.cfg
		}
		n.Paths = append(n.Paths, p)
	}
	if mptcp {
		if err := n.configureMPTCP(ctx); err != nil {
			return nil, err
		}
	}
	n.emu.start()
	n.stopAfter = context.AfterFunc(ctx, func() { n.Close() })
	return n, nil
}

// firstWith reports whether no earlier path reaches addr: that path's
// routes become the main-table (default) ones.
func firstWith(paths []Path, addr netip.Addr) bool {
	for _, p := range paths {
		if p.ServerAddr == addr {
			return false
		}
	}
	return true
}

// newLink builds one direction's link, with its log file if logging is on:
// PATH-DIR.log, and PATH-DIR.K.log for the K-th SetLink of that direction.
// Seeds differ per direction and per change so no two links share a loss
// pattern, and all follow from Options.Seed.
func (n *Net) newLink(name string, index int, cfg netem.LinkConfig) (linkModel, error) {
	k := n.setCount[name]
	seed := n.opts.Seed + int64(index) + 1000*int64(k)
	var log *netem.Log
	if n.opts.LogDir != "" {
		if err := os.MkdirAll(n.opts.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("link log directory: %w", err)
		}
		base := strings.ReplaceAll(name, " ", "-")
		if k > 0 {
			base += fmt.Sprintf(".%d", k)
		}
		f, err := os.Create(filepath.Join(n.opts.LogDir, base+".log"))
		if err != nil {
			return nil, fmt.Errorf("link log: %w", err)
		}
		n.logFiles = append(n.logFiles, f)
		log = netem.NewLog(f)
		n.logs = append(n.logs, log)
	}
	l, err := n.opts.newLink(cfg, seed, log)
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	return l, nil
}

// addTUN creates the TUN device name inside ns, sets MTU 1500 and brings it up.
func (n *Net) addTUN(ns *NS, name string) (int, error) {
	fd := -1
	if err := ns.Do(func() (err error) {
		fd, err = openTUN(name)
		return err
	}); err != nil {
		return -1, fmt.Errorf("tun %s in %s: %w", name, ns.Name, err)
	}
	n.fds = append(n.fds, fd)
	err := withHandle(ns, func(h *netlink.Handle) error {
		l, err := h.LinkByName(name)
		if err != nil {
			return err
		}
		if err := h.LinkSetMTU(l, MTU); err != nil {
			return err
		}
		return h.LinkSetUp(l)
	})
	if err != nil {
		return -1, fmt.Errorf("configure %s in %s: %w", name, ns.Name, err)
	}
	return fd, nil
}

// prepareNS brings lo up and sets the namespace's sysctls: no IPv6 on new
// devices (router solicitations and MLD would cross the links), no cached TCP
// metrics (a run's ssthresh must not leak into the next).
func prepareNS(ns *NS) error {
	err := ns.Do(func() error {
		for _, kv := range [][2]string{
			{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "1"},
			{"/proc/sys/net/ipv4/tcp_no_metrics_save", "1"},
		} {
			if err := os.WriteFile(kv[0], []byte(kv[1]), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = withHandle(ns, func(h *netlink.Handle) error {
			lo, err := h.LinkByName("lo")
			if err != nil {
				return err
			}
			return h.LinkSetUp(lo)
		})
	}
	if err != nil {
		return fmt.Errorf("prepare namespace %s: %w", ns.Name, err)
	}
	return nil
}

// routeClient gives path i's interface its address, a policy table (100+i)
// chosen by that source address, and, for the first path to a server, the
// main-table route to it (plus the default route for path 0).
func routeClient(ns *NS, p Path, i int, main bool) error {
	err := withHandle(ns, func(h *netlink.Handle) error {
		l, err := h.LinkByName(p.ClientIface)
		if err != nil {
			return err
		}
		src := net.IP(p.ClientAddr.AsSlice())
		if err := h.AddrAdd(l, &netlink.Addr{IPNet: prefix32(p.ClientAddr)}); err != nil {
			return fmt.Errorf("address %v: %w", p.ClientAddr, err)
		}
		table := 100 + i
		routes := []*netlink.Route{{LinkIndex: l.Attrs().Index, Dst: anyV4(), Src: src, Scope: netlink.SCOPE_LINK, Table: table}}
		if main {
			routes = append(routes, &netlink.Route{LinkIndex: l.Attrs().Index, Dst: prefix32(p.ServerAddr), Src: src, Scope: netlink.SCOPE_LINK})
		}
		if i == 0 {
			routes = append(routes, &netlink.Route{LinkIndex: l.Attrs().Index, Dst: anyV4(), Src: src, Scope: netlink.SCOPE_LINK})
		}
		for _, r := range routes {
			if err := h.RouteAdd(r); err != nil {
				return fmt.Errorf("route %v table %d: %w", r.Dst, r.Table, err)
			}
		}
		rule := netlink.NewRule()
		rule.Family = unix.AF_INET
		rule.Src = prefix32(p.ClientAddr)
		rule.Table = table
		rule.Priority = table
		if err := h.RuleAdd(rule); err != nil {
			return fmt.Errorf("rule from %v: %w", p.ClientAddr, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("client routes for %s in %s: %w", p.Name, ns.Name, err)
	}
	return nil
}

// routeServer routes replies to the path's client address over the path; the
// first path of a server also carries its default route.
func routeServer(ns *NS, p Path, first bool) error {
	err := withHandle(ns, func(h *netlink.Handle) error {
		l, err := h.LinkByName(p.ClientIface)
		if err != nil {
			return err
		}
		src := net.IP(p.ServerAddr.AsSlice())
		routes := []*netlink.Route{{LinkIndex: l.Attrs().Index, Dst: prefix32(p.ClientAddr), Src: src, Scope: netlink.SCOPE_LINK}}
		if first {
			routes = append(routes, &netlink.Route{LinkIndex: l.Attrs().Index, Dst: anyV4(), Src: src, Scope: netlink.SCOPE_LINK})
		}
		for _, r := range routes {
			if err := h.RouteAdd(r); err != nil {
				return fmt.Errorf("route %v: %w", r.Dst, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("server routes for %s in %s: %w", p.Name, ns.Name, err)
	}
	return nil
}

// configureMPTCP sets the path manager limits in every namespace and announces
// the client's second and later addresses as subflow endpoints.
func (n *Net) configureMPTCP(ctx context.Context) error {
	limits := []string{"mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2"}
	for _, ns := range append([]*NS{n.Client}, n.Servers...) {
		if err := ipIn(ctx, ns, limits...); err != nil {
			return err
		}
	}
	for _, p := range n.Paths[1:] {
		if err := ipIn(ctx, n.Client, "mptcp", "endpoint", "add", p.ClientAddr.String(), "dev", p.ClientIface, "subflow"); err != nil {
			return err
		}
	}
	return nil
}

func ipIn(ctx context.Context, ns *NS, args ...string) error {
	args = append([]string{"-n", ns.Name}, args...)
	if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func withHandle(ns *NS, f func(*netlink.Handle) error) error {
	h, err := netlink.NewHandleAt(ns.handle)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", ns.Name, err)
	}
	defer h.Close()
	return f(h)
}

func prefix32(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(32, 32)}
}

func anyV4() *net.IPNet { return &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)} }

// Path returns the path named name.
func (n *Net) Path(name string) (Path, bool) {
	for _, p := range n.Paths {
		if p.Name == name {
			return p, true
		}
	}
	return Path{}, false
}

// SetLink replaces one direction's link configuration mid-run. Packets already
// in the link leave as the old configuration says; later ones take the new.
func (n *Net) SetLink(path string, dir Direction, cfg netem.LinkConfig) error {
	name := path + " " + dir.String()
	n.setMu.Lock()
	defer n.setMu.Unlock()
	d, ok := n.dirs[name]
	if !ok {
		return fmt.Errorf("set link: no path direction %q", name)
	}
	index := slices.Index(n.emu.dirs, d)
	n.setCount[name]++
	l, err := n.newLink(name, index, cfg)
	if err != nil {
		return fmt.Errorf("set link: %w", err)
	}
	d.setLink(l)
	n.cfgs[name] = cfg
	return nil
}

// Outage makes path lose every packet both ways, its connections left open
// (a link gone silent, not a reset), until restore puts its links back as
// they were.
func (n *Net) Outage(path string) (restore func() error, err error) {
	var was [2]netem.LinkConfig
	for i, dir := range []Direction{Up, Down} {
		if was[i], err = n.LinkConfig(path, dir); err != nil {
			return nil, err
		}
	}
	set := func(up, down netem.LinkConfig) error {
		return errors.Join(n.SetLink(path, Down, down), n.SetLink(path, Up, up))
	}
	dead := func(l netem.LinkConfig) netem.LinkConfig { l.Loss = netem.Bernoulli(1); return l }
	if err := set(dead(was[0]), dead(was[1])); err != nil {
		return nil, err
	}
	return func() error { return set(was[0], was[1]) }, nil
}

// LinkConfig returns the configuration of one direction of a path, as last
// set by the constructor or SetLink.
func (n *Net) LinkConfig(path string, dir Direction) (netem.LinkConfig, error) {
	n.setMu.Lock()
	defer n.setMu.Unlock()
	c, ok := n.cfgs[path+" "+dir.String()]
	if !ok {
		return c, fmt.Errorf("link config: no path direction %q", path+" "+dir.String())
	}
	return c, nil
}

// Stats returns the packet counters of one direction of a path.
func (n *Net) Stats(path string, dir Direction) (DirStats, error) {
	d, ok := n.dirs[path+" "+dir.String()]
	if !ok {
		return DirStats{}, fmt.Errorf("stats: no path direction %q", path+" "+dir.String())
	}
	return d.statsNow(), nil
}

// Delivery is a packet one direction of a path wrote to its receiving
// side's device: when, and its IP length.
type Delivery struct {
	At    time.Time
	Bytes int
}

// WatchDeliveries records every packet delivered by one direction of a
// path from now until stop, which returns them in order. One watch per
// direction at a time.
func (n *Net) WatchDeliveries(path string, dir Direction) (stop func() []Delivery, err error) {
	d, ok := n.dirs[path+" "+dir.String()]
	if !ok {
		return nil, fmt.Errorf("watch: no path direction %q", path+" "+dir.String())
	}
	w := &deliveryWatch{}
	if !d.watch.CompareAndSwap(nil, w) {
		return nil, fmt.Errorf("watch: path direction %q is watched already", path+" "+dir.String())
	}
	return func() []Delivery {
		d.watch.CompareAndSwap(w, nil)
		w.mu.Lock()
		defer w.mu.Unlock()
		out := make([]Delivery, len(w.at))
		for i, t := range w.at {
			out[i] = Delivery{epoch.Add(time.Duration(t)), int(w.bytes[i])}
		}
		return out
	}, nil
}

// EmulatorCPU is the CPU time used so far by the emulator's threads.
func (n *Net) EmulatorCPU() time.Duration { return n.emu.cpu.total() }

// Close stops the emulator and removes the devices and namespaces, killing
// any process still running inside them. Safe to call more than once.
func (n *Net) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.stopAfter != nil {
			n.stopAfter()
		}
		if n.emu != nil {
			errs = append(errs, n.emu.close())
		}
		for _, fd := range n.fds {
			unix.Close(fd)
		}
		// The emulator has stopped, so the links no longer touch their logs.
		for _, l := range n.logs {
			errs = append(errs, l.Flush())
		}
		for _, f := range n.logFiles {
			errs = append(errs, f.Close())
		}
		for _, ns := range append(n.Servers, n.Client) {
			if ns != nil {
				errs = append(errs, ns.close())
			}
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}
