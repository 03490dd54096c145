package smig

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shunt-net/shunt/h2"
	"golang.org/x/net/http2"
)

// Transport is an HTTP/2 client with SMig: requests to an origin share one
// connection (the primary); a small pool of idle connections receives
// migrated responses. Against a server that does not announce SettingSMig
// it is plain HTTP/2 on the primary.
type Transport struct {
	// TLSClientConfig's ClientSessionCache, if set, holds the sessions an
	// origin's pooled connections resume to join its binding (they must);
	// nil means one cache per origin.
	TLSClientConfig *tls.Config
	AllowHTTP       bool
	DialContext     func(ctx context.Context, network, addr string) (net.Conn, error)
	// PoolDial, if set, opens the pooled connections (id 1, 2, ... in the
	// order they are opened) instead of DialContext: a multipath client
	// binds them to its other paths, so a server can steer responses
	// across paths (issue 19). The first one's TCP connection is opened
	// with the primary's, so its round trip overlaps the primary's
	// handshake instead of following it (its TLS handshake still waits for
	// the primary's ticket).
	PoolDial func(ctx context.Context, id int, network, addr string) (net.Conn, error)
	Config   h2.Config
	Policy   Policy // MigCP applies here; server policies are ignored
	Pool     PoolConfig
	// Logf reports refused migrations and linking errors; nil means silent.
	Logf func(format string, args ...any)

	once    sync.Once
	h2t     *h2.Transport
	mu      sync.Mutex
	origins map[string]*origin
	conns   map[*h2.Conn]*cconn
	// poolChanged is closed (and replaced) whenever a connection is bound
	// or leaves, so waits for a bound idle connection wake on the event.
	poolChanged chan struct{}

	stats ClientStats
}

// ClientStats count what the client did.
type ClientStats struct {
	ConnsOpened atomic.Int64 // primaries and pooled
	Migrated    atomic.Int64 // responses linked to a continuation
	Asked       atomic.Int64 // MigCP requests sent
	Refused     atomic.Int64 // requests the server refused
	BadFrames   atomic.Int64 // SMig frames rejected (unknown CID, foreign stream, ...)
}

// Stats returns the client's counters.
func (t *Transport) Stats() *ClientStats { return &t.stats }

type origin struct {
	addr, scheme string
	primary      *cconn
	dialing      chan struct{} // closed when the primary dial ends
	dialErr      error
	pooled       map[int]*cconn
	pool         *Pool
	nextID       int
	token        Token
	sessions     *sessionCache          // https: shared by the origin's connections
	markers      map[linkKey]*h2.Stream // marker seen, opening not yet: source stream
	openings     map[linkKey]*h2.Stream // opening seen, marker not yet: continuation
	openedFrom   map[linkKey]CID        // the source connection of each parked opening
	// gone holds the CIDs of the origin's connections that ended, with
	// when: a marker naming one will never see its continuation.
	gone   map[CID]time.Time
	early  *earlyConn  // PoolDial's connection for pooled id 1, opened with the primary
	expiry *time.Timer // retires pooled connections unused for IdleTimeout
}

// ErrMigrationLost fails a response whose rest the server moved to a
// connection that ended before it carried it, or whose source connection
// ended before the move: re-request the missing bytes (h2.Resume does).
var ErrMigrationLost = errors.New("smig: migrated response lost with its connection")

// linkKey names a continuation stream: its connection's CID and stream
// ID. CIDs, not connections, because a marker on the source can be read
// before the destination's binding is (they travel on different
// connections).
type linkKey struct {
	cid CID
	id  uint32
}

// linkTimeout bounds how long a marker waits for its continuation.
const linkTimeout = 10 * time.Second

type cconn struct {
	o     *origin
	id    int // 0 for the primary
	cc    *h2.ClientConn
	cid   CID
	bound bool // the server confirmed it belongs to this client's binding
}

