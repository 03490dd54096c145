// Package multipath is MP-H2's client-side scheduler (MP-H2 §3): it splits
// one HTTP object into byte ranges fetched over several paths, each path one
// HTTP/2 connection carrying at most a couple of streams, so that all paths
// finish together (R1) with no idle gap between chunks (R2).
//
// The scheduler is pure decision logic. The caller feeds it events (response
// headers, DATA received, flow-control credit given, streams ended, PING RTT
// samples, paths lost), each with the time it happened, and carries out the
// Actions it returns: open a ranged request, move a stream's flow-control
// end, reset a stream, hand received bytes to the application, finish. It
// opens no socket, starts no goroutine and reads no clock, so a test drives
// it with a fake clock and a simulated network.
//
// The download is kept as a byte map of [0, size): bytes delivered to the
// application, bytes each open stream is still to deliver ([pos, end)), and
// orphaned bytes that no stream will deliver (their stream or path was lost)
// and that the next decision reassigns. Every byte is in exactly one of the
// three, so each is delivered exactly once.
package multipath

import (
	"fmt"
	"math"
	"time"

	"github.com/shunt-net/shunt/estimate"
)

// PathID names a path by its index in [0, Config.Paths); path 0 is the
// primary, which carries the first request when the size is unknown.
type PathID int

// StreamID names one request made by the scheduler. IDs start at 1 and are
// never reused; the caller maps them to its HTTP/2 stream IDs.
type StreamID int

// EndAdjust is how the scheduler stops a stream at a new byte-range end
// (MP-H2 §3.4.2).
type EndAdjust uint8

const (
	// FlowControl stops the server exactly at the new end by limiting the
	// stream's HTTP/2 flow-control window (SetEnd), so it emits no tail bytes;
	// the stream is reset once its last wanted byte has arrived.
	FlowControl EndAdjust = iota
	// ResetStream lets the server send on and resets the stream when its new
	// end arrives; the server's already buffered bytes still arrive as tail
	// bytes, which are discarded.
	ResetStream
)

func (e EndAdjust) String() string {
	switch e {
	case FlowControl:
		return "flow-control"
	case ResetStream:
		return "rst-stream"
	}
	return fmt.Sprintf("EndAdjust(%d)", uint8(e))
}

// Defaults from the paper.
const (
	DefaultDelta             = 50 * time.Millisecond // Algorithm 1's δ
	DefaultMaxStreamsPerPath = 2                     // one chunk in progress plus one pipelined
	DefaultMinChunk          = 16 << 10              // no new request for less than one DATA frame
	DefaultLeadMargin        = 32 << 10              // extra bytes ahead when announcing a lazy end
	// DefaultGrantLead is how long, beyond one unqueued round trip, the
	// flow-control credit ahead of the received bytes lets a path send: a
	// PING interval, the scheduler's tick, so the credit outlasts the gap
	// between two decisions.
	DefaultGrantLead = 100 * time.Millisecond
)

// Config describes one download. Zero values take the defaults, so the zero
// Config with Paths and Size set is MP-H2 as the paper evaluates it
// (pipelining on, flow-control end adjustment).
type Config struct {
	Paths int   // number of paths, >= 1
	Size  int64 // object size if the application knows it (+FS), else -1
	// Prior holds per-path estimates cached from earlier transfers
	// (+FS+BW/L), indexed by PathID; nil or zero entries mean unknown. If
	// every path has one, the first split uses Equation 1 instead of halves.
	Prior []estimate.Path
	// PriorAt is when each Prior was measured (nil or zero: just now).
	// Interactive probes a path whose prior is older than ProbeStale.
	PriorAt           []time.Time
	Delta             time.Duration // Algorithm 1's δ; default 50 ms
	MaxStreamsPerPath int           // default 2
	NoPipelining      bool          // request the next chunk only once the current one is complete
	EndAdjust         EndAdjust     // default FlowControl
	MinChunk          int64         // smallest chunk worth a request; default 16 KiB
	// LeadMargin is added to a path's bandwidth-delay product to decide when
	// a lazily cut stream must announce its end under flow control.
	LeadMargin int64
	// GrantLead bounds the flow-control credit a stream gets ahead of its
	// received bytes (see Ahead); default 100 ms.
	GrantLead  time.Duration
	Bandwidth  estimate.BandwidthConfig
	RTTSamples int // PING samples averaged; default 5
	// Mode is how the paths are used (mode.go); the zero Mode is Aggregate.
	Mode Mode
	// HandoverAfter is how long the path in use may deliver nothing while
	// it has work before Handover moves on; default 1 s. In Aggregate it
	// is the floor of how long a path with work may be silent while
	// another path delivers before its ranges move (checkSilent).
	HandoverAfter time.Duration
	// Budget, if not nil, bounds the response bytes each path may receive,
	// indexed by PathID; 0 means no bound (budget.go).
	Budget []int64
	// Spent, if not nil, is what each budgeted path has used of its Budget
	// before this download (a budget shared by a client's downloads): its
	// room starts at Budget - Spent. Indexed by PathID.
	Spent []int64
	// InOrder is for an application that reads the object in order as it
	// arrives (a response streamed through a proxy): in Aggregate, the
	// object is handed out from its front in pieces of PieceTime of each
	// path's rate, pipelined, instead of one share per path, so the
	// contiguous prefix grows at about the paths' summed rate rather than
	// at one path's until that path's share is in. The end is balanced as
	// before (rebalance), so the paths still finish together.
	InOrder bool
}

// PieceTime is how long an in-order piece (Config.InOrder) lasts on its
// path: the prefix an application sees lags the bytes the paths delivered
// by about one piece per path, and a piece longer than a round trip leaves
// a pipelined path no gap between pieces.
const PieceTime = 250 * time.Millisecond

// Kind says what an Action asks the caller to do.
type Kind uint8

const (
	// Request: open Stream on Path, a GET for object bytes [Start, End), sent
	// as "Range: bytes=Start-(End-1)". End -1 asks for the whole object of
	// unknown size: send no Range header, or "bytes=0-".
	Request Kind = iota + 1
	// SetEnd: let the server send Stream's bytes only below object offset End,
	// by flow control: the stream's total window credit must be End-Start,
	// where Start is the object offset of the stream's first byte (the
	// request's Start, or 0 if the server answered 200). End may be higher
	// than a previous SetEnd.
	SetEnd
	// Reset: send RST_STREAM (CANCEL) on Stream and drop its further DATA.
	Reset
	// Deliver: object bytes [Start, End) are new; they are data[Start-From :
	// End-From] of the data just passed to OnData for Stream.
	Deliver
	// Done: every byte of the object has been delivered.
	Done
)

