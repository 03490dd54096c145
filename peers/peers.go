// Package peers runs the HTTP/2 implementations shunt is tested and measured
// against (nginx, h2o, nghttpd as servers; curl, nghttp, h2load, h2spec as
// clients) with generated configurations, on loopback or inside a network
// namespace, and parses what the clients print.
//
// Servers run in the foreground as children of the calling process, with every
// pid, log and temp path in a private directory, so nothing touches /etc, /var
// or the services a package manager may have configured.
package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shunt-net/shunt/internal/syncio"
)

// Server names accepted by Start, Available and Version.
const (
	Nginx   = "nginx"
	H2O     = "h2o"
	Nghttpd = "nghttpd"
	// Shunt is `shunt serve`, so benchmarks start it like the others;
	// Options.Binary names the binary when it is not on PATH.
	Shunt = "shunt"
)

// Options configure one server peer.
type Options struct {
	// Root is the directory served at "/".
	Root string
	// Addr is HOST:PORT to listen on. Port 0 picks a free loopback port, which
	// only works without Prefix (a free port in another namespace is unknown).
	Addr string
	// TLS serves h2 over TLS (ALPN h2, http/1.1) with a self-signed
	// certificate for the host of Addr; otherwise cleartext h2c.
	TLS bool
	// Workers is nginx's worker_processes, h2o's num-threads, nghttpd's -n
	// and shunt's GOMAXPROCS; 0 means 1.
	Workers int
	// Binary overrides the server binary found on PATH.
	Binary string
	// Prefix is prepended to the server's argv, e.g. ip netns exec NS, to run
	// it in a network namespace.
	Prefix []string
	// Dir holds configs, certificates, pid and log files. Empty means a new
	// temporary directory that Stop removes.
	Dir string
	// StartTimeout bounds the wait for the port to listen; 0 means 10s.
	StartTimeout time.Duration
	// MaxConnections raises h2o's max-connections (default 1024) and
	// nginx's worker_connections (default here 4096); 0 keeps the defaults.
	MaxConnections int
	// Args are more arguments for shunt serve (--smig, --debug-addr).
	Args []string
	// AccessLog makes nginx and h2o log every request to Peer.AccessLog
	// (AccessFormat, H2OAccessFormat); the other servers refuse it. Off by
	// default, as the h2load comparisons want the servers without log
	// writers.
	AccessLog bool
}

// Peer is a running server.
type Peer struct {
	Name   string
	Addr   string // HOST:PORT it listens on
	Scheme string // "https" or "http"
	Dir    string // configs and logs
	// CertFile is the self-signed certificate when Scheme is https, so
	// clients that verify can trust it.
	CertFile string
	// AccessLog is the file of Options.AccessLog ("" without it).
	AccessLog string

	keyFile  string
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	log      *syncio.Buffer
	ownDir   bool
	stopOnce sync.Once
	stopErr  error
}

// Pid is the server's process ID (nginx's master, h2o's main process).
func (p *Peer) Pid() int { return p.cmd.Process.Pid }

// URL returns the peer's URL for path, which must start with "/".
func (p *Peer) URL(path string) string { return p.Scheme + "://" + p.Addr + path }

// Available returns nil if the named server or client tool can be run, or an
// error naming the missing binary, for test skip messages.
func Available(name string) error {
	_, err := lookTool(name)
	return err
}

// Version returns the version line of a server or client tool, for reports.
func Version(name string) (string, error) {
	bin, err := lookTool(name)
	if err != nil {
		return "", err
	}
	arg := "--version"
	if name == Nginx {
		arg = "-v"
	}
	out, err := exec.Command(bin, arg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", bin, arg, err, bytes.TrimSpace(out))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line), nil
}

// lookTool finds a binary on PATH, then in the Go bin directory, where
// go install puts h2spec and which is often not on PATH.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range goBinDirs() {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in %s (install it: bash scripts/setup)", name, strings.Join(goBinDirs(), ", "))
}

func goBinDirs() []string {
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		for _, p := range filepath.SplitList(gp) {
			dirs = append(dirs, filepath.Join(p, "bin"))
		}
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	return dirs
}