func (t *Transport) init() {
	t.once.Do(func() {
		cfg := t.Config
		cfg.ExtraSettings = append(append([]http2.Setting(nil), cfg.ExtraSettings...), http2.Setting{ID: SettingSMig, Val: Version})
		cfg.OnSettings = t.onSettings
		cfg.OnExtensionFrame = t.onFrame
		t.h2t = &h2.Transport{TLSClientConfig: t.TLSClientConfig, AllowHTTP: t.AllowHTTP, DialContext: t.DialContext, Config: cfg}
		t.origins = map[string]*origin{}
		t.conns = map[*h2.Conn]*cconn{}
		t.poolChanged = make(chan struct{})
	})
}

// poolChangedLocked wakes the waiters for a change of the pools.
func (t *Transport) poolChangedLocked() {
	close(t.poolChanged)
	t.poolChanged = make(chan struct{})
}

func (t *Transport) logf(format string, args ...any) {
	if t.Logf != nil {
		t.Logf(format, args...)
	}
}

// RoundTrip sends req on its origin's primary connection.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	scheme := req.URL.Scheme
	if scheme == "http" && !t.AllowHTTP {
		return nil, fmt.Errorf("smig: http:// URL %s needs AllowHTTP (h2c)", req.URL)
	}
	addr := req.URL.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		port := "443"
		if scheme == "http" {
			port = "80"
		}
		addr = net.JoinHostPort(req.URL.Hostname(), port)
	}
	o, pc, err := t.primary(req.Context(), addr, scheme)
	if err != nil {
		return nil, err
	}
	t.tidy(o)
	res, err := pc.cc.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if t.Policy.ClientMigrate(res.ContentLength) && negotiated(pc.cc.Conn()) {
		if st := h2.StreamOf(res); st != nil {
			go t.askMigration(o, pc, st)
		}
	}
	return res, nil
}

// primary returns the origin's live primary connection, dialing it once.
func (t *Transport) primary(ctx context.Context, addr, scheme string) (*origin, *cconn, error) {
	key := scheme + "://" + addr
	t.mu.Lock()
	for {
		o := t.origins[key]
		if o == nil {
			o = &origin{addr: addr, scheme: scheme, pooled: map[int]*cconn{}, pool: NewPool(t.Pool),
				markers: map[linkKey]*h2.Stream{}, openings: map[linkKey]*h2.Stream{}, openedFrom: map[linkKey]CID{}, gone: map[CID]time.Time{}}
			if scheme == "https" {
				var shared tls.ClientSessionCache
				if t.TLSClientConfig != nil {
					shared = t.TLSClientConfig.ClientSessionCache
				}
				o.sessions = newSessionCache(shared)
			}
			t.origins[key] = o
		}
		if o.primary != nil && o.primary.cc.Conn().Err() == nil {
			t.mu.Unlock()
			return o, o.primary, nil
		}
		if o.dialing != nil {
			ch := o.dialing
			t.mu.Unlock()
			<-ch
			t.mu.Lock()
			if o.dialErr != nil {
				err := o.dialErr
				t.mu.Unlock()
				return nil, nil, err
			}
			continue
		}
		o.dialing = make(chan struct{})
		if t.PoolDial != nil && o.early == nil {
			o.early = t.dialEarly(addr)
		}
		t.mu.Unlock()
		c, err := t.dial(ctx, o, 0)
		t.mu.Lock()
		o.dialErr = err
		close(o.dialing)
		o.dialing = nil
		if err != nil {
			t.mu.Unlock()
			return nil, nil, err
		}
		o.primary = c
	}
}