func (k Kind) String() string {
	switch k {
	case Request:
		return "Request"
	case SetEnd:
		return "SetEnd"
	case Reset:
		return "Reset"
	case Deliver:
		return "Deliver"
	case Done:
		return "Done"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Action is one thing the caller must do; Kind says which fields matter.
type Action struct {
	Kind       Kind
	Stream     StreamID
	Path       PathID
	Start, End int64
	From       int64 // Deliver only
}

func (a Action) String() string {
	switch a.Kind {
	case Request:
		return fmt.Sprintf("Request{stream %d path %d [%d,%d)}", a.Stream, a.Path, a.Start, a.End)
	case SetEnd:
		return fmt.Sprintf("SetEnd{stream %d end %d (first byte %d)}", a.Stream, a.End, a.Start)
	case Reset:
		return fmt.Sprintf("Reset{stream %d}", a.Stream)
	case Deliver:
		return fmt.Sprintf("Deliver{stream %d [%d,%d)}", a.Stream, a.Start, a.End)
	}
	return a.Kind.String()
}

// PathStats counts what one path did.
type PathStats struct {
	Requests  int       // requests sent on the path
	Received  int64     // DATA bytes received, tail bytes included
	Delivered int64     // bytes handed to the application
	FirstData time.Time // first DATA byte
	LastData  time.Time // last delivered byte
	// BudgetFull is when the path's budget first left it no room for a
	// chunk; zero if it never did (or it has no budget).
	BudgetFull time.Time
	// Retaken counts bytes this path re-requested while idle that another
	// path had already been given credit for (a takeover, see steal): the
	// server sends them on both, so up to this many arrive twice.
	Retaken int64
	// Stalls counts the times (Aggregate) the path's ranges moved because
	// it was silent while another path delivered (checkSilent); FirstStall
	// is the first time.
	Stalls     int
	FirstStall time.Time
}

// Scheduler schedules one download. Not safe for concurrent use: one owner
// feeds it events in time order.
type Scheduler struct {
	cfg       Config
	object    int64 // the object's size, -1 until known
	size      int64 // bytes wanted: object, or less after Cut; -1 until known
	cut       int64 // end set by Cut, -1 if none
	paths     []*path
	live      []*stream // open streams, in request order
	resets    []resetHold
	lastID    StreamID
	delivered spanSet
	orphans   spanSet
	noRanges  bool // the server ignores Range: one stream carries the whole body
	done      bool
	out       []Action
	active    PathID // the path in use (Handover, Interactive); -1 none yet
	handovers []Switch
	probing   bool      // Interactive: probes are out and the path in use may change (reconsider)
	movable   time.Time // since when reconsider has found a move that pays; zero if it does not
	extended  bool      // keepBusy has given a probed path more work
}

type path struct {
	up        bool
	suspended bool // silent for now (OnPathSuspend): no new work, back on OnPathResume
	bw        *estimate.Bandwidth
	rtt       *estimate.RTT
	respDelay time.Duration // request to response headers, last seen
	minRTT    time.Duration // least response delay or PING RTT seen: the path without queueing
	fin       time.Time     // rebalance's finish estimate, valid if finOK
	want      time.Time     // when the wanted bytes are in: fin without the last stream's credit past its end
	finOK     bool
	prior     estimate.Path
	priorAt   time.Time // when prior was measured; zero: now
	stats     PathStats
	progress  time.Time // last DATA, or the request that gave the idle path work
	pong      time.Time // last PING answer
	stalledAt time.Time // when the path stalled (checkStall, checkSilent); zero once it answers again
	spent     int64     // budget reserved by the path's closed streams
	// partnerFrom and partnerLast are the first and the last time another
	// path was heard from (DATA or a PING answer) since this one was.
	partnerFrom, partnerLast time.Time
}

type stream struct {
	id      StreamID
	path    PathID
	start   int64 // object offset of the stream's first byte
	pos     int64 // object offset of the next byte to arrive
	end     int64 // bytes from here on are not wanted from this stream; -1 while unknown
	respEnd int64 // end of the response the server sends: the request's, or the object's; -1 while unknown
	limit   int64 // flow-control end last given by SetEnd; -1 if none
	granted int64 // object offset up to which the caller gave credit (OnGrant); -1 unreported
	reqAt   time.Time
	started bool // DATA has arrived
	headers bool
	full    bool // a 200 response: the whole body from byte 0
	initial bool // the whole-object GET that learns the size
}

// New returns a scheduler for one download.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Paths < 1 {
		return nil, fmt.Errorf("multipath: config Paths=%d: need at least one path", cfg.Paths)
	}
	if cfg.Size < -1 {
		return nil, fmt.Errorf("multipath: config Size=%d: want a size or -1 for unknown", cfg.Size)
	}
	if cfg.Prior != nil && len(cfg.Prior) != cfg.Paths {
		return nil, fmt.Errorf("multipath: config Prior has %d entries for %d paths", len(cfg.Prior), cfg.Paths)
	}
	if cfg.PriorAt != nil && len(cfg.PriorAt) != cfg.Paths {
		return nil, fmt.Errorf("multipath: config PriorAt has %d entries for %d paths", len(cfg.PriorAt), cfg.Paths)
	}
	if cfg.Delta < 0 || cfg.MaxStreamsPerPath < 0 || cfg.MinChunk < 0 || cfg.LeadMargin < 0 || cfg.GrantLead < 0 {
		return nil, fmt.Errorf("multipath: config Delta=%v MaxStreamsPerPath=%d MinChunk=%d LeadMargin=%d GrantLead=%v: negative",
			cfg.Delta, cfg.MaxStreamsPerPath, cfg.MinChunk, cfg.LeadMargin, cfg.GrantLead)
	}
	if cfg.Mode > Interactive {
		return nil, fmt.Errorf("multipath: config Mode=%d: unknown", cfg.Mode)
	}
	if cfg.HandoverAfter < 0 {
		return nil, fmt.Errorf("multipath: config HandoverAfter=%v: negative", cfg.HandoverAfter)
	}
	if cfg.Budget != nil && len(cfg.Budget) != cfg.Paths {
		return nil, fmt.Errorf("multipath: config Budget has %d entries for %d paths", len(cfg.Budget), cfg.Paths)
	}
	for i, b := range cfg.Budget {
		if b < 0 {
			return nil, fmt.Errorf("multipath: config Budget[%d]=%d: negative", i, b)
		}
	}
	if cfg.Spent != nil && len(cfg.Spent) != cfg.Paths {
		return nil, fmt.Errorf("multipath: config Spent has %d entries for %d paths", len(cfg.Spent), cfg.Paths)
	}
	for i, n := range cfg.Spent {
		if n < 0 || n > 0 && (cfg.Budget == nil || n > cfg.Budget[i]) {
			return nil, fmt.Errorf("multipath: config Spent[%d]=%d: want 0 up to the path's Budget", i, n)
		}
	}
	if cfg.EndAdjust > ResetStream {
		return nil, fmt.Errorf("multipath: config EndAdjust=%d: unknown", cfg.EndAdjust)
	}
	if cfg.Delta == 0 {
		cfg.Delta = DefaultDelta
	}
	if cfg.MaxStreamsPerPath == 0 {
		cfg.MaxStreamsPerPath = DefaultMaxStreamsPerPath
	}
	if cfg.MinChunk == 0 {
		cfg.MinChunk = DefaultMinChunk
	}
	if cfg.LeadMargin == 0 {
		cfg.LeadMargin = DefaultLeadMargin
	}
	if cfg.GrantLead == 0 {
		cfg.GrantLead = DefaultGrantLead
	}
	if cfg.HandoverAfter == 0 {
		cfg.HandoverAfter = DefaultHandoverAfter
	}
	s := &Scheduler{cfg: cfg, object: cfg.Size, size: cfg.Size, cut: -1, active: -1}
	for i := 0; i < cfg.Paths; i++ {
		bw, err := estimate.NewBandwidth(cfg.Bandwidth)
		if err != nil {
			return nil, err
		}
		rtt, err := estimate.NewRTT(cfg.RTTSamples)
		if err != nil {
			return nil, err
		}
		p := &path{up: true, bw: bw, rtt: rtt}
		if cfg.Prior != nil {
			p.prior = cfg.Prior[i]
		}
		if cfg.PriorAt != nil {
			p.priorAt = cfg.PriorAt[i]
		}
		if cfg.Spent != nil {
			p.spent = cfg.Spent[i]
		}
		s.paths = append(s.paths, p)
	}
	if err := s.checkBudgets(); err != nil {
		return nil, err
	}
	return s, nil
}

