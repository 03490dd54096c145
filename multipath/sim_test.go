package multipath

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"sort"
	"time"
)

// The simulated network: per path, an HTTP/2 server whose application writes
// DATA frames round-robin into a TCP send buffer of SendBuf bytes, drained by
// the link at the path's rate, each frame arriving RTT/2 after it leaves.
// Requests, WINDOW_UPDATEs, RST_STREAM and PINGs take RTT/2 to reach the
// server. A PING ACK queues behind the buffered data, so PING RTTs carry the
// server's buffering delay as in MP-H2 §3.4.1. Under FlowControl the credit
// is modelled as the mph2 client gives it, except that a stream can be
// topped up from its request on, not only once its headers are in: each
// stream opens with Credit bytes of credit (at least one frame), and every
// DATA arrival or stream end tops the path's streams up to Credit past their
// received bytes, never past a stream's SetEnd; the client reports each
// grant with OnGrant. The server
// never writes past its credit; credit, once given, is never taken back, so
// bytes below it still come after a SetEnd.

const simFrame = 8 << 10 // DATA frame size, as nginx writes them

type rateStep struct {
	At  time.Duration
	Bps float64 // bytes per second from At on
}

type simPath struct {
	Rate     []rateStep
	RTT      time.Duration
	SendBuf  int64
	DownAt   time.Duration // 0: never
	NoRanges bool          // answer every request 200 with the whole body
	// Holds are TCP loss recoveries: frames that would reach the client
	// within one wait there until it ends, as bytes behind a lost segment
	// wait for its retransmission, while the server sends on.
	Holds []hold
}

type hold struct{ At, Len time.Duration }

// heldUntil is when a frame reaching the client at t is handed over.
func (sp simPath) heldUntil(t time.Duration) time.Duration {
	for _, h := range sp.Holds {
		if t >= h.At && t < h.At+h.Len {
			return h.At + h.Len
		}
	}
	return t
}

type simConfig struct {
	Size  int64
	Paths []simPath
	Sched Config // Paths is filled in
	Cut   int64  // if > 0, Cut(Cut) at start
	// SilentAfter, if > 0, is mph2's silence rule (liveness): a path whose
	// oldest unanswered PING and last frame are both this old is suspended
	// (OnPathSuspend), and resumed by the next frame that arrives on it.
	SilentAfter time.Duration
	// Trace, if set, sees every batch of actions as the client carries it
	// out (a test hook of this run, not a package variable other tests'
	// runs could read).
	Trace func(now time.Duration, s *Scheduler, acts []Action)
}

type simResult struct {
	Done      time.Duration
	Last      []time.Duration // last delivered byte per path
	Delivered []int64
	Wasted    []int64 // received but not delivered: tail bytes
	Requests  []int
	Idle      []time.Duration // gaps between DATA arrivals beyond 3 frame times
	Events    int
	// Prefix is, at each delivery, the contiguous prefix delivered (what
	// an application reading the object in order has) and all bytes
	// delivered.
	Prefix []prefixAt
}

type prefixAt struct {
	At     time.Duration
	N, Got int64
}

// prefixBy is the contiguous prefix at time t.
func (r simResult) prefixBy(t time.Duration) int64 {
	var n int64
	for _, p := range r.Prefix {
		if p.At > t {
			break
		}
		n = p.N
	}
	return n
}

func mbit(m float64) float64 { return m * 1e6 / 8 }

func steady(bps float64) []rateStep { return []rateStep{{0, bps}} }

type frame struct {
	kind   int // frameHeaders, frameData, framePong
	id     StreamID
	n      int64
	status int
	size   int64
	end    bool
	sentAt time.Duration // PING send time
}

const (
	frameHeaders = iota
	frameData
	framePong
)

type srvStream struct {
	id                StreamID
	next, end         int64
	first, credit     int64 // the body's first byte; bytes the client let it send
	status            int
	reset, headerSent bool
}

type server struct {
	cfg      simPath
	streams  []*srvStream
	rr       int
	fifo     []frame
	buffered int64
	busy     bool
	down     bool
}

type cliStream struct {
	path    PathID
	closed  bool
	first   int64 // object offset of the body's first byte, as requested
	recv    int64 // body bytes received
	granted int64 // credit given, in body bytes
	limit   int64 // credit SetEnd allows; -1 none
}

