package smig

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/shunt-net/shunt/h2"
)

// A TLS session lineage is the set of connections that descend, by session
// resumption, from one full handshake. Only the client that completed that
// handshake (or one it gave its session cache to) holds a resumption secret
// of the lineage, so "resumed a session of the lineage" authenticates the
// client in a way a leaked binding token does not.
type lineageID [16]byte

// lineageKind tells what a connection can prove beyond the token.
type lineageKind uint8

const (
	cleartext  lineageKind = iota // h2c: token only
	tlsTagged                     // TLS through Server.TLSConfig: lineage known
	tlsUnknown                    // TLS whose tickets the server did not tag
)

// lineage is a connection's TLS session lineage.
type lineage struct {
	kind lineageKind
	id   lineageID
}

var (
	errLineageUnknown  = errors.New("TLS connection without session lineage (serve TLS with Server.TLSConfig)")
	errLineageMixed    = errors.New("cleartext and TLS connections cannot share a binding")
	errLineageMismatch = errors.New("connection did not resume a TLS session of the binding (token presented by another client?)")
)

// sameClient reports why a connection of lineage l may not join a binding
// whose connections have lineage of, or nil if it may.
func (l lineage) sameClient(of lineage) error {
	switch {
	case l.kind == tlsUnknown || of.kind == tlsUnknown:
		return errLineageUnknown
	case l.kind != of.kind:
		return errLineageMixed
	case l.id != of.id:
		return errLineageMismatch
	}
	return nil
}

// lineageTag marks the SessionState.Extra entry that carries the lineage;
// crypto/tls asks that entries be recognisable among others' entries.
var lineageTag = []byte("shunt-smig-lineage/1:")

// handshakeLineage follows one TLS handshake: the lineage its tickets will
// carry depends on whether it resumed a tagged session.
type handshakeLineage struct {
	mu      sync.Mutex
	started time.Time
	fresh   lineageID // the lineage a full handshake starts
	offered *lineageID
}

// offer records the lineage of a ticket the client presented. The loop in
// crypto/tls stops at the ticket it accepts, so the last one offered is the
// one resumed whenever the handshake resumes at all.
func (h *handshakeLineage) offer(ss *tls.SessionState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offered = nil
	for _, e := range ss.Extra {
		if rest, ok := bytes.CutPrefix(e, lineageTag); ok && len(rest) == len(lineageID{}) {
			id := lineageID(rest)
			h.offered = &id
		}
	}
}

// resolve returns the connection's lineage once the handshake knows
// whether it resumed. A resumed session without a tag (issued before the
// server tagged tickets) starts a fresh lineage like a full handshake.
func (h *handshakeLineage) resolve(didResume bool) lineageID {
	h.mu.Lock()
	defer h.mu.Unlock()
	if didResume && h.offered != nil {
		return *h.offered
	}
	return h.fresh
}

// handshakeTTL bounds how long a handshake's record waits for its HTTP/2
// connection's SETTINGS (which claims it): records of handshakes that fail
// or serve HTTP/1.1 are dropped after it.
const handshakeTTL = time.Minute

// lineages maps in-progress connections (their socket, the key crypto/tls
// gives GetConfigForClient) to their handshake records.
type lineages struct {
	mu     sync.Mutex
	byConn map[net.Conn]*handshakeLineage
	// order holds the records in start order, so expiry looks only at the
	// oldest instead of scanning every record on each handshake (HTTP/1.1
	// handshakes leave theirs for handshakeTTL). Claimed records stay in
	// it until they age out.
	order []startedConn
}

type startedConn struct {
	conn net.Conn
	h    *handshakeLineage
}

func (ls *lineages) start(nc net.Conn, now time.Time) *handshakeLineage {
	h := &handshakeLineage{started: now}
	rand.Read(h.fresh[:])
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.byConn == nil {
		ls.byConn = map[net.Conn]*handshakeLineage{}
	}
	n := 0
	for n < len(ls.order) && now.Sub(ls.order[n].h.started) > handshakeTTL {
		if o := ls.order[n]; ls.byConn[o.conn] == o.h {
			delete(ls.byConn, o.conn)
		}
		n++
	}
	ls.order = append(ls.order[n:], startedConn{nc, h})
	ls.byConn[nc] = h
	return h
}

// claim returns the lineage of an HTTP/2 connection and forgets its record.
func (ls *lineages) claim(c *h2.Conn) lineage {
	tc, ok := c.NetConn().(*tls.Conn)
	if !ok {
		return lineage{kind: cleartext}
	}
	ls.mu.Lock()
	h := ls.byConn[tc.NetConn()]
	delete(ls.byConn, tc.NetConn())
	ls.mu.Unlock()
	if h == nil {
		return lineage{kind: tlsUnknown}
	}
	return lineage{kind: tlsTagged, id: h.resolve(tc.ConnectionState().DidResume)}
}

// TLSConfig returns a copy of base (the complete configuration: certificate,
// ALPN) whose session tickets carry the TLS session lineage of the
// connection that issued them, so that the server can check that a
// connection joining a binding resumed a session of that binding's lineage
// (docs/smig.md section 7). TLS connections served with another
// configuration can never join a binding. Tickets are encrypted with base's
// ticket keys; base's own WrapSession and UnwrapSession are replaced.
func (s *Server) TLSConfig(base *tls.Config) *tls.Config {
	outer := base.Clone()
	prev := base.GetConfigForClient
	outer.GetConfigForClient = func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := outer
		if prev != nil {
			c, err := prev(chi)
			if err != nil {
				return nil, err
			}
			if c != nil {
				cfg = c
			}
		}
		h := s.lineages.start(chi.Conn, time.Now())
		// A per-connection copy, because WrapSession and UnwrapSession are
		// not told which connection they serve.
		pc := cfg.Clone()
		pc.GetConfigForClient = nil
		pc.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
			ss, err := outer.DecryptTicket(identity, cs)
			if ss != nil {
				h.offer(ss)
			}
			return ss, err
		}
		pc.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
			id := h.resolve(cs.DidResume)
			ss.Extra = append(ss.Extra, append(append([]byte(nil), lineageTag...), id[:]...))
			return outer.EncryptTicket(cs, ss)
		}
		return pc, nil
	}
	return outer
}