// The event methods return the actions to carry out, in order. The returned
// slice is reused by the next call.

// OnStart begins the download: with the size known it requests every path's
// share at once (Equation 1 if every path has a prior estimate, equal shares
// otherwise); without it, the whole object on the primary path.
func (s *Scheduler) OnStart(now time.Time) []Action {
	s.out = s.out[:0]
	s.choose(now, "start")
	if s.size < 0 {
		if p, ok := s.initialPath(); ok {
			s.requestInitial(now, p)
		}
		return s.out
	}
	if s.complete() {
		s.finishAll()
		return s.out
	}
	if s.inOrder() {
		s.orphans.add(0, s.size) // schedule hands it out piece by piece
		s.schedule(now)
		return s.out
	}
	qs, n := s.probes(now, s.size)
	size := s.size - int64(len(qs))*n // the probes take the tail
	ups := s.workPaths()
	shares := s.shares(now, size, ups, -1)
	var off int64
	for k, p := range ups {
		if shares[k] > 0 {
			s.request(now, p, off, off+shares[k])
			off += shares[k]
		}
	}
	if off < size {
		s.orphans.add(off, size) // beyond the budgets' room for now
	}
	s.requestProbes(now, qs, size, n)
	return s.out
}

// initialPath is the path that asks for an object of unknown size: the
// mode's path in use, or in Aggregate the primary, unless it has a budget
// and another path has none, or every path has a cached bandwidth: then the
// fastest. Its whole-object GET carries the object's head, which an
// application reading the body in order sees first: on a slow head a
// player that judges a request by its progress (dash.js) abandons it
// before the other paths' shares can count.
func (s *Scheduler) initialPath() (PathID, bool) {
	ws := s.workPaths()
	if len(ws) == 0 {
		return 0, false
	}
	var free []PathID
	for _, p := range ws {
		if s.budget(p) == 0 {
			free = append(free, p)
		}
	}
	if len(free) == 0 {
		return ws[0], true
	}
	best := free[0]
	for _, p := range free {
		if s.paths[p].prior.Bandwidth <= 0 {
			return free[0], true
		}
		if s.paths[p].prior.Bandwidth > s.paths[best].prior.Bandwidth {
			best = p
		}
	}
	return best, true
}

// requestInitial asks path p for the whole object of unknown size; a path
// with a budget asks for a range that fits it, as its reservation must be
// bounded.
func (s *Scheduler) requestInitial(now time.Time, p PathID) {
	b := int64(-1)
	if s.budget(p) > 0 {
		b = s.room(p)
	}
	s.request(now, p, 0, b).initial = true
}

// OnHeaders reports the response headers of a stream: the status, and the
// object's complete length (Content-Range's for 206, Content-Length for 200;
// -1 if absent). The caller checks that a 206's Content-Range starts at the
// request's Start. A 200 to a ranged request means the server ignores ranges:
// the download continues on a single stream carrying the whole body. An error
// means the download cannot go on.
func (s *Scheduler) OnHeaders(now time.Time, id StreamID, status int, size int64) ([]Action, error) {
	s.out = s.out[:0]
	st := s.find(id)
	if st == nil || s.done {
		return nil, nil
	}
	p := s.paths[st.path]
	if !st.headers {
		st.headers = true
		p.respDelay = now.Sub(st.reqAt)
		p.sawRTT(p.respDelay)
	}
	if status != 200 && status != 206 {
		return nil, fmt.Errorf("multipath: stream %d on path %d for bytes [%d,%d): status %d", id, st.path, st.start, st.respEnd, status)
	}
	if status == 206 && size < 0 {
		return nil, fmt.Errorf("multipath: stream %d on path %d: 206 without a complete length", id, st.path)
	}
	if size >= 0 && s.object >= 0 && size != s.object {
		return nil, fmt.Errorf("multipath: stream %d on path %d: object size %d, expected %d", id, st.path, size, s.object)
	}
	learned := s.object < 0 && size >= 0
	if learned {
		s.object, s.size = size, size
		if err := s.checkBudgets(); err != nil {
			return nil, err
		}
		if st.initial && st.respEnd > size {
			// A budget's capped first range reaching past the object.
			st.respEnd, st.end = size, size
		}
		s.applyCut()
	}
	if status == 200 {
		ranged := st.start > 0 || (st.respEnd >= 0 && (s.object < 0 || st.respEnd < s.object))
		// The body starts at byte 0 and runs to the end, whatever was asked.
		st.start, st.pos, st.respEnd, st.full = 0, 0, s.object, true
		if st.end < 0 {
			st.end = s.size
		}
		if ranged || s.size < 0 || s.noRanges {
			s.singleStream()
		}
	} else if st.end < 0 {
		st.end = s.size
	}
	if s.complete() {
		s.finishAll()
		return s.out, nil
	}
	if learned && st.initial && !s.noRanges {
		if s.cfg.Mode == Aggregate {
			s.splitUnknown(now, st)
		} else {
			if st.end < s.size {
				s.orphans.add(st.end, s.size) // past a budget's capped first range
			}
			// The probes take the tail of the first range, which is cut
			// lazily there, as splitUnknown cuts the primary's.
			qs, n := s.probes(now, st.end-st.pos)
			st.end -= int64(len(qs)) * n
			s.requestProbes(now, qs, st.end, n)
		}
	}
	s.schedule(now)
	return s.out, nil
}

