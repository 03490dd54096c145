package smig

import (
	"crypto/tls"
	"errors"
	"sync"
	"time"
)

// sessionCache is one origin's TLS session cache. The primary connection's
// tickets go in and pooled connections resume them, so that every
// connection of the origin is of the primary's session lineage, which the
// server requires for binding (docs/smig.md section 7).
type sessionCache struct {
	tls.ClientSessionCache
	once  sync.Once
	ready chan struct{} // closed at the first ticket
}

func newSessionCache(c tls.ClientSessionCache) *sessionCache {
	if c == nil {
		c = tls.NewLRUClientSessionCache(8)
	}
	return &sessionCache{ClientSessionCache: c, ready: make(chan struct{})}
}

func (c *sessionCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.once.Do(func() { close(c.ready) })
	}
}

// readOnlyCache is what pooled connections get: one that failed to resume
// (and would be refused by the server) must not replace the primary's
// ticket with one of a lineage of its own.
type readOnlyCache struct{ tls.ClientSessionCache }

func (readOnlyCache) Put(string, *tls.ClientSessionState) {}

// ticketWait bounds how long a pooled connection waits for the primary's
// first ticket. TLS 1.3 sends tickets after the handshake and Go's client
// stores them when it next reads; shunt's server sends them before its
// SETTINGS, so the wait normally ends before it starts.
const ticketWait = 5 * time.Second

var errNoTicket = errors.New("no TLS session ticket on the primary connection to resume")

// errNotResumed: the server did not resume the primary's session (ticket
// expired or its keys rotated), so the connection could not join the binding.
var errNotResumed = errors.New("pooled connection did not resume the primary's TLS session")