// dial opens one connection of o and registers it before any frame of it
// can be handled (the hooks take t.mu).
func (t *Transport) dial(ctx context.Context, o *origin, id int) (*cconn, error) {
	nc, err := t.dialNet(ctx, o, id)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cc, err := t.h2t.NewClientConn(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := &cconn{o: o, id: id, cc: cc}
	t.conns[cc.Conn()] = c
	t.stats.ConnsOpened.Add(1)
	go func() {
		<-cc.Conn().Done()
		t.mu.Lock()
		delete(t.conns, cc.Conn())
		if id != 0 {
			delete(o.pooled, id)
			o.pool.Gone(id)
		}
		lost := t.goneLocked(o, c.cid)
		t.mu.Unlock()
		for _, st := range lost {
			st.Fail(http2.ErrCodeCancel, fmt.Errorf("%w: connection %v ended in the middle of the move", ErrMigrationLost, c.cid))
		}
	}()
	return c, nil
}

// goneLocked records that connection cid of o ended and returns the parked
// halves that can no longer meet theirs: markers waiting for a
// continuation on it, and continuations of streams of it whose marker did
// not come. (Continuations parked on it failed with it.)
func (t *Transport) goneLocked(o *origin, cid CID) []*h2.Stream {
	if cid.IsZero() {
		return nil
	}
	now := time.Now()
	for c, at := range o.gone {
		if now.Sub(at) > linkTimeout {
			delete(o.gone, c)
		}
	}
	o.gone[cid] = now
	var lost []*h2.Stream
	for k, st := range o.markers {
		if k.cid == cid {
			lost = append(lost, st)
			delete(o.markers, k)
		}
	}
	for k, st := range o.openings {
		if k.cid == cid || o.openedFrom[k] == cid {
			if k.cid != cid {
				lost = append(lost, st)
			}
			delete(o.openings, k)
			delete(o.openedFrom, k)
		}
	}
	return lost
}

// dialNet connects; over TLS a pooled connection resumes the primary's
// session (so it waits for the primary's first ticket) or fails.
func (t *Transport) dialNet(ctx context.Context, o *origin, id int) (net.Conn, error) {
	pooled := id != 0
	if pooled && o.scheme == "https" {
		wait := time.NewTimer(ticketWait)
		defer wait.Stop()
		select {
		case <-o.sessions.ready:
		case <-wait.C:
			return nil, fmt.Errorf("smig: %s: %w within %v", o.addr, errNoTicket, ticketWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	}
	if pooled && t.PoolDial != nil {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if id == 1 {
				return o.early.take(ctx)
			}
			return t.PoolDial(ctx, id, network, addr)
		}
	}
	nc, err := dial(ctx, "tcp", o.addr)
	if err != nil || o.scheme != "https" {
		return nc, err
	}
	cfg := &tls.Config{}
	if t.TLSClientConfig != nil {
		cfg = t.TLSClientConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(o.addr)
	}
	cfg.NextProtos = []string{"h2"}
	cfg.ClientSessionCache = o.sessions
	if pooled {
		cfg.ClientSessionCache = readOnlyCache{o.sessions}
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("smig: TLS handshake with %s: %w", o.addr, err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
		tc.Close()
		return nil, fmt.Errorf("smig: %s did not negotiate h2 (got %q)", o.addr, p)
	}
	if pooled && !tc.ConnectionState().DidResume {
		tc.Close()
		return nil, fmt.Errorf("smig: %s: %w", o.addr, errNotResumed)
	}
	return tc, nil
}

// earlyConn is a pooled connection's TCP connection opened ahead of need.
type earlyConn struct {
	done  chan struct{} // closed when the dial ended
	nc    net.Conn
	err   error
	mu    sync.Mutex
	taken bool
}

// dialEarly opens PoolDial's connection 1 to addr now; one that is not
// taken within ticketWait (no SMig server, no ticket) is closed.
func (t *Transport) dialEarly(addr string) *earlyConn {
	e := &earlyConn{done: make(chan struct{})}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ticketWait)
		e.nc, e.err = t.PoolDial(ctx, 1, "tcp", addr)
		cancel()
		close(e.done)
	}()
	time.AfterFunc(ticketWait, func() {
		<-e.done
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.taken && e.nc != nil {
			e.nc.Close()
		}
		e.taken = true
	})
	return e
}

// take returns the early connection, once.
func (e *earlyConn) take(ctx context.Context) (net.Conn, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.taken {
		return nil, errors.New("smig: the early pooled connection was closed unused")
	}
	e.taken = true
	return e.nc, e.err
}

// tidy updates o's pool as the origin is used: idle connections count as
// idle from now (expire closes them once unused for IdleTimeout), and it
// opens what the pool lacks (extra more), once the server's binding token
// is known.
func (t *Transport) tidy(o *origin, extra ...int) {
	now := time.Now()
	t.mu.Lock()
	if o.token.IsZero() {
		t.mu.Unlock()
		return
	}
	t.markLocked(o, now)
	o.pool.Touch(now)
	if o.expiry == nil {
		o.expiry = time.AfterFunc(o.pool.IdleTimeout(), func() { t.expire(o) })
	} else {
		o.expiry.Reset(o.pool.IdleTimeout())
	}
	more := 0
	for _, e := range extra {
		more += e
	}
	n := o.pool.ToOpen(more)
	ids := make([]int, n)
	for i := range ids {
		o.nextID++
		ids[i] = o.nextID
	}
	t.mu.Unlock()
	for _, id := range ids {
		go func() {
			c, err := t.dial(context.Background(), o, id)
			t.mu.Lock()
			defer t.mu.Unlock()
			if err != nil {
				o.pool.OpenFailed()
				t.logf("smig: opening pooled connection to %s: %v", o.addr, err)
				return
			}
			o.pooled[id] = c
			o.pool.Opened(id, time.Now())
			t.poolChangedLocked() // it may have been bound already
		}()
	}
}

// markLocked tells o's pool which pooled connections carry a stream.
func (t *Transport) markLocked(o *origin, now time.Time) {
	for id, c := range o.pooled {
		if c.cc.Conn().ActiveStreams() > 0 {
			o.pool.Busy(id)
		} else {
			o.pool.Idle(id, now)
		}
	}
}

// expire closes o's pooled connections unused for IdleTimeout and checks
// again later while some are left.
func (t *Transport) expire(o *origin) {
	now := time.Now()
	t.mu.Lock()
	t.markLocked(o, now)
	var expired []*cconn
	for _, id := range o.pool.Expired(now) {
		expired = append(expired, o.pooled[id])
		delete(o.pooled, id)
	}
	if len(o.pooled) > 0 {
		o.expiry.Reset(o.pool.IdleTimeout())
	}
	t.mu.Unlock()
	for _, c := range expired {
		if c != nil {
			c.cc.Conn().GoAway()
		}
	}
}

func (t *Transport) lookup(c *h2.Conn) *cconn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[c]
}