// OnData reports n DATA bytes received on a stream at now. The bytes follow
// the stream's earlier ones; the returned Deliver actions say which of them
// are new to the application.
func (s *Scheduler) OnData(now time.Time, id StreamID, n int64) []Action {
	s.out = s.out[:0]
	st := s.find(id)
	if st == nil || n <= 0 || s.done {
		return nil
	}
	p := s.paths[st.path]
	p.bw.OnData(now, n)
	p.progress = now
	s.partnersHeard(p, now)
	if p.stats.Received == 0 {
		p.stats.FirstData = now
	}
	p.stats.Received += n
	st.started = true
	from := st.pos
	st.pos += n
	hi := st.pos
	if st.end >= 0 {
		hi = min(hi, st.end)
	}
	s.delivered.gaps(from, hi, func(a, b int64) {
		s.out = append(s.out, Action{Kind: Deliver, Stream: id, Path: st.path, Start: a, End: b, From: from})
		p.stats.Delivered += b - a
		p.stats.LastData = now
	})
	s.delivered.add(from, hi)
	if st.end >= 0 && st.pos >= st.end {
		// The server stops by itself only at its response's end; before it,
		// flow control holds the stream open until it is reset.
		s.close(st, s.respEnd(st) > st.end)
	} else {
		s.announceLazyEnd(now, st)
	}
	if s.complete() {
		s.finishAll()
		return s.out
	}
	s.schedule(now)
	return s.out
}

// OnStreamEnd reports that a stream ended: END_STREAM, or reset by the
// server. Bytes it was still to deliver are reassigned.
func (s *Scheduler) OnStreamEnd(now time.Time, id StreamID) []Action {
	s.out = s.out[:0]
	st := s.find(id)
	if st == nil || s.done {
		return nil
	}
	if s.size < 0 && st.headers && s.noRanges {
		// A body of unknown length ends where its stream ends.
		s.size = st.pos
		s.applyCut()
	}
	s.orphan(st)
	s.close(st, false)
	if s.complete() {
		s.finishAll()
		return s.out
	}
	s.schedule(now)
	return s.out
}

// OnRTT adds an HTTP/2 PING round-trip sample for a path. PINGs come every
// 100 ms, so this also serves as the scheduler's clock tick: a path with
// nothing left to receive gets to take work from a slower one.
func (s *Scheduler) OnRTT(now time.Time, p PathID, rtt time.Duration) []Action {
	s.out = s.out[:0]
	if p < 0 || int(p) >= len(s.paths) || s.done {
		return nil
	}
	ps := s.paths[p]
	ps.rtt.Add(rtt)
	ps.sawRTT(rtt)
	ps.pong = now
	s.partnersHeard(ps, now)
	if !ps.stalledAt.IsZero() && now.Add(-rtt).After(ps.stalledAt) {
		// A PING sent after the stall came back: the path works again.
		ps.stalledAt = time.Time{}
		s.back(now, p)
	}
	s.schedule(now)
	return s.out
}

// OnGrant reports that the caller has given stream id flow-control credit
// up to object offset end: the server may send every byte below it, and
// once sent they arrive whatever the scheduler later decides. The scheduler
// never moves the stream's end below it (those bytes count as the stream's
// path's) and does not pipeline behind more of them than the path delivers
// within a response delay. A caller that does not report credit leaves the
// scheduler estimating it as one bandwidth-delay product.
func (s *Scheduler) OnGrant(id StreamID, end int64) {
	if st := s.find(id); st != nil && end > st.granted {
		st.granted = end
	}
}

// Ahead is how far past the received bytes the flow-control credit of path
// p's streams should reach (Credit shares it among them): what the path
// delivers in one unqueued round trip plus GrantLead, plus LeadMargin. It
// uses the least RTT seen, not the PING estimate: a PING queues behind the
// data the credit itself let the server send, so credit sized by it would
// feed its own growth, and on a path whose rate drops the credit would
// outrun what the path can deliver soon.
// Callers granting by Credit never give credit past a lazily announced
// end, since the scheduler announces an end once it is within Ahead.
// A path gets recoveryLead on top.
func (s *Scheduler) Ahead(now time.Time, p PathID) int64 {
	bw, ok := s.bandwidth(now, p)
	if !ok {
		// Before the first bandwidth sample (which comes within some 40 KB)
		// a fixed lead stands in for the bandwidth-delay product.
		return 4 * s.cfg.LeadMargin
	}
	a := int64(bw*(s.baseRTT(p)+s.cfg.GrantLead).Seconds()) + s.cfg.LeadMargin
	return a + s.recoveryLead(now, p, bw, a)
}

// recoveryLead is credit for a TCP loss recovery on path p: until a lost
// segment's retransmission is in, the bytes behind it do not reach the
// client, which so gives no credit, and the server, its credit spent,
// stops; the link idles about a round trip per loss once the queue has
// drained (the testbed's 256 MB downloads on (10,5), 27 Nov: 34 such
// stretches on lte against aria2's 10). The queue's bytes cover its own
// drain; the retransmission's round trip and the WINDOW_UPDATE's way back
// after it need two unqueued round trips of credit more. In Aggregate
// it is given once every path up has an estimate, and never past a
// quarter of the bytes p keeps of its largest stream's rest whatever the
// others take (a steal takes at most their share of it, by their
// bandwidths), so no byte a steal may want is credited, and the lead is
// gone well before the end, where a path whose rate drops would bring its
// bytes slowly (TestSimBandwidthDrop's 5 to 1 Mbit/s: unchanged). In
// Handover and Interactive only the path in use gets it, once no probe's
// move may take its bytes, and p keeps all of its rest: no other path
// takes from it but when it fails, where its credit is lost either way
// (Figure 8's (5,10) on lte alone, recoveries every 2 s: 1.2 % slower
// than without them before, 0.06 % after).
func (s *Scheduler) recoveryLead(now time.Time, p PathID, bw float64, a int64) int64 {
	total := bw
	switch {
	case s.cfg.Mode == Aggregate:
		total = 0
		for i, q := range s.paths {
			if !q.up {
				continue
			}
			b, ok := s.bandwidth(now, PathID(i))
			if !ok {
				return 0
			}
			total += b
		}
	case p != s.active || s.probing:
		return 0 // a probe's path, or the bytes a probe's move may take
	}
	if total <= 0 {
		return 0 // no path up (all suspended): no share to keep
	}
	var rest int64
	for _, st := range s.live {
		if st.path == p && st.end >= 0 {
			rest = max(rest, st.end-st.pos)
		}
	}
	keep := int64(float64(rest)*bw/total/4) - a
	return max(0, min(int64(2*bw*s.baseRTT(p).Seconds()), keep))
}

// Credit is how far past stream id's received bytes its flow-control
// credit should reach. Ahead bounds the credit of the path, not of each
// stream: the streams share it in request order, a pipelined stream getting
// what the credit of the streams before it leaves. Credit per stream would
// let a path pipelining a stolen tail commit a second Ahead at once, bytes
// another path could no longer take back (see OnGrant), so a steal decided
// on a passing dip in the other path's estimate could not be undone.
func (s *Scheduler) Credit(now time.Time, id StreamID) int64 {
	return s.credit(now, id, false)
}