// Start runs the named server (Nginx, H2O, Nghttpd or Shunt) and returns once
// its port listens. The caller must Stop it. The server dies with the OS
// thread that started it (Pdeathsig), so do not call Start from a goroutine
// that locks its thread and then exits.
func Start(ctx context.Context, name string, o Options) (*Peer, error) {
	var build func(bin string, p *Peer, o *Options, host, port string) ([]string, error)
	switch name {
	case Nginx:
		build = nginxArgs
	case H2O:
		build = h2oArgs
	case Nghttpd:
		build = nghttpdArgs
	case Shunt:
		build = shuntArgs
	default:
		return nil, fmt.Errorf("peers: unknown server %q (want %s, %s, %s or %s)", name, Nginx, H2O, Nghttpd, Shunt)
	}
	if o.AccessLog && name != Nginx && name != H2O {
		return nil, fmt.Errorf("peers: an access log is nginx's and h2o's only, not %s's", name)
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = lookTool(name); err != nil {
			return nil, err
		}
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, fmt.Errorf("peers: root %q: %v", o.Root, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("peers: root %q is not a directory", o.Root)
	}
	o.Root = root
	if o.Workers <= 0 {
		o.Workers = 1
	}
	host, port, err := resolveAddr(o.Addr, len(o.Prefix) > 0)
	if err != nil {
		return nil, err
	}
	p := &Peer{Name: name, Addr: net.JoinHostPort(host, port), Scheme: "http", Dir: o.Dir, log: &syncio.Buffer{}}
	if p.Dir == "" {
		if p.Dir, err = os.MkdirTemp("", "shunt-peer-"+name+"-"); err != nil {
			return nil, fmt.Errorf("peers: temp dir for %s: %v", name, err)
		}
		p.ownDir = true
	}
	fail := func(err error) (*Peer, error) {
		if p.ownDir {
			os.RemoveAll(p.Dir)
		}
		return nil, err
	}
	if o.TLS {
		p.Scheme = "https"
		cert, key, err := WriteSelfSigned(p.Dir, host)
		if err != nil {
			return fail(err)
		}
		p.CertFile, p.keyFile = cert, key
	}
	args, err := build(bin, p, &o, host, port)
	if err != nil {
		return fail(err)
	}
	argv := append(append([]string{}, o.Prefix...), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Dir
	if name == Shunt {
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", o.Workers))
	}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// A process group so Stop also reaches nginx's workers; the death signal
	// so a crashed test leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("peers: start %s: %v", strings.Join(argv, " "), err))
	}
	p.cmd = cmd
	p.exited = make(chan struct{})
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()

	timeout := o.StartTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	portNum, _ := strconv.Atoi(port)
	if err := p.waitListening(ctx, uint16(portNum), timeout); err != nil {
		p.Stop()
		return fail(fmt.Errorf("peers: %s (%s) on %s: %v; output:\n%s", name, strings.Join(argv, " "), p.Addr, err, p.Log()))
	}
	return p, nil
}

// resolveAddr splits addr and replaces port 0 with a free loopback port.
func resolveAddr(addr string, inNamespace bool) (host, port string, err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err = net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("peers: address %q: %v", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", "", fmt.Errorf("peers: address %q: bad port", addr)
	} else if n != 0 {
		return host, port, nil
	}
	if inNamespace {
		return "", "", fmt.Errorf("peers: address %q: a port is needed to run in a namespace", addr)
	}
	port, err = FreePort(host)
	return host, port, err
}

// FreePort returns a TCP port on host that was free a moment ago.
func FreePort(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("peers: free port on %q: %v", host, err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port, nil
}

// waitListening polls the server's own view of its network namespace
// (/proc/PID/net/tcp), which works the same on loopback and inside a namespace
// the caller cannot dial into. Only a socket the server process holds counts,
// so another program on the same port is not mistaken for it.
func (p *Peer) waitListening(ctx context.Context, port uint16, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := pidListens(p.cmd.Process.Pid, port)
		if err == nil && ok {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before listening: %v", p.waitErr)
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("not listening after %v: %v", timeout, err)
			}
			return fmt.Errorf("not listening after %v", timeout)
		case <-tick.C:
		}
	}
}

func pidListens(pid int, port uint16) (bool, error) {
	held, err := socketInodes(pid)
	if err != nil {
		return false, err
	}
	ss, err := netSockets(pid)
	if err != nil {
		return false, err
	}
	for _, s := range ss {
		if s.State == tcpListen && s.LocalPort == port && held[s.Inode] {
			return true, nil
		}
	}
	return false, nil
}

// Conns counts the connections on the server's port that are open or
// closing (any state but LISTEN and TIME_WAIT) in its network namespace.
func (p *Peer) Conns() (int, error) {
	_, ps, err := net.SplitHostPort(p.Addr)
	if err != nil {
		return 0, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("port %q: %v", ps, err)
	}
	ss, err := netSockets(p.Pid())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range ss {
		if s.LocalPort == uint16(port) && s.State != tcpListen && s.State != tcpTimeWait {
			n++
		}
	}
	return n, nil
}

// socketInodes returns the inodes of the sockets process pid holds.
func socketInodes(pid int) (map[uint64]bool, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	held := map[uint64]bool{}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		var inode uint64
		if _, err := fmt.Sscanf(link, "socket:[%d]", &inode); err == nil {
			held[inode] = true
		}
	}
	return held, nil
}

// Stop kills the server (its whole process group), waits for it and removes
// the directory Start created. It is safe to call more than once.
func (p *Peer) Stop() error {
	p.stopOnce.Do(func() {
		if p.cmd != nil {
			// SIGKILL: the peers hold nothing worth a graceful shutdown, and
			// the group kill reaches workers the master would otherwise orphan.
			if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				p.stopErr = fmt.Errorf("peers: kill %s (pid %d): %v", p.Name, p.cmd.Process.Pid, err)
			}
			<-p.exited
		}
		if p.ownDir {
			os.RemoveAll(p.Dir)
		}
	})
	return p.stopErr
}

// Log returns what the server printed so far (stdout and stderr).
func (p *Peer) Log() string { return p.log.String() }