// onSettings presents the binding token on a pooled connection.
func (t *Transport) onSettings(c *h2.Conn) {
	cc := t.lookup(c)
	if cc == nil || !negotiated(c) {
		return
	}
	t.mu.Lock()
	tok := cc.o.token
	t.mu.Unlock()
	if cc.id != 0 && !tok.IsZero() {
		c.WriteExtensionFrame(FrameConnectionID, 0, 0, ConnectionID{Token: tok}.Append(nil))
	}
}

func (t *Transport) onFrame(c *h2.Conn, f *http2.UnknownFrame) {
	cc := t.lookup(c)
	if cc == nil || !negotiated(c) || f.Type != FrameMigration && f.Type != FrameConnectionID {
		return
	}
	if f.Type == FrameConnectionID {
		cf, err := ParseConnectionID(f.Flags, f.StreamID, f.Payload())
		if err != nil {
			t.stats.BadFrames.Add(1)
			t.logf("%v", err)
			return
		}
		t.mu.Lock()
		o := cc.o
		cc.cid = cf.CID
		first := false
		var stale []*cconn
		switch {
		case cc.id == 0 && !cf.Ack() && cf.Token != o.token:
			// A new primary (the first, or one after the old died, perhaps
			// with its server): its token is the origin's binding now, and
			// pooled connections of the old one can never take its streams.
			o.token, cc.bound, first = cf.Token, true, true
			for id, p := range o.pooled {
				stale = append(stale, p)
				delete(o.pooled, id)
				o.pool.Gone(id)
			}
		case cf.Ack() && cf.Token == o.token:
			cc.bound = true
		}
		t.poolChangedLocked()
		t.mu.Unlock()
		for _, p := range stale {
			p.cc.Conn().GoAway()
		}
		if first {
			t.tidy(o) // open the idle pool now that connections can be bound
		}
		return
	}
	m, err := ParseMigration(f.Flags, f.StreamID, f.Payload())
	if err != nil {
		t.stats.BadFrames.Add(1)
		t.logf("%v", err)
		return
	}
	switch {
	case m.StreamID == 0:
		t.tidy(cc.o, 1) // the server wants a connection to migrate to
	case m.EndStream():
		t.onMarker(cc, m)
	case m.Ack():
		t.stats.Refused.Add(1)
		t.logf("smig: server refused migrating stream %d to connection %v", m.StreamID, m.CID)
	default:
		t.onOpening(cc, m)
	}
}