// FirstCredit is Credit for a stream's first window, given with its request.
// A caller that can top a stream up only once its response headers are in
// (the mph2 client) cannot pass it the credit that earlier streams free as
// their credited bytes up to their end arrive, a response delay's worth:
// that credit is the new stream's from the start.
func (s *Scheduler) FirstCredit(now time.Time, id StreamID) int64 {
	return s.credit(now, id, true)
}

func (s *Scheduler) credit(now time.Time, id StreamID, first bool) int64 {
	st := s.find(id)
	if st == nil {
		return 0
	}
	a := s.Ahead(now, st.path)
	for _, x := range s.live {
		if x == st {
			break
		}
		// Credit past what the server will send on x (its response's or
		// SetEnd's end) holds nothing back.
		end := s.beyond(x)
		if c := min(x.granted, end); x.path == st.path && c > x.pos && !(first && c >= end) {
			a -= c - x.pos
		}
	}
	return max(a, 0)
}

// OnPathDown reports a path lost: its streams are gone and their bytes go to
// the other paths. It fails only when no path is left.
func (s *Scheduler) OnPathDown(now time.Time, p PathID) ([]Action, error) {
	s.out = s.out[:0]
	if p < 0 || int(p) >= len(s.paths) {
		return nil, fmt.Errorf("multipath: path %d down: no such path (have %d)", p, len(s.paths))
	}
	if s.done || !s.paths[p].up && !s.paths[p].suspended {
		return nil, nil
	}
	s.paths[p].up, s.paths[p].suspended = false, false
	s.moveStreams(p, false)
	if len(s.upPaths()) == 0 && !s.anySuspended() {
		return nil, fmt.Errorf("multipath: all %d paths down with %d of %d bytes delivered",
			len(s.paths), s.delivered.total(), s.size)
	}
	s.choose(now, "down")
	s.schedule(now)
	return s.out, nil
}

// OnPathSuspend takes path p out of the schedule while it is silent (an
// outage: no answer and no data for a while, its connection still open).
// If another path is up, p's outstanding ranges move to the others at once,
// as for a path that is down; if none is, p keeps its streams, so a path
// that comes back (or TCP's retransmission) picks up where it stopped and a
// server without ranges is not asked again. Unlike OnPathDown it never
// fails the download: waiting out an outage is the caller's to bound.
func (s *Scheduler) OnPathSuspend(now time.Time, p PathID) ([]Action, error) {
	s.out = s.out[:0]
	if p < 0 || int(p) >= len(s.paths) {
		return nil, fmt.Errorf("multipath: path %d suspended: no such path (have %d)", p, len(s.paths))
	}
	ps := s.paths[p]
	if s.done || !ps.up {
		return nil, nil
	}
	ps.up, ps.suspended = false, true
	ps.finOK = false
	if len(s.upPaths()) > 0 {
		s.moveStreams(p, true)
		s.choose(now, "silent")
		s.schedule(now)
	}
	return s.out, nil
}

// OnPathLost reports that path p's connection died (reset, refused,
// closed) while the caller redials it: its streams are gone without a
// Reset, and their bytes go to the paths that are up or, if none is, wait
// for a path to come back. Until OnPathResume re-admits it (redialed) or
// OnPathDown gives it up, the path is suspended. Like OnPathSuspend it
// never fails the download: the caller bounds the redialing.
func (s *Scheduler) OnPathLost(now time.Time, p PathID) ([]Action, error) {
	s.out = s.out[:0]
	if p < 0 || int(p) >= len(s.paths) {
		return nil, fmt.Errorf("multipath: path %d lost: no such path (have %d)", p, len(s.paths))
	}
	ps := s.paths[p]
	if s.done || !ps.up && !ps.suspended {
		return nil, nil
	}
	ps.up, ps.suspended, ps.finOK = false, true, false
	s.moveStreams(p, false)
	if len(s.upPaths()) > 0 {
		s.choose(now, "down")
		s.schedule(now)
	}
	return s.out, nil
}

// OnPathResume re-admits a suspended path (data or a PING answer came on
// it) with fresh estimates: what it measured before the outage says nothing
// of the path after it. Streams still held by suspended paths move to the
// paths that are up.
func (s *Scheduler) OnPathResume(now time.Time, p PathID) ([]Action, error) {
	s.out = s.out[:0]
	if p < 0 || int(p) >= len(s.paths) {
		return nil, fmt.Errorf("multipath: path %d resumed: no such path (have %d)", p, len(s.paths))
	}
	ps := s.paths[p]
	if s.done || !ps.suspended {
		return nil, nil
	}
	ps.up, ps.suspended, ps.finOK = true, false, false
	s.forgetBandwidth(p)
	ps.rtt, _ = estimate.NewRTT(s.cfg.RTTSamples) // New checked the config
	for q, other := range s.paths {
		if other.suspended {
			s.moveStreams(PathID(q), true)
		}
	}
	s.back(now, p)
	s.schedule(now)
	return s.out, nil
}

// forgetBandwidth gives path p a fresh bandwidth estimate: what it measured
// before a silence says nothing of the path after it.
func (s *Scheduler) forgetBandwidth(p PathID) {
	s.paths[p].bw, _ = estimate.NewBandwidth(s.cfg.Bandwidth) // New checked the config
}

// Suspended reports whether path p is suspended.
func (s *Scheduler) Suspended(p PathID) bool { return s.paths[p].suspended }

// moveStreams gives path p's outstanding ranges back to the schedule: its
// streams are closed, with a Reset when the path's connection stays open
// (a suspended path's, so the server stops sending what another path now
// fetches), and their undelivered bytes orphaned for the paths that are up.
func (s *Scheduler) moveStreams(p PathID, reset bool) {
	for i := 0; i < len(s.live); {
		if st := s.live[i]; st.path == p {
			s.orphan(st)
			s.close(st, reset)
			continue
		}
		i++
	}
}

// anySuspended reports whether a path may still come back.
func (s *Scheduler) anySuspended() bool {
	for _, p := range s.paths {
		if p.suspended {
			return true
		}
	}
	return false
}

// Cut makes the download end at object offset end: bytes from end on are no
// longer wanted. Streams reaching past it stop there, lazily as the primary
// path's first stream does at the midpoint (MP-H2 §3.3): under flow control
// their end is announced one bandwidth-delay product ahead, under ResetStream
// they are reset when it arrives. This is MP-H2 §5.7's tail-byte experiment.
func (s *Scheduler) Cut(now time.Time, end int64) []Action {
	s.out = s.out[:0]
	if s.done || end < 0 || (s.cut >= 0 && end >= s.cut) {
		return nil
	}
	s.cut = end
	s.applyCut()
	if s.complete() {
		s.finishAll()
		return s.out
	}
	s.schedule(now)
	return s.out
}

