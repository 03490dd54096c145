package smig

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shunt-net/shunt/h2"
	"golang.org/x/net/http2"
)

// Server adds SMig to an h2.Server: use Config for its h2.Config and Wrap
// for its handler. Connections whose client does not announce SettingSMig
// are plain HTTP/2.
type Server struct {
	Policy Policy
	// Steer, if set, places each response of a client with several bound
	// connections (issue 19's server-side steering; it replaces Policy):
	// it is asked once the response's headers are written, and again on
	// each write while the client has one connection, with the request,
	// the response's header, the response's connection and the client's
	// connections (that one first). Returning another of them moves the
	// rest of the body there; the response's own keeps it; nil means the
	// connection it belongs on is not there yet: the body waits until the
	// client's connections change (at most SteerWait) and Steer is asked
	// again, and after SteerWait it stays, as do later responses on that
	// connection that would wait (a client on one path, say).
	Steer     func(r *http.Request, header http.Header, from *h2.Conn, conns []*h2.Conn) *h2.Conn
	SteerWait time.Duration
	// Logf reports refused migrations; nil means log.Printf.
	Logf func(format string, args ...any)

	mu       sync.Mutex
	byCID    map[CID]*sconn
	byConn   map[*h2.Conn]*sconn
	lineages lineages
	copying  int           // migrations whose body is still being copied
	copied   chan struct{} // closed when copying drops to 0
	// changed is closed (and replaced) when a connection joins a binding
	// or ends, to wake responses waiting for their client's connection.
	changed chan struct{}
	// onBound, if set (under mu), runs as soon as a connection has joined
	// a binding (from then on a migration target): a test moves a response
	// there at that very moment.
	onBound func()

	stats ServerStats
}

// ServerStats count what the server did.
type ServerStats struct {
	Migrations    atomic.Int64 // streams moved
	ClientAsked   atomic.Int64 // of which at the client's request
	Refused       atomic.Int64 // client requests refused (unknown or foreign CID, ...)
	BindRefused   atomic.Int64 // known tokens refused: the connection is not of the binding's TLS session lineage
	MovedBytes    atomic.Int64 // body bytes sent on destination connections
	ConnRequests  atomic.Int64 // "open a connection" requests sent
	ExtraFrameOut atomic.Int64 // SMig frames sent
	SteerWaits    atomic.Int64 // steered responses that waited for a connection of their client
}

// sconn is one SMig connection; token is its client's binding.
type sconn struct {
	c         *h2.Conn
	cid       CID
	token     Token
	lineage   lineage   // what the connection proves besides the token
	askedConn time.Time // last "open a connection" request on it
	// steerGaveUp: a steered response of it waited SteerWait in vain, so
	// its client opens no connection on that path: the others do not wait.
	steerGaveUp bool
}

const connRequestInterval = time.Second

// Stats returns the server's counters.
func (s *Server) Stats() *ServerStats { return &s.stats }

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

// Config returns base with SMig's setting and hooks added (existing hooks
// still run for frames that are not SMig's).
func (s *Server) Config(base h2.Config) h2.Config {
	cfg := base
	cfg.ExtraSettings = append(append([]http2.Setting(nil), base.ExtraSettings...), http2.Setting{ID: SettingSMig, Val: Version})
	prevSettings, prevFrame := base.OnSettings, base.OnExtensionFrame
	cfg.OnSettings = func(c *h2.Conn) {
		s.onSettings(c)
		if prevSettings != nil {
			prevSettings(c)
		}
	}
	cfg.OnExtensionFrame = func(c *h2.Conn, f *http2.UnknownFrame) {
		if !s.onFrame(c, f) && prevFrame != nil {
			prevFrame(c, f)
		}
	}
	return cfg
}

// negotiated reports whether the peer announced this version of SMig.
func negotiated(c *h2.Conn) bool {
	v, ok := c.PeerSetting(SettingSMig)
	return ok && v == Version
}

func (s *Server) onSettings(c *h2.Conn) {
	l := s.lineages.claim(c) // claimed even without SMig, to free the record
	if !negotiated(c) {
		return
	}
	sc := &sconn{c: c, cid: newCID(), token: newToken(), lineage: l}
	s.mu.Lock()
	if s.byCID == nil {
		s.byCID, s.byConn = map[CID]*sconn{}, map[*h2.Conn]*sconn{}
	}
	s.byCID[sc.cid], s.byConn[c] = sc, sc
	s.mu.Unlock()
	s.send(c, FrameConnectionID, 0, 0, ConnectionID{CID: sc.cid, Token: sc.token}.Append(nil))
	go func() {
		<-c.Done()
		s.mu.Lock()
		delete(s.byCID, sc.cid)
		delete(s.byConn, c)
		s.changedLocked()
		s.mu.Unlock()
	}()
}

func (s *Server) send(c *h2.Conn, t http2.FrameType, flags http2.Flags, id uint32, p []byte) {
	if c.WriteExtensionFrame(t, flags, id, p) == nil {
		s.stats.ExtraFrameOut.Add(1)
	}
}

