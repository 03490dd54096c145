package smig

import "time"

// PoolConfig sizes a client's idle-connection pool per origin.
type PoolConfig struct {
	Size        int           // idle connections kept open; default 1
	IdleTimeout time.Duration // close an idle pooled connection after this; default 60 s
	MaxConns    int           // connections per origin, primary included; default Size+4
	// OnDemand opens pooled connections only when a migration needs one
	// (the slides' scenarios without an idle connection), not in advance.
	OnDemand bool
}

func (c PoolConfig) withDefaults() PoolConfig {
	if c.Size <= 0 {
		c.Size = 1
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.MaxConns <= c.Size {
		c.MaxConns = c.Size + 4
	}
	return c
}

// Pool is the pure bookkeeping of one origin's extra connections: which
// are idle since when, how many to open, which to close. Connections are
// named by small integers chosen by the caller; time comes in as now.
type Pool struct {
	cfg     PoolConfig
	idle    map[int]time.Time // idle since
	busy    map[int]bool
	opening int
}

// NewPool returns an empty pool.
func NewPool(cfg PoolConfig) *Pool {
	return &Pool{cfg: cfg.withDefaults(), idle: map[int]time.Time{}, busy: map[int]bool{}}
}

// total counts pooled connections, open or opening, plus the primary.
func (p *Pool) total() int { return 1 + len(p.idle) + len(p.busy) + p.opening }

// ToOpen returns how many connections to start opening now to restore Size
// idle ones (extra asks for more, when a peer wants one and none is idle),
// within MaxConns. The caller must report each with Opened or OpenFailed.
func (p *Pool) ToOpen(extra int) int {
	want := p.cfg.Size
	if p.cfg.OnDemand {
		want = 0
	}
	n := want + extra - len(p.idle) - p.opening
	n = min(n, p.cfg.MaxConns-p.total())
	n = max(n, 0)
	p.opening += n
	return n
}

// Opened records a connection that finished opening, idle since now.
func (p *Pool) Opened(id int, now time.Time) {
	p.opening--
	p.idle[id] = now
}

// OpenFailed records a connection that could not be opened.
func (p *Pool) OpenFailed() { p.opening-- }

// Busy records that id carries a migrated stream.
func (p *Pool) Busy(id int) {
	if _, ok := p.idle[id]; ok {
		delete(p.idle, id)
		p.busy[id] = true
	}
}

// Idle records that id carries no stream any more.
func (p *Pool) Idle(id int, now time.Time) {
	if p.busy[id] {
		delete(p.busy, id)
		p.idle[id] = now
	}
}

// Gone forgets a connection that closed.
func (p *Pool) Gone(id int) {
	delete(p.idle, id)
	delete(p.busy, id)
}

// Expired returns the connections idle for IdleTimeout at now, to close,
// and forgets them; ToOpen reopens the pool when the origin is used again.
func (p *Pool) Expired(now time.Time) []int {
	var out []int
	for id, since := range p.idle {
		if now.Sub(since) >= p.cfg.IdleTimeout {
			out = append(out, id)
			delete(p.idle, id)
		}
	}
	return out
}

// Touch records that the origin is in use at now: idle connections count
// as idle from now. A request is the worst moment to retire a pooled
// connection (the server may be about to move its response there, before
// it reads the GOAWAY: SMig spec section 6), so they expire only after
// IdleTimeout without requests.
func (p *Pool) Touch(now time.Time) {
	for id := range p.idle {
		p.idle[id] = now
	}
}

// IdleTimeout is how long an unused pooled connection lives.
func (p *Pool) IdleTimeout() time.Duration { return p.cfg.IdleTimeout }

// Counts returns the idle and busy pooled connections.
func (p *Pool) Counts() (idle, busy int) { return len(p.idle), len(p.busy) }