// Size returns how many bytes the download delivers: the object's size, or
// less after Cut; -1 while unknown.
func (s *Scheduler) Size() int64 { return s.size }

// Finished reports whether the Done action has been given.
func (s *Scheduler) Finished() bool { return s.done }

// Stats returns what path p has done so far.
func (s *Scheduler) Stats(p PathID) PathStats { return s.paths[p].stats }

// Estimate returns path p's current estimates, falling back to its prior
// where it has no sample of its own.
func (s *Scheduler) Estimate(now time.Time, p PathID) estimate.Path {
	var e estimate.Path
	if bw, ok := s.bandwidth(now, p); ok {
		e.Bandwidth = bw
	}
	e.RTT = s.rttOf(p)
	return e
}

// Learned returns what the next download on path p should start from (store
// it in an estimate.Cache): the bandwidth estimate and the least RTT seen.
// The next download's first requests go out on idle connections, so their
// delay is the unqueued round trip. The PING estimate at the end of this
// download includes the queue this download built (160 ms behind a 100 KB
// buffer at 5 Mbit/s): as a prior it would shift the first split away from
// the path and, taken for its base RTT, size the first flow-control credit
// for the queued round trip, credit that no later decision can take back.
func (s *Scheduler) Learned(now time.Time, p PathID) estimate.Path {
	e := s.Estimate(now, p)
	e.RTT = s.baseRTT(p)
	return e
}

// request opens a stream for [a, b) on path p (b = -1: whole object).
func (s *Scheduler) request(now time.Time, p PathID, a, b int64) *stream {
	s.lastID++
	end := b
	if b < 0 {
		end = s.size
	}
	st := &stream{id: s.lastID, path: p, start: a, pos: a, end: end, respEnd: b, limit: -1, granted: -1, reqAt: now}
	if s.streams(p) == 0 {
		s.paths[p].progress = now // the stall clock starts with the work
	}
	s.live = append(s.live, st)
	s.paths[p].stats.Requests++
	s.out = append(s.out, Action{Kind: Request, Stream: st.id, Path: p, Start: a, End: b})
	return st
}

// close forgets a stream, resetting it if the server would send more.
func (s *Scheduler) close(st *stream, reset bool) {
	for i, x := range s.live {
		if x == st {
			s.live = append(s.live[:i], s.live[i+1:]...)
			break
		}
	}
	s.spend(st, reset)
	if reset {
		s.out = append(s.out, Action{Kind: Reset, Stream: st.id, Path: st.path})
	}
	if s.streams(st.path) == 0 {
		// Whatever comes next on this path starts after a request's delay,
		// which is no measure of its bandwidth.
		s.paths[st.path].bw.Idle()
	}
}

// orphan hands the bytes a stream was still to deliver to the orphan set.
func (s *Scheduler) orphan(st *stream) {
	if s.size < 0 || s.noRanges {
		return
	}
	end := st.end
	if end < 0 {
		end = s.size
	}
	s.delivered.gaps(st.pos, end, func(a, b int64) { s.orphans.add(a, b) })
}

// respEnd is the end of the response the server is sending on st.
func (s *Scheduler) respEnd(st *stream) int64 {
	if st.respEnd >= 0 {
		return st.respEnd
	}
	if s.object >= 0 {
		return s.object
	}
	return math.MaxInt64
}

// beyond is the offset up to which the server may send on st: its response
// end, or the flow-control end given to it.
func (s *Scheduler) beyond(st *stream) int64 {
	if st.limit >= 0 {
		return min(st.limit, s.respEnd(st))
	}
	return s.respEnd(st)
}

// setEnd moves a stream's end now: under flow control the server is told at
// once; under ResetStream the stream is reset when the end arrives.
func (s *Scheduler) setEnd(st *stream, end int64) {
	st.end = end
	if st.pos >= end {
		s.close(st, s.respEnd(st) > end)
		return
	}
	if s.cfg.EndAdjust == FlowControl && s.beyond(st) > end {
		st.limit = end
		s.out = append(s.out, Action{Kind: SetEnd, Stream: st.id, Path: st.path, Start: st.start, End: end})
	}
}

// announceLazyEnd tells the server a stream's end under flow control once
// the stream is within Ahead of it: the window update must reach the server
// before the server has sent that far (MP-H2 §3.4.2), and a caller granting
// credit by Ahead would give credit past the end from here on.
func (s *Scheduler) announceLazyEnd(now time.Time, st *stream) {
	if s.cfg.EndAdjust != FlowControl || st.end < 0 || s.beyond(st) <= st.end {
		return
	}
	if st.pos+s.Ahead(now, st.path) >= st.end {
		s.setEnd(st, st.end)
	}
}

// applyCut trims the download to the end Cut asked for, once the size is known.
func (s *Scheduler) applyCut() {
	if s.size < 0 || s.cut < 0 || s.cut >= s.size {
		return
	}
	s.size = s.cut
	s.orphans.remove(s.size, math.MaxInt64)
	for i := 0; i < len(s.live); {
		st := s.live[i]
		switch {
		case st.pos >= s.size:
			s.close(st, true)
			continue
		case st.end < 0 || st.end > s.size:
			st.end = s.size // announced lazily
		}
		i++
	}
}

// singleStream switches to one stream carrying the whole body, for a server
// that ignores Range or a body of unknown length: the live stream furthest
// into the body carries on, all others are reset.
func (s *Scheduler) singleStream() {
	s.noRanges = true
	s.orphans = nil
	var carrier *stream
	for _, st := range s.live {
		if st.full && (carrier == nil || st.pos > carrier.pos) {
			carrier = st
		}
	}
	for i := 0; i < len(s.live); {
		if st := s.live[i]; st != carrier {
			s.close(st, true)
			continue
		}
		i++
	}
	if carrier == nil {
		return
	}
	carrier.end = s.size
	if s.cfg.EndAdjust == FlowControl && carrier.limit >= 0 && carrier.limit < s.size {
		// Raise a window lowered earlier: WINDOW_UPDATE can always add credit.
		carrier.limit = s.size
		s.out = append(s.out, Action{Kind: SetEnd, Stream: carrier.id, Path: carrier.path, Start: 0, End: s.size})
	}
}

// splitUnknown is MP-H2's unknown-size start (§3.3): the primary's whole
// object GET has revealed the size; the primary keeps the first share, cut
// lazily at its end, and every other path requests its share now.
func (s *Scheduler) splitUnknown(now time.Time, first *stream) {
	if s.inOrder() {
		// The primary keeps its first piece (and what it has credit for),
		// the rest goes out from the front (schedule).
		first.end = min(max(s.piece(now, first.path), s.committed(now, first)), s.respEnd(first), s.size)
		s.orphans.add(first.end, s.size)
		return
	}
	ups := []PathID{first.path}
	for _, p := range s.workPaths() {
		if p != first.path {
			ups = append(ups, p)
		}
	}
	shares := s.shares(now, s.size, ups, first.path)
	first.end = min(shares[0], s.respEnd(first))
	if first.end < shares[0] {
		s.orphans.add(first.end, shares[0])
	}
	off := shares[0]
	for k, p := range ups[1:] {
		if sh := shares[k+1]; sh > 0 && s.streams(p) < s.cfg.MaxStreamsPerPath {
			s.request(now, p, off, off+sh)
			off += sh
		}
	}
	if off < s.size {
		s.orphans.add(off, s.size)
	}
}