// onFrame handles SMig frames; it reports whether f was one.
func (s *Server) onFrame(c *h2.Conn, f *http2.UnknownFrame) bool {
	if f.Type != FrameMigration && f.Type != FrameConnectionID {
		return false
	}
	s.mu.Lock()
	sc := s.byConn[c]
	s.mu.Unlock()
	if sc == nil {
		return true // not negotiated: ignore, as for any unknown frame
	}
	if f.Type == FrameConnectionID {
		cf, err := ParseConnectionID(f.Flags, f.StreamID, f.Payload())
		if err != nil {
			s.logf("%v", err)
			return true
		}
		s.bind(sc, cf.Token)
		return true
	}
	m, err := ParseMigration(f.Flags, f.StreamID, f.Payload())
	if err != nil {
		s.logf("%v", err)
		return true
	}
	if m.Flags != 0 || m.StreamID == 0 {
		return true // only requests flow from client to server
	}
	if err := s.clientRequest(sc, m); err != nil {
		s.stats.Refused.Add(1)
		s.logf("smig: refused migration of stream %d on %v to %v: %v", m.StreamID, sc.cid, m.CID, err)
		s.send(c, FrameMigration, FlagAck, m.StreamID, Migration{CID: m.CID}.Append(nil))
	}
	return true
}

// bind moves sc into the client binding named by token, if a live
// connection holds it and sc belongs to the same client (section 7), and
// confirms with CONNECTION_ID+ACK. Otherwise sc stays its own client.
func (s *Server) bind(sc *sconn, token Token) {
	s.mu.Lock()
	var holder *sconn
	for _, o := range s.byCID {
		if o != sc && o.token == token {
			holder = o
			break
		}
	}
	err := fmt.Errorf("unknown binding token")
	if holder != nil {
		if err = sc.lineage.sameClient(holder.lineage); err != nil {
			s.stats.BindRefused.Add(1)
		}
	}
	s.mu.Unlock()
	if err != nil {
		s.logf("smig: refused binding connection %v to a client: %v", sc.cid, err)
		return
	}
	// The ACK is queued before sc joins the binding: a response moved to sc
	// at once must not have its opening overtake the ACK, or the client,
	// not knowing sc bound yet, refuses it (1 of 30,232 downloads in a
	// 10-minute soak).
	s.send(sc.c, FrameConnectionID, FlagAck, 0, ConnectionID{CID: sc.cid, Token: token}.Append(nil))
	s.mu.Lock()
	sc.token = token
	s.changedLocked()
	hook := s.onBound
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
}

// changedLocked wakes the responses waiting for a client's connection.
func (s *Server) changedLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// connsChanged returns a channel closed at the next change of bindings.
func (s *Server) connsChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

func (s *Server) clientRequest(src *sconn, m Migration) error {
	s.mu.Lock()
	dst := s.byCID[m.CID]
	s.mu.Unlock()
	switch {
	case dst == nil:
		return fmt.Errorf("unknown connection id")
	case dst == src:
		return fmt.Errorf("destination is the source connection")
	case dst.tokenOf(s) != src.tokenOf(s):
		return fmt.Errorf("connection belongs to another client")
	}
	st := src.c.StreamByID(m.StreamID)
	if st == nil {
		return fmt.Errorf("no open stream %d", m.StreamID)
	}
	if err := s.migrate(src, dst, st, FlagAck); err != nil {
		return err
	}
	s.stats.ClientAsked.Add(1)
	return nil
}

func (sc *sconn) tokenOf(s *Server) Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sc.token
}

// migrate moves the unsent rest of st from src to dst: the opening frame on
// dst first, then the marker on src, then the body on dst.
func (s *Server) migrate(src, dst *sconn, st *h2.Stream, ack http2.Flags) error {
	sid := st.ID()
	d, err := dst.c.OpenMigratedStream(func(id uint32) h2.Frame {
		return h2.Frame{Type: FrameMigration, Payload: Migration{CID: src.cid, Stream: sid}.Append(nil)}
	})
	if err != nil {
		return err
	}
	marker := Migration{CID: dst.cid, Stream: d.ID()}
	tail, err := st.DetachSend(h2.Frame{Type: FrameMigration, Flags: FlagEndStream | ack, Payload: marker.Append(nil)})
	if err != nil {
		d.Reset(http2.ErrCodeCancel)
		return err
	}
	s.stats.Migrations.Add(1)
	s.stats.ExtraFrameOut.Add(2)
	s.mu.Lock()
	s.copying++
	s.mu.Unlock()
	go func() {
		n, _ := tail.CopyTo(d)
		s.stats.MovedBytes.Add(n)
		s.mu.Lock()
		if s.copying--; s.copying == 0 && s.copied != nil {
			close(s.copied)
			s.copied = nil
		}
		s.mu.Unlock()
	}()
	return nil
}

