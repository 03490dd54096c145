package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"sync"
	"time"
)

// SockOpts are the per-socket options every run sets explicitly and records:
// the namespace defaults (bbr, MPTCP listeners since Go 1.24) would otherwise
// decide the result silently.
type SockOpts struct {
	CC           string `json:"cc"`
	NotSentLowat int    `json:"notsent_lowat"` // bytes; 0 leaves the kernel default
	MPTCP        bool   `json:"mptcp"`
	Source       string `json:"source,omitempty"` // local address or interface
}

// Host is one network namespace of a condition's network.
type Host interface {
	// Command returns a command that will run inside the namespace.
	Command(ctx context.Context, name string, args ...string) *exec.Cmd
	// Do runs fn on a thread inside the namespace (sockets made there stay there).
	Do(fn func() error) error
	// DialContext connects from this namespace with the given socket options.
	DialContext(ctx context.Context, network, addr string, opts SockOpts) (net.Conn, error)
	// Listen listens in this namespace; accepted connections inherit opts.
	Listen(network, addr string, opts SockOpts) (net.Listener, error)
}

// PathInfo names one path of a built network.
type PathInfo struct {
	Name        string `json:"name"`
	ClientIface string `json:"client_iface"`
	ClientAddr  string `json:"client_addr"`
	ServerAddr  string `json:"server_addr"` // address of the server reached over this path
}

// Network is one condition's emulated network, built once for all its runs.
type Network interface {
	Client() Host
	Servers() []Host // one per server; multihomed networks have several
	Paths() []PathInfo
	// EmulatorCPU is the CPU time the link emulator has used so far.
	EmulatorCPU() (time.Duration, error)
	// Describe says what was built (queue, MTU, emulator), for the report.
	Describe() map[string]string
	Close() error
}

// NetworkFactory checks and builds the networks of conditions.
type NetworkFactory interface {
	// Check validates a condition's link texts without building anything.
	Check(c Condition) error
	// Build creates the condition's network; seed drives its loss models.
	Build(ctx context.Context, c Condition, seed int64) (Network, error)
}

// Env is what a driver gets when it starts serving one protocol in one condition.
type Env struct {
	Condition Condition
	Net       Network
	Scenario  *Scenario
	Dir       string    // scratch directory, removed after the condition
	Log       io.Writer // diagnostics (server stderr and the like)
}

// Driver runs one kind of measurement. Drivers register by name and are
// selected by protocols[].driver.
type Driver interface {
	// Check validates a protocol's params and an object before anything runs.
	Check(p Protocol, o Object) error
	// Start brings up what serves p in env's network (servers, files). It is
	// called once per (condition, protocol); the Session serves all its runs.
	Start(ctx context.Context, env *Env, p Protocol) (Session, error)
}

// Session serves the runs of one (condition, protocol).
type Session interface {
	Run(ctx context.Context, r *Run) (Result, error)
	// Info describes the session's peers (server versions, CC), recorded in
	// every run.
	Info() map[string]string
	Close() error
}

// Result is what one run measured.
type Result struct {
	Metrics map[string]float64 // seconds
	Counts  map[string]float64 // bytes, connections and other non-time numbers
	Info    map[string]string  // per-run facts (connection reused, ...)
	Sock    SockOpts           // the client sockets' options
}

// Registry maps driver names to drivers.
type Registry struct {
	mu sync.Mutex
	m  map[string]Driver
}

// Drivers is the process-wide registry drivers add themselves to in init.
var Drivers = &Registry{}

// Register adds d under name; registering a name twice panics (a programming error).
func (r *Registry) Register(name string, d Driver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]Driver{}
	}
	if _, dup := r.m[name]; dup {
		panic("bench: driver registered twice: " + name)
	}
	r.m[name] = d
}

// Lookup returns the driver registered under name.
func (r *Registry) Lookup(name string) (Driver, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.m[name]
	if !ok {
		names := make([]string, 0, len(r.m))
		for n := range r.m {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown driver %q (have %v)", name, names)
	}
	return d, nil
}