func (s *Scheduler) inOrder() bool { return s.cfg.InOrder && s.cfg.Mode == Aggregate }

// piece is the size of path p's next in-order piece: PieceTime at its
// rate, or before it has an estimate the credit a path gets then (Ahead).
func (s *Scheduler) piece(now time.Time, p PathID) int64 {
	bw, ok := s.bandwidth(now, p)
	if !ok || bw <= 0 {
		return 4 * s.cfg.LeadMargin
	}
	return max(int64(bw*PieceTime.Seconds()), s.cfg.MinChunk)
}

// shares splits size bytes among paths: by Equation 1 if every path's
// bandwidth and RTT are known, else equally. flowing is a path whose data
// is already arriving (no request delay), or -1.
func (s *Scheduler) shares(now time.Time, size int64, ps []PathID, flowing PathID) []int64 {
	conds := make([]Cond, len(ps))
	known := true
	for k, p := range ps {
		bw, ok := s.bandwidth(now, p)
		rtt := s.rttOf(p)
		if !ok || (rtt <= 0 && p != flowing) {
			known = false
			break
		}
		conds[k] = Cond{Bandwidth: bw, Delay: rtt}
		if p == flowing {
			conds[k].Delay = 0
		}
	}
	var sh []int64
	if known {
		sh, _ = Split(size, conds)
	} else {
		sh = make([]int64, len(ps))
		for k := range sh {
			sh[k] = size / int64(len(ps))
		}
		sh[0] += size - sh[0]*int64(len(ps))
	}
	return s.capShares(sh, ps)
}

// capShares trims each share to its path's budget room and gives the
// excess to the paths with room left, in order; what none has room for is
// left out (the caller orphans it).
func (s *Scheduler) capShares(sh []int64, ps []PathID) []int64 {
	var excess int64
	for k, p := range ps {
		if r := s.room(p); sh[k] > r {
			excess += sh[k] - r
			sh[k] = max(r, 0)
		}
	}
	for k, p := range ps {
		if excess == 0 {
			break
		}
		n := min(excess, s.room(p)-sh[k])
		if n > 0 {
			sh[k] += n
			excess -= n
		}
	}
	return sh
}

// schedule makes the decisions every event may trigger.
func (s *Scheduler) schedule(now time.Time) {
	if s.done {
		return
	}
	s.checkStall(now)
	if s.active >= 0 && s.paths[s.active].up && s.room(s.active) <= 0 {
		s.choose(now, "budget")
	}
	defer func() {
		for i := range s.paths {
			s.noteFull(now, PathID(i))
		}
	}()
	if len(s.live) == 0 && (s.size < 0 || s.noRanges) {
		// The stream that was to learn the size, or the one carrying a body
		// that cannot be split, is lost: ask again on another path.
		if p, ok := s.pickPath(now); ok {
			s.requestInitial(now, p)
		}
		return
	}
	if s.size < 0 || s.noRanges {
		return
	}
	s.reconsider(now)
	for len(s.orphans) > 0 {
		p, ok := s.pickPath(now)
		if !ok {
			break
		}
		o := s.orphans[0]
		n := s.fit(p, o.a, o.b)
		if s.inOrder() {
			if k := s.piece(now, p); n-k >= s.cfg.MinChunk {
				n = k // a rest under MinChunk goes with the last piece
			}
		}
		if o.a+n < o.b {
			s.orphans[0].a = o.a + n
		} else {
			s.orphans = s.orphans[1:]
		}
		s.request(now, p, o.a, o.a+n)
	}
	if s.cfg.Mode == Handover || s.probing {
		return // one path at a time: nothing to split
	}
	// In Interactive only the path in use takes work (usable): once the
	// probes are in or it has moved, near its end it takes back the tail of
	// the path it moved from, if that would come later than it could fetch
	// it (the testbed's att-tmo at 1 MB, rep 3: AT&T's credited bytes came
	// 1 s after lte's last). While probing, reconsider alone takes a probe
	// back, after ProbeConfirm: a probe's path is in slow start, its
	// estimate low.
	for range s.paths {
		if !s.rebalance(now) {
			break
		}
	}
}

// pickPath returns the usable path with a free stream slot expected to finish
// first.
func (s *Scheduler) pickPath(now time.Time) (PathID, bool) {
	best, found := PathID(0), false
	var bestT time.Time
	for i := range s.paths {
		p := PathID(i)
		if !s.usable(p) || s.streams(p) >= s.cfg.MaxStreamsPerPath {
			continue
		}
		t, _, ok := s.finish(now, p)
		if !ok {
			t = now.Add(time.Duration(math.MaxInt64 / 2))
		}
		if !found || t.Before(bestT) {
			best, bestT, found = p, t, true
		}
	}
	return best, found
}

// rebalance is Algorithm 1 for N paths: a path expected to finish its work
// within one response delay (pipelining), or with none left, takes the tail
// of the path expected to finish last if that one would finish more than δ
// later. The new chunk's size makes both finish together (Equation 1 with
// the slow path already flowing). It reports whether it made a request.
func (s *Scheduler) rebalance(now time.Time) bool {
	for k, p := range s.paths {
		p.finOK = false
		if p.up {
			p.fin, p.want, p.finOK = s.finish(now, PathID(k))
		}
	}
	for k, p := range s.paths {
		i := PathID(k)
		if !p.finOK || !s.usable(i) || s.streams(i) >= s.cfg.MaxStreamsPerPath {
			continue
		}
		bwI, ok := s.bandwidth(now, i)
		if !ok && s.streams(i) > 0 {
			continue
		}
		// An idle path with no estimate (one back from an outage, its old
		// estimate dropped) probes: it takes a chunk as if it were as fast
		// as the path it takes from, as the start's even split does.
		rttI := s.rttOf(i)
		if s.cfg.NoPipelining {
			if s.streams(i) > 0 {
				continue
			}
		} else if p.fin.Sub(now) > rttI {
			continue
		}
		// The path to take from is the one whose wanted bytes come last;
		// credit past its last end (a cut, a takeover) delays nothing.
		var slow *path
		j := PathID(0)
		for k, q := range s.paths {
			if q != p && q.finOK && q.want.Sub(p.fin) > s.cfg.Delta && (slow == nil || q.want.After(slow.want)) {
				slow, j = q, PathID(k)
			}
		}
		if slow != nil && s.steal(now, i, j, bwI, p.fin, slow.want) {
			return true
		}
	}
	return false
}