// WaitCopies waits until no migrated stream's body is still being copied
// to its new connection (so MovedBytes counts every migration so far), or
// ctx ends.
func (s *Server) WaitCopies(ctx context.Context) error {
	s.mu.Lock()
	if s.copying == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.copied == nil {
		s.copied = make(chan struct{})
	}
	done := s.copied
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// idleTarget returns an idle connection of src's client, or nil after
// asking the client (at most once a second) to open one.
func (s *Server) idleTarget(src *sconn) *sconn {
	s.mu.Lock()
	var cands []*sconn
	for _, o := range s.byCID {
		if o != src && o.token == src.token {
			cands = append(cands, o)
		}
	}
	s.mu.Unlock()
	for _, o := range cands {
		if o.c.ActiveStreams() == 0 {
			return o
		}
	}
	s.mu.Lock()
	ask := time.Since(src.askedConn) >= connRequestInterval
	if ask {
		src.askedConn = time.Now()
	}
	s.mu.Unlock()
	if ask {
		s.stats.ConnRequests.Add(1)
		s.send(src.c, FrameMigration, 0, 0, Migration{}.Append(nil))
	}
	return nil
}

// clientConns returns the connections of src's client, src's first.
func (s *Server) clientConns(src *sconn) []*sconn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*sconn{src}
	for _, o := range s.byCID {
		if o != src && o.token == src.token {
			out = append(out, o)
		}
	}
	return out
}

// Wrap applies the server policy (MigSW, MigSP) or Steer to h's responses.
func (s *Server) Wrap(h http.Handler) http.Handler {
	if !s.Policy.ServerSide() && s.Steer == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := h2.StreamFromContext(r.Context())
		if st == nil {
			h.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		src := s.byConn[st.Conn()]
		s.mu.Unlock()
		if src == nil {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&policyWriter{ResponseWriter: w, s: s, src: src, st: st, r: r}, r)
	})
}

// policyWriter watches a response and migrates it when the policy or
// Steer says so.
type policyWriter struct {
	http.ResponseWriter
	s           *Server
	src         *sconn
	st          *h2.Stream
	r           *http.Request
	wroteHeader bool
	done        bool // migrated, or tried and failed for good
}

// WriteHeader lets Steer place the response before its first body byte
// (a response without a body stays).
func (w *policyWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if w.wroteHeader || code < 200 {
		return
	}
	w.wroteHeader = true
	if code == http.StatusNoContent || code == http.StatusNotModified || w.r.Method == http.MethodHead {
		w.done = true
	}
	if w.s.Steer != nil && !w.done {
		w.steer()
	}
}

func (w *policyWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	switch {
	case err != nil || w.done:
	case w.s.Steer != nil:
		w.steer()
	default:
		w.maybeMigrate()
	}
	return n, err
}

// steer asks Steer where the response goes and moves it there. A client
// with one connection so far is asked again on the next write: its other
// paths' connections may bind while the body flows.
func (w *policyWriter) steer() {
	var deadline <-chan time.Time
	for {
		changed := w.s.connsChanged()
		conns := w.s.clientConns(w.src)
		hcs := make([]*h2.Conn, len(conns))
		for i, c := range conns {
			hcs[i] = c.c
		}
		to := w.s.Steer(w.r, w.Header(), w.src.c, hcs)
		if to != nil {
			if i := slices.Index(hcs, to); i > 0 {
				w.moveTo(conns[i])
			} else {
				w.done = len(conns) > 1
			}
			return
		}
		if deadline == nil {
			w.s.mu.Lock()
			gaveUp := w.src.steerGaveUp
			w.s.mu.Unlock()
			if w.s.SteerWait <= 0 || gaveUp {
				w.done = gaveUp
				return
			}
			w.s.stats.SteerWaits.Add(1)
			w.Flush() // the client has the headers while the body waits
			t := time.NewTimer(w.s.SteerWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-changed:
		case <-deadline:
			w.s.mu.Lock()
			w.src.steerGaveUp = true
			w.s.mu.Unlock()
			w.done = true
			return
		case <-w.r.Context().Done():
			w.done = true
			return
		}
	}
}

// moveTo migrates the response to dst, once: its HEADERS go out on the
// source first (the migration point is after them).
func (w *policyWriter) moveTo(dst *sconn) {
	w.Flush()
	if err := w.s.migrate(w.src, dst, w.st, 0); err != nil && err != h2.ErrNothingToMigrate {
		w.s.logf("smig: migrating stream %d: %v", w.st.ID(), err)
	}
	w.done = true
}

func (w *policyWriter) maybeMigrate() {
	cl := int64(-1)
	if v := w.Header().Get("Content-Length"); v != "" {
		fmt.Sscan(v, &cl)
	}
	if !w.s.Policy.ServerMigrate(cl, w.st.Sent()) {
		return
	}
	dst := w.s.idleTarget(w.src)
	if dst == nil {
		return // asked the client for a connection; try again on a later write
	}
	w.moveTo(dst)
}

func (w *policyWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *policyWriter) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

func (w *policyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