// connByCID finds a bound connection of o; the caller holds t.mu.
func (o *origin) connByCID(cid CID) *cconn {
	if o.primary != nil && o.primary.cid == cid && o.primary.bound {
		return o.primary
	}
	for _, c := range o.pooled {
		if c.cid == cid && c.bound {
			return c
		}
	}
	return nil
}

// onMarker: the source part of stream m.StreamID ended on cc; the rest
// arrives as stream m.Stream on connection m.CID.
func (t *Transport) onMarker(cc *cconn, m Migration) {
	src := cc.cc.Conn().StreamByID(m.StreamID)
	if src == nil || m.CID == cc.cid {
		t.stats.BadFrames.Add(1)
		t.logf("smig: migration marker for unknown stream %d or to its own connection", m.StreamID)
		return
	}
	key := linkKey{m.CID, m.Stream}
	t.mu.Lock()
	_, gone := cc.o.gone[m.CID]
	t.mu.Unlock()
	if gone {
		// The server picked a connection we had closed (its GOAWAY crossed
		// the migration, SMig spec section 6): fail at once, not after
		// linkTimeout, so the rest is asked for again.
		src.Fail(http2.ErrCodeCancel, fmt.Errorf("%w: stream %d moved to connection %v, which had closed", ErrMigrationLost, m.StreamID, m.CID))
		return
	}
	if next := t.meet(key, src, cc.o.markers, cc.o.openings); next != nil {
		t.link(src, next)
		return
	}
	time.AfterFunc(linkTimeout, func() {
		t.mu.Lock()
		stale := cc.o.markers[key] == src
		delete(cc.o.markers, key)
		t.mu.Unlock()
		if stale {
			t.stats.BadFrames.Add(1)
			t.logf("smig: stream %d migrated to connection %v, which never continued it", m.StreamID, m.CID)
			src.Reset(http2.ErrCodeProtocol)
		}
	})
}