// steal moves the tail of path j's largest remaining stream to a new stream
// on path i. A path i that still has work takes only bytes j has no credit
// for, so none comes twice. An idle i takes over credited bytes too (the
// tail of a path slow but not silent enough to be suspended): their share
// is sized as any steal's, so it pays only when i fetches them afresh
// sooner than j delivers them; j's end moves below its credit and the
// bytes the server still sends past it arrive as tail bytes (Retaken).
func (s *Scheduler) steal(now time.Time, i, j PathID, bwI float64, finI, finJ time.Time) bool {
	bwJ, ok := s.bandwidth(now, j)
	if !ok {
		return false
	}
	if bwI <= 0 {
		bwI = bwJ // a probe (rebalance)
	}
	var x *stream
	for _, st := range s.live {
		if st.path == j && st.end >= 0 && (x == nil || st.end-st.pos > x.end-x.pos) {
			x = st
		}
	}
	if x == nil {
		return false
	}
	// The new chunk's first byte arrives one unqueued round trip from now
	// (what is queued ahead of it is i's current work), or when i's current
	// work ends if that is later.
	startI := now.Add(s.baseRTT(i))
	if finI.After(startI) {
		startI = finI
	}
	d := finJ.Sub(startI).Seconds() * bwI * bwJ / (bwI + bwJ)
	committed := s.committed(now, x)
	idle := s.streams(i) == 0
	keep := committed
	if idle {
		keep = x.pos
	}
	room := min(x.end-keep, s.room(i))
	n := int64(math.Min(d, float64(room)))
	if n < s.cfg.MinChunk && idle && x.end-x.pos <= room &&
		startI.Add(bytesTime(x.end-x.pos, bwI)+s.cfg.Delta).Before(finJ) {
		// Less than a chunk is left to share, but j is so slow that i
		// fetching all of it afresh ends more than δ sooner: j's stream is
		// cancelled (on a path at 0.4 Mbit/s a 16 KB chunk is 0.3 s).
		n = x.end - x.pos
	}
	if n < s.cfg.MinChunk && n < x.end-x.pos || n <= 0 {
		return false
	}
	a, b := x.end-n, x.end
	if c := min(committed, b); c > a {
		s.paths[i].stats.Retaken += c - a
	}
	s.setEnd(x, a)
	// Algorithm 1 lines 7-8: a stream of this path that was cut lazily (the
	// primary's first stream) announces its end now.
	for _, st := range s.live {
		if st.path == i && s.cfg.EndAdjust == FlowControl && st.end >= 0 && s.beyond(st) > st.end {
			s.setEnd(st, st.end)
		}
	}
	s.request(now, i, a, b)
	return true
}

// committed is the offset below which stream st's end cannot move without
// tail bytes: under flow control the server may send every credited byte,
// and has sent some before a new end reaches it. Unreported credit is taken
// as one bandwidth-delay product past the received bytes. Under ResetStream
// the bytes past the new end are tail bytes anyway.
func (s *Scheduler) committed(now time.Time, st *stream) int64 {
	if s.cfg.EndAdjust != FlowControl {
		return st.pos
	}
	if st.granted >= 0 {
		return max(st.pos, st.granted)
	}
	bw, _ := s.bandwidth(now, st.path)
	return st.pos + int64(bw*s.rttOf(st.path).Seconds())
}

// finish estimates when path p will have received everything its open
// streams are to deliver, taking them one after another at the path's
// bandwidth, each not before its response can arrive. That is one unqueued
// round trip after its request: the queueing a PING sees on a busy path is
// the data of the streams ahead, already counted. Credited bytes past a
// stream's end (a Cut below its credit) count too: they are sure to come,
// ahead of any response pipelined behind them, so a path does not pipeline
// behind more of them than it delivers within a response delay. want is
// when the wanted bytes are in: the same without the last stream's credited
// bytes past its end, which hold nothing up.
func (s *Scheduler) finish(now time.Time, p PathID) (t, want time.Time, ok bool) {
	bw, bwOK := s.bandwidth(now, p)
	return s.finishAt(now, p, bw, bwOK)
}

// finishAt is finish with path p at bw bytes per second (bwOK: known).
func (s *Scheduler) finishAt(now time.Time, p PathID, bw float64, bwOK bool) (t, want time.Time, ok bool) {
	t, want = now, now
	rtt := s.baseRTT(p)
	at := func(from time.Time, n int64) time.Time { return from.Add(bytesTime(n, bw)) }
	for _, st := range s.live {
		if st.path != p {
			continue
		}
		if st.end < 0 {
			return t, t, false
		}
		if !st.started {
			if first := st.reqAt.Add(rtt); first.After(t) {
				t = first
			}
		}
		if rem := max(st.end, min(st.granted, s.respEnd(st))) - st.pos; rem > 0 {
			if !bwOK {
				return t, t, false
			}
			want = at(t, max(st.end-st.pos, 0))
			t = at(t, rem)
		} else {
			want = t
		}
	}
	return t, want, true
}

// bandwidth is path p's estimate, or its prior before it has one.
func (s *Scheduler) bandwidth(now time.Time, p PathID) (float64, bool) {
	if bw, ok := s.paths[p].bw.Estimate(now); ok {
		return bw, true
	}
	if bw := s.paths[p].prior.Bandwidth; bw > 0 {
		return bw, true
	}
	return 0, false
}

// rttOf is path p's response delay: the PING estimate, else the delay of
// its last response, else its prior; 0 if nothing is known.
func (s *Scheduler) rttOf(p PathID) time.Duration {
	ps := s.paths[p]
	if r, ok := ps.rtt.Estimate(); ok {
		return r
	}
	if ps.respDelay > 0 {
		return ps.respDelay
	}
	return ps.prior.RTT
}

// baseRTT is path p's round trip without queueing, as far as seen.
func (s *Scheduler) baseRTT(p PathID) time.Duration {
	if m := s.paths[p].minRTT; m > 0 {
		return m
	}
	return s.rttOf(p)
}

func (p *path) sawRTT(rtt time.Duration) {
	if rtt > 0 && (p.minRTT == 0 || rtt < p.minRTT) {
		p.minRTT = rtt
	}
}

func (s *Scheduler) find(id StreamID) *stream {
	for _, st := range s.live {
		if st.id == id {
			return st
		}
	}
	return nil
}

func (s *Scheduler) streams(p PathID) int {
	n := 0
	for _, st := range s.live {
		if st.path == p {
			n++
		}
	}
	return n
}

func (s *Scheduler) upPaths() []PathID {
	var ups []PathID
	for i, p := range s.paths {
		if p.up {
			ups = append(ups, PathID(i))
		}
	}
	return ups
}

func (s *Scheduler) complete() bool {
	return s.size >= 0 && s.delivered.covers(0, s.size)
}

// finishAll resets what is still open and gives Done.
func (s *Scheduler) finishAll() {
	for len(s.live) > 0 {
		st := s.live[0]
		s.close(st, true)
	}
	s.done = true
	s.out = append(s.out, Action{Kind: Done})
}