type event struct {
	at  time.Duration
	seq int
	f   func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type sim struct {
	cfg     simConfig
	s       *Scheduler
	q       eventQueue
	seq     int
	now     time.Duration
	srv     []*server
	cli     map[StreamID]*cliStream
	got     spanSet // bytes delivered, to check exactly-once
	res     simResult
	lastArr []time.Duration
	err     error
	check   bool
	// The silence rule's state per path (SilentAfter).
	lastFrame []time.Duration
	pings     [][]time.Duration // send times of the unanswered PINGs, oldest first
	silent    []bool
}

func (m *sim) at(d time.Duration, f func()) {
	m.seq++
	heap.Push(&m.q, event{at: d, seq: m.seq, f: f})
}

func (m *sim) fail(format string, a ...any) {
	if m.err == nil {
		m.err = fmt.Errorf("t=%v: %s", m.now, fmt.Sprintf(format, a...))
	}
}

// runSim downloads cfg.Size bytes over the simulated paths and returns what
// happened; the error reports any broken invariant.
func runSim(cfg simConfig, checkEveryEvent bool) (simResult, error) {
	return runSimWith(cfg, checkEveryEvent, nil)
}

// runSimWith is runSim that hands the scheduler to seen before the start.
func runSimWith(cfg simConfig, checkEveryEvent bool, seen func(*Scheduler)) (simResult, error) {
	sc := cfg.Sched
	sc.Paths = len(cfg.Paths)
	s, err := New(sc)
	if err != nil {
		return simResult{}, err
	}
	if seen != nil {
		seen(s)
	}
	n := len(cfg.Paths)
	m := &sim{cfg: cfg, s: s, cli: map[StreamID]*cliStream{}, check: checkEveryEvent,
		lastArr: make([]time.Duration, n), lastFrame: make([]time.Duration, n), pings: make([][]time.Duration, n), silent: make([]bool, n)}
	m.res = simResult{Done: -1, Last: make([]time.Duration, n), Delivered: make([]int64, n),
		Wasted: make([]int64, n), Requests: make([]int, n), Idle: make([]time.Duration, n)}
	// Start first, so every later state is one the scheduler has seen.
	m.at(0, func() {
		m.apply(s.OnStart(m.clock()))
		if cfg.Cut > 0 {
			m.apply(s.Cut(m.clock(), cfg.Cut))
		}
	})
	for i, pc := range cfg.Paths {
		if !slices.IsSortedFunc(pc.Rate, func(a, b rateStep) int { return cmp.Compare(a.At, b.At) }) {
			return simResult{}, fmt.Errorf("path %d: rate steps out of time order", i)
		}
		m.srv = append(m.srv, &server{cfg: pc})
		p := PathID(i)
		m.at(0, func() { m.ping(p) })
		if pc.DownAt > 0 {
			m.at(pc.DownAt, func() { m.pathDown(p) })
		}
	}
	for m.q.Len() > 0 && m.err == nil && m.res.Done < 0 {
		e := heap.Pop(&m.q).(event)
		m.now = e.at
		if m.now > 10*time.Minute || m.res.Events > 5_000_000 {
			m.fail("no completion after %d events", m.res.Events)
			break
		}
		m.res.Events++
		e.f()
		if m.check && m.err == nil {
			if err := s.check(); err != nil {
				m.fail("invariant: %v", err)
			}
		}
	}
	if m.err == nil && m.res.Done >= 0 && !s.Finished() {
		m.fail("Done given but Finished() is false")
	}
	if m.err == nil && m.res.Done < 0 {
		m.fail("simulation ended without Done (delivered %d of %d)", m.got.total(), s.Size())
	}
	// Let the last resets reach the servers: a stream left open and blocked
	// by flow control would hold a server's stream slot for ever.
	for m.q.Len() > 0 && m.err == nil {
		e := heap.Pop(&m.q).(event)
		m.now = e.at
		e.f()
	}
	for p, sv := range m.srv {
		for _, st := range sv.streams {
			if !sv.down && !st.reset && m.err == nil {
				m.fail("path %d: stream %d left open at %d of [%d) (credit to %d)", p, st.id, st.next, st.end, st.first+st.credit)
			}
		}
	}
	for i := range cfg.Paths {
		if b, ok := sc.budgetOf(i); ok && m.err == nil && m.res.Delivered[i]+m.res.Wasted[i] > b {
			m.fail("path %d received %d bytes (%d delivered, %d tail), over its budget %d", i, m.res.Delivered[i]+m.res.Wasted[i], m.res.Delivered[i], m.res.Wasted[i], b)
		}
		st := s.Stats(PathID(i))
		m.res.Requests[i] = st.Requests
		if st.Delivered > 0 {
			m.res.Last[i] = st.LastData.Sub(epoch)
		}
	}
	return m.res, m.err
}

var epoch = time.Unix(0, 0)

// budgetOf is the bytes path i may receive in this download, its budget
// less what it spent before; false if it has no budget.
func (c Config) budgetOf(i int) (int64, bool) {
	if c.Budget == nil || c.Budget[i] == 0 {
		return 0, false
	}
	if c.Spent != nil {
		return c.Budget[i] - c.Spent[i], true
	}
	return c.Budget[i], true
}

func (m *sim) clock() time.Time { return epoch.Add(m.now) }

func (m *sim) half(p PathID) time.Duration { return m.srv[p].cfg.RTT / 2 }

// rate is path p's rate now: its last step at or before now (the first
// step's before it). Steps are in time order (runSimWith checks), so a
// search: a trace's steps are thousands (TestInteractiveOutageTraces).
func (m *sim) rate(p PathID) float64 {
	r := m.srv[p].cfg.Rate
	i := sort.Search(len(r), func(i int) bool { return r[i].At > m.now })
	return r[max(i-1, 0)].Bps
}

// apply carries out the scheduler's actions as the client would.
func (m *sim) apply(acts []Action) {
	if m.cfg.Trace != nil {
		m.cfg.Trace(m.now, m.s, acts)
	}
	for _, a := range acts {
		switch a.Kind {
		case Request:
			cs := &cliStream{path: a.Path, first: a.Start, limit: -1, granted: simAutoWindow}
			if m.flowControl() {
				cs.granted = m.s.Credit(m.clock(), a.Stream)
				if a.End >= 0 {
					cs.granted = min(cs.granted, a.End-a.Start)
				}
				cs.granted = max(cs.granted, simFrame)
				m.s.OnGrant(a.Stream, a.Start+cs.granted)
			}
			m.cli[a.Stream] = cs
			a, credit := a, cs.granted
			m.toServer(a.Path, func(sv *server) { m.serverRequest(sv, a, credit) })
		case SetEnd:
			cs := m.cli[a.Stream]
			cs.limit = a.End - a.Start
			m.grant(a.Stream)
		case Reset:
			cs := m.cli[a.Stream]
			cs.closed = true
			// The credit given before the RST_STREAM is all the server may send.
			m.s.OnResetBound(a.Stream, cs.first+cs.granted)
			a := a
			m.toServer(cs.path, func(sv *server) {
				for _, st := range sv.streams {
					if st.id == a.Stream {
						st.reset = true
					}
				}
			})
		case Deliver:
			var fresh int64
			m.got.gaps(a.Start, a.End, func(x, y int64) { fresh += y - x })
			if fresh != a.End-a.Start || a.Start < a.From {
				m.fail("%v delivers bytes already delivered (have %v)", a, m.got)
			}
			m.got.add(a.Start, a.End)
			m.res.Delivered[a.Path] += a.End - a.Start
			pre := prefixAt{At: m.now, Got: m.got.total()}
			if m.got[0].a == 0 {
				pre.N = m.got[0].b
			}
			m.res.Prefix = append(m.res.Prefix, pre)
		case Done:
			if !m.got.covers(0, m.s.Size()) || m.got.total() != m.s.Size() {
				m.fail("Done with delivered %v of %d", m.got, m.s.Size())
			}
			m.res.Done = m.now
		}
	}
}

func (m *sim) toServer(p PathID, f func(*server)) {
	sv := m.srv[p]
	m.at(m.now+m.half(p), func() {
		if !sv.down {
			f(sv)
		}
	})
}

// flowControl: without it (ResetStream) the client's HTTP/2 connection
// keeps each stream's window at simAutoWindow past its received bytes, as
// mph2's does, and tells the scheduler nothing of it.
func (m *sim) flowControl() bool { return m.cfg.Sched.EndAdjust == FlowControl }

// simAutoWindow is the stream window of h2's client (Config.InitialWindowSize's
// default), which mph2 keeps under ResetStream.
const simAutoWindow = 1 << 20

func (m *sim) serverRequest(sv *server, a Action, credit int64) {
	st := &srvStream{id: a.Stream, next: a.Start, end: a.End, status: 206, credit: credit}
	if a.End < 0 || sv.cfg.NoRanges {
		st.next, st.end, st.status = 0, m.cfg.Size, 200
	}
	st.first = st.next
	sv.streams = append(sv.streams, st)
	m.fill(m.cli[a.Stream].path)
}

// grantPath tops up the credit of path p's streams in request order, as
// Credit shares the path's among them.
func (m *sim) grantPath(p PathID) {
	var ids []StreamID
	for id, cs := range m.cli {
		if cs.path == p {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		m.grant(id)
	}
}

// grant tops up a stream's credit: under FlowControl to Credit past its
// received bytes, never beyond its SetEnd, telling the server (a
// WINDOW_UPDATE) and the scheduler; under ResetStream to simAutoWindow past
// them, telling the server only.
func (m *sim) grant(id StreamID) {
	cs := m.cli[id]
	if cs.closed {
		return
	}
	target := cs.recv + simAutoWindow
	if m.flowControl() {
		target = cs.recv + m.s.Credit(m.clock(), id)
		if cs.limit >= 0 {
			target = min(target, cs.limit)
		}
	}
	if target <= cs.granted {
		return
	}
	cs.granted = target
	if m.flowControl() {
		m.s.OnGrant(id, cs.first+target)
	}
	m.toServer(cs.path, func(sv *server) {
		for _, st := range sv.streams {
			if st.id == id {
				st.credit = max(st.credit, target)
			}
		}
		m.fill(cs.path)
	})
}

// fill lets the server application write into its send buffer.
func (m *sim) fill(p PathID) {
	sv := m.srv[p]
	for sv.buffered < sv.cfg.SendBuf && len(sv.streams) > 0 {
		wrote := false
		for k := 0; k < len(sv.streams); k++ {
			st := sv.streams[(sv.rr+k)%len(sv.streams)]
			if st.reset {
				continue
			}
			if !st.headerSent {
				st.headerSent = true
				sv.fifo = append(sv.fifo, frame{kind: frameHeaders, id: st.id, status: st.status, size: m.cfg.Size})
			}
			n := min(int64(simFrame), min(st.end, st.first+st.credit)-st.next)
			if n <= 0 && st.next < st.end {
				continue // blocked by flow control
			}
			st.next += n
			sv.fifo = append(sv.fifo, frame{kind: frameData, id: st.id, n: n, end: st.next >= st.end})
			sv.buffered += n
			sv.rr = (sv.rr + k + 1) % len(sv.streams)
			wrote = true
			break
		}
		// Drop finished and reset streams.
		live := sv.streams[:0]
		for _, st := range sv.streams {
			if !st.reset && st.next < st.end {
				live = append(live, st)
			}
		}
		sv.streams = live
		if !wrote {
			break
		}
	}
	m.kick(p)
}

// kick starts the link on the next buffered frame.
func (m *sim) kick(p PathID) {
	sv := m.srv[p]
	if sv.busy || len(sv.fifo) == 0 || sv.down {
		return
	}
	if m.rate(p) == 0 {
		// An outage: the link sends again at the next step with a rate.
		for _, st := range sv.cfg.Rate {
			if st.At > m.now && st.Bps > 0 {
				sv.busy = true
				m.at(st.At, func() { sv.busy = false; m.kick(p) })
				return
			}
		}
		return
	}
	f := sv.fifo[0]
	sv.fifo = sv.fifo[1:]
	sv.busy = true
	wire := f.n + 9 // frame header
	ser := time.Duration(float64(wire) / m.rate(p) * 1e9)
	m.at(m.now+ser, func() {
		sv.busy = false
		sv.buffered -= f.n
		m.at(sv.cfg.heldUntil(m.now+m.half(p)), func() { m.arrive(p, f) })
		m.fill(p)
		m.kick(p)
	})
}

func (m *sim) arrive(p PathID, f frame) {
	if m.srv[p].down {
		return
	}
	if m.res.Done >= 0 {
		// Tail bytes still arriving after the download completed.
		m.res.Wasted[p] += f.n
		return
	}
	now := m.clock()
	m.heard(p, f)
	switch f.kind {
	case framePong:
		m.apply(m.s.OnRTT(now, p, m.now-f.sentAt))
		return
	case frameHeaders:
		if m.cli[f.id].closed {
			return
		}
		if f.status == 200 {
			m.cli[f.id].first = 0
		}
		acts, err := m.s.OnHeaders(now, f.id, f.status, f.size)
		if err != nil {
			m.fail("OnHeaders: %v", err)
			return
		}
		m.apply(acts)
		m.grant(f.id)
		return
	}
	if gap := m.now - m.lastArr[p]; m.lastArr[p] > 0 && gap > 3*time.Duration(float64(simFrame)/m.rate(p)*1e9) {
		m.res.Idle[p] += gap
	}
	m.lastArr[p] = m.now
	before := m.res.Delivered[p]
	if cs := m.cli[f.id]; !cs.closed {
		cs.recv += f.n
		m.apply(m.s.OnData(now, f.id, f.n))
		if f.end && m.res.Done < 0 {
			m.apply(m.s.OnStreamEnd(now, f.id))
		}
		m.grantPath(p)
	}
	m.res.Wasted[p] += f.n - (m.res.Delivered[p] - before)
}

func (m *sim) ping(p PathID) {
	if m.srv[p].down || m.res.Done >= 0 {
		return
	}
	sent := m.now
	m.checkSilent(p)
	m.pings[p] = append(m.pings[p], sent)
	m.toServer(p, func(sv *server) {
		sv.fifo = append(sv.fifo, frame{kind: framePong, sentAt: sent})
		m.kick(p)
	})
	m.at(m.now+100*time.Millisecond, func() { m.ping(p) })
}

// heard notes a frame arriving on path p for the silence rule: it resumes a
// suspended path, as mph2's watcher does on any frame.
func (m *sim) heard(p PathID, f frame) {
	m.lastFrame[p] = m.now
	if f.kind == framePong && len(m.pings[p]) > 0 {
		m.pings[p] = m.pings[p][1:]
	}
	if m.silent[p] {
		m.silent[p] = false
		m.pathEvent("OnPathResume", m.s.OnPathResume, p)
	}
}

// checkSilent suspends path p, at a PING tick as mph2's watcher does, once
// its oldest unanswered PING and its last frame are SilentAfter old.
func (m *sim) checkSilent(p PathID) {
	t := m.cfg.SilentAfter
	if t <= 0 || m.silent[p] || len(m.pings[p]) == 0 || m.now-m.pings[p][0] < t || m.now-m.lastFrame[p] < t {
		return
	}
	m.silent[p] = true
	m.pathEvent("OnPathSuspend", m.s.OnPathSuspend, p)
}

// pathEvent reports an event of path p to the scheduler and carries out
// what it decides.
func (m *sim) pathEvent(name string, ev func(time.Time, PathID) ([]Action, error), p PathID) {
	acts, err := ev(m.clock(), p)
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	m.apply(acts)
}

func (m *sim) pathDown(p PathID) {
	if m.res.Done >= 0 {
		return
	}
	sv := m.srv[p]
	sv.down = true
	sv.fifo, sv.streams = nil, nil
	for _, cs := range m.cli {
		if cs.path == p {
			cs.closed = true
		}
	}
	m.pathEvent("OnPathDown", m.s.OnPathDown, p)
}

// simRand is a small seeded generator, so runs repeat exactly.
type simRand struct{ x uint64 }

func newSimRand(seed uint64) *simRand { return &simRand{x: seed*0x9E3779B97F4A7C15 + 1} }

func (r *simRand) next() uint64 {
	r.x ^= r.x << 13
	r.x ^= r.x >> 7
	r.x ^= r.x << 17
	return r.x
}

func (r *simRand) float() float64 { return float64(r.next()>>11) / (1 << 53) }

func (r *simRand) intn(n int) int { return int(r.next() % uint64(n)) }