// onOpening: stream m.StreamID on cc continues stream m.Stream of m.CID.
func (t *Transport) onOpening(cc *cconn, m Migration) {
	t.mu.Lock()
	srcConn := cc.o.connByCID(m.CID)
	ok := cc.bound && srcConn != nil && srcConn != cc
	t.mu.Unlock()
	next, err := cc.cc.Conn().AcceptMigratedStream(m.StreamID)
	if err != nil || !ok {
		t.stats.BadFrames.Add(1)
		t.logf("smig: migrated stream %d from connection %v refused: bound=%v known=%v %v", m.StreamID, m.CID, cc.bound, srcConn != nil, err)
		if next != nil {
			next.Reset(http2.ErrCodeRefusedStream)
		}
		if errors.Is(err, h2.ErrConnClosed) {
			// We closed cc (GOAWAY) as the server moved a stream to it: its
			// marker, parked or to come, will not meet a continuation.
			t.mu.Lock()
			cc.o.gone[cc.cid] = time.Now()
			src := cc.o.markers[linkKey{cc.cid, m.StreamID}]
			delete(cc.o.markers, linkKey{cc.cid, m.StreamID})
			t.mu.Unlock()
			if src != nil {
				src.Fail(http2.ErrCodeCancel, fmt.Errorf("%w: stream %d moved to connection %v, which had closed", ErrMigrationLost, src.ID(), cc.cid))
			}
		}
		return
	}
	key := linkKey{cc.cid, m.StreamID}
	src := t.meet(key, next, cc.o.openings, cc.o.markers)
	if src != nil {
		t.link(src, next)
		return
	}
	t.mu.Lock()
	cc.o.openedFrom[key] = m.CID
	t.mu.Unlock()
	// A continuation whose marker never comes holds its connection busy
	// and the server's copy blocked: drop it after linkTimeout.
	time.AfterFunc(linkTimeout, func() {
		t.mu.Lock()
		stale := cc.o.openings[key] == next
		delete(cc.o.openings, key)
		delete(cc.o.openedFrom, key)
		t.mu.Unlock()
		if stale {
			t.stats.BadFrames.Add(1)
			t.logf("smig: stream %d continued stream %d of connection %v, whose marker never came", m.StreamID, m.Stream, m.CID)
			next.Reset(http2.ErrCodeCancel)
		}
	})
}

// meet pairs the two halves of a migration, which may arrive in either
// order: it returns the other half if theirs holds it, else parks s in mine.
func (t *Transport) meet(key linkKey, s *h2.Stream, mine, theirs map[linkKey]*h2.Stream) *h2.Stream {
	t.mu.Lock()
	defer t.mu.Unlock()
	other := theirs[key]
	if other == nil {
		mine[key] = s
	}
	delete(theirs, key)
	if other != nil {
		for _, o := range t.origins {
			delete(o.openedFrom, key)
		}
	}
	return other
}

func (t *Transport) link(src, next *h2.Stream) {
	if err := src.ContinueOn(next); err != nil {
		t.logf("smig: %v", err)
		next.Reset(http2.ErrCodeCancel)
		return
	}
	t.stats.Migrated.Add(1)
}

// askMigration (MigCP) asks the server to move st to an idle bound pooled
// connection, opening one first if there is none.
func (t *Transport) askMigration(o *origin, pc *cconn, st *h2.Stream) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dst, err := t.awaitIdleBound(ctx, o, func() { t.tidy(o, 1) })
	if err != nil {
		t.logf("smig: no pooled connection to %s became ready for stream %d", o.addr, st.ID())
		return
	}
	t.stats.Asked.Add(1)
	pc.cc.Conn().WriteExtensionFrame(FrameMigration, 0, st.ID(), Migration{CID: dst.cid}.Append(nil))
}

// awaitIdleBound returns a pooled connection of o (any origin if o is nil)
// that is bound and carries no stream, waiting for one to be bound until
// ctx ends; none is called once if there is none at first.
func (t *Transport) awaitIdleBound(ctx context.Context, o *origin, none func()) (*cconn, error) {
	t.init()
	for first := true; ; first = false {
		t.mu.Lock()
		dst := t.idleBoundLocked(o)
		changed := t.poolChanged
		t.mu.Unlock()
		if dst != nil {
			return dst, nil
		}
		if first && none != nil {
			none()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (t *Transport) idleBoundLocked(o *origin) *cconn {
	for _, oo := range t.origins {
		if o != nil && oo != o {
			continue
		}
		for _, c := range oo.pooled {
			if c.bound && c.cc.Conn().ActiveStreams() == 0 {
				return c
			}
		}
	}
	return nil
}

// Conns returns how many connections the transport has open per origin.
func (t *Transport) Conns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// CloseIdleConnections closes every connection with no open stream.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	var cs []*h2.Conn
	for c := range t.conns {
		cs = append(cs, c)
	}
	t.mu.Unlock()
	for _, c := range cs {
		if c.ActiveStreams() == 0 {
			c.GoAway()
		}
	}
}
