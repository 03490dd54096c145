// Package experiment is the layer every measurement of shunt is written in,
// once: the `shunt bench` drivers and the CLI commands run the same
// experiment packages (experiment/...), which take a typed configuration
// (decoded from one declaration of options: see Decode and Flags), bring up
// what serves them in a Network, and return one Result per run, recorded as
// one Record: the JSON line that `shunt bench`, `--json` of every command and
// package report share.
//
// This package holds what experiments and the runner above them both need:
// the network and host interfaces, the description of a run (condition,
// protocol, object), the record, and field-named errors. It imports nothing
// of the project, so bench imports it and never the reverse.
package experiment

import (
	"context"

	"fmt"
	"io"
	"net"
	"os/exec"
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

// Host is one network namespace of a condition's network (or this machine).
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

// Network is one condition's network, built once for all its runs.
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

// LinkSetter is implemented by networks that can replace a link mid-run.
type LinkSetter interface {
	// SetLink replaces direction dir ("up" or "down") of the named path.
	SetLink(path, dir string, l LinkSpec) error
}

// DeliveryWatcher is implemented by networks that can say what reached the
// far end of a link, and when: the same reading for every client, whatever
// it reports itself.
type DeliveryWatcher interface {
	// WatchDeliveries records every packet delivered by direction dir
	// ("up" or "down") of the named path, from now until stop, which
	// returns them in order.
	WatchDeliveries(path, dir string) (stop func() []Delivery, err error)
}

// Delivery is one packet a link delivered: when, and its IP length.
type Delivery struct {
	At    time.Time
	Bytes int
}

// NetworkFactory checks and builds the networks of conditions.
type NetworkFactory interface {
	// Check validates a condition's link texts without building anything.
	Check(c Condition) error
	// Build creates the condition's network; seed drives its loss models.
	Build(ctx context.Context, c Condition, seed int64) (Network, error)
}

// Env is what an experiment gets when it starts serving one protocol in one
// condition.
type Env struct {
	Condition Condition
	Net       Network
	// Objects are every object the protocol's runs will fetch, so servers
	// can be provisioned once.
	Objects []Object
	// Port is the protocol's own server port: no two protocols of a
	// condition share a listener, so a slow shutdown cannot collide with the
	// next.
	Port int
	Dir  string    // scratch directory, removed after the condition
	Log  io.Writer // diagnostics (server stderr and the like)
}

// Driver runs one kind of measurement: an experiment package seen by the
// runner, selected by a protocol's driver name.
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

// FieldError names the field of a scenario or configuration that is wrong.
type FieldError struct {
	Field string // e.g. conditions[0].paths[1].down.delay, params.conns
	Value string
	Err   error
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Errorf is a FieldError with a formatted cause.
func Errorf(field, value, format string, a ...any) error {
	return &FieldError{Field: field, Value: value, Err: fmt.Errorf(format, a...)}
}
