package smig

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind names a migration policy of the paper.
type Kind uint8

const (
	NoMig Kind = iota // never migrate
	MigSW             // server: migrate a response known to be large (Content-Length >= Threshold)
	MigSP             // server: migrate after sending AfterBytes of a response
	MigCP             // client: ask for migration on response headers with Content-Length >= Threshold
)

// DefaultAfterBytes is MigSP's k (slides: 100 KB).
const DefaultAfterBytes = 100 << 10

// DefaultThreshold is the size from which MigSW and MigCP call a response large.
const DefaultThreshold = 1 << 20

// Policy decides when a stream migrates. It is pure: callers feed it what
// they know about a response and act on the answer.
type Policy struct {
	Kind       Kind
	Threshold  int64 // MigSW, MigCP
	AfterBytes int64 // MigSP
}

func (k Kind) String() string {
	return [...]string{"nomig", "migsw", "migsp", "migcp"}[k]
}

// ParsePolicy reads "nomig", "migsw[:BYTES]", "migsp[:BYTES]" or
// "migcp[:BYTES]"; BYTES is the threshold (migsw, migcp) or k (migsp), with
// an optional K/M suffix (powers of 1024).
func ParsePolicy(s string) (Policy, error) {
	name, arg, hasArg := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	var p Policy
	switch name {
	case "", "nomig", "none", "off":
		if hasArg {
			return p, fmt.Errorf("smig policy %q: nomig takes no argument", s)
		}
		return p, nil
	case "migsw":
		p = Policy{Kind: MigSW, Threshold: DefaultThreshold}
	case "migsp":
		p = Policy{Kind: MigSP, AfterBytes: DefaultAfterBytes}
	case "migcp":
		p = Policy{Kind: MigCP, Threshold: DefaultThreshold}
	default:
		return p, fmt.Errorf("smig policy %q: want nomig, migsw[:BYTES], migsp[:BYTES] or migcp[:BYTES]", s)
	}
	if hasArg {
		n, err := parseBytes(arg)
		if err != nil {
			return p, fmt.Errorf("smig policy %q: %v", s, err)
		}
		if p.Kind == MigSP {
			p.AfterBytes = n
		} else {
			p.Threshold = n
		}
	}
	return p, nil
}

func parseBytes(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad byte count %q", s)
	}
	return n * mult, nil
}

func (p Policy) String() string {
	switch p.Kind {
	case MigSW, MigCP:
		return fmt.Sprintf("%v:%d", p.Kind, p.Threshold)
	case MigSP:
		return fmt.Sprintf("%v:%d", p.Kind, p.AfterBytes)
	}
	return p.Kind.String()
}

// ServerMigrate tells a server whether to migrate a response now, given its
// declared length (-1 if unknown) and the body bytes sent so far.
func (p Policy) ServerMigrate(contentLength, sent int64) bool {
	switch p.Kind {
	case MigSW:
		return contentLength >= p.Threshold
	case MigSP:
		return sent >= p.AfterBytes
	}
	return false
}

// ClientMigrate tells a client whether to ask for a response's migration on
// its headers, given the declared length (-1 if unknown).
func (p Policy) ClientMigrate(contentLength int64) bool {
	return p.Kind == MigCP && contentLength >= p.Threshold
}

// ServerSide reports whether the policy is the server's to apply.
func (p Policy) ServerSide() bool { return p.Kind == MigSW || p.Kind == MigSP }

// Split gives an experiment's two ends their parts of p: a server policy
// runs in the server and leaves the client at NoMig, MigCP (or NoMig) runs
// in the client and leaves the server at NoMig. Both ends speak SMig.
func (p Policy) Split() (server, client Policy) {
	if p.ServerSide() {
		return p, Policy{}
	}
	return Policy{}, p
}
