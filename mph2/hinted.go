package mph2

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/hints"
)

// Hinted loads many objects over the Client's paths, one HTTP/2 connection
// per path, each request placed by a hints.Policy (issue 19): urgent
// resources on the low-latency path and the bulk on the cheap one, a
// redundant copy of a latency-critical request on a second path (the first
// response to complete wins, the other is cancelled by RST_STREAM), and a
// response's tail asked for again by Range on the other path when the policy
// says that path would deliver it first, and an object split in a head (by
// Range) on the path a cap has that much room left on and the rest on
// another, both at once.
//
// The path state the policy sees is measured: the RTT from the TCP
// handshake, then HTTP/2 PINGs every PingInterval (smoothed as MP-H2's
// estimator, and the minimum); the bandwidth from the DATA a busy path received per PING
// interval; the loss from the kernel's count of segments that arrived out
// of order (TCP_INFO tcpi_rcv_ooopack over tcpi_segs_in: what a receiver
// sees of loss); the cost per byte from Cost.
//
// A path whose connection dies (closed, reset, GOAWAY, or silent: PING
// unanswered and no frame for the liveness timeout, as a download's paths
// are judged) is redialed as a download's paths are (backing off from
// 100 ms to 1 s, until Client.StallTimeout has passed since it was lost or
// any path last delivered) and re-admitted with fresh estimates; a Get
// while no path is up waits for one, and one while every path has been
// given up dials them all again. An object whose requests in flight all
// died with their connections is asked for again on another live path
// (hobject.reissue), so it fails only once none of its requests has
// delivered a byte for the stall timeout (or up to 1 s sooner, when every
// path's redialing has ended first).
//
// Each copy of an object is held in memory (web objects), so Get returns
// the body; RoundTrip passes the body on as it arrives, in order: the first
// response's bytes, then those of the copy that completed first (hobject).
type Hinted struct {
	Client *Client
	Policy *hints.Policy
	// Cost is each path's cost per byte (nil: all 0).
	Cost         []float64
	PingInterval time.Duration // default 100 ms
	TailCheck    time.Duration // how often a transfer with a tail threshold is looked at; default 5 ms
	// Expect, if > 0, is the bytes the load will ask for (a page's, when
	// known): a copies=P% budget is P % of these from the start, not only
	// of the bytes placed so far.
	Expect int64
	// Placed, if set, is told of every response RoundTrip returns: the hint
	// the request's headers gave and the path of the response whose header
	// it passes on (before the body has arrived).
	Placed func(req *http.Request, hint hints.Hint, g *Got)

	mu    sync.Mutex
	u     *url.URL
	paths []*hintedPath
	stats HintedStats
	// lastData is when a path was last seen to have received DATA.
	lastData time.Time
	// copyCharge is the bytes of the tails and hedges made, each charged
	// its rest when made, for copies=P% budgets.
	copyCharge int64
	// batch is the requests gathered for placing together (Policy.Gather).
	batch   []gathered
	ctx     context.Context // the watches'; stop ends it
	stop    context.CancelFunc
	probers sync.WaitGroup
}

type hintedPath struct {
	pc        *pathConn // replaced by its redial; guarded by Hinted.mu
	down      bool      // its first dial failed, or redialing gave up
	gone      int64     // DATA received on the path's earlier connections
	dialStart time.Time
	rtt       *estimate.RTT
	minRTT    time.Duration
	rttVar    time.Duration // mean deviation of the RTT samples from the smoothed RTT
	bw        float64
	loss      float64
	sent      int64 // body bytes placed on the path (for budgets)
	queued    int64 // body bytes placed and not yet done
	// lastTurn is the turn of the copy last placed on the path (nextTurn).
	lastTurn *turn
}

// HintedStats is what a Hinted did since Start.
type HintedStats struct {
	Paths []HintedPathStats
	// Redundant requests went on two paths; SecondWon of them completed
	// first on their second path.
	Redundant, SecondWon int
	// Tails re-requested a response's tail or hedged its rest; TailWon of
	// them completed before the response itself. Cut counts copies cancelled
	// as clearly behind the other (a hedge's pair) before either completed.
	Tails, TailWon, Cut int
	// Wasted is body bytes read from copies that were not used (the loser
	// of a redundant pair, a response overtaken by its tail or the tail it
	// overtook, the first bytes of an object asked for again whole, checked
	// against those received before). Bytes in flight when the copy was
	// cancelled are not read; HintedPathStats.Received counts them.
	Wasted int64
	// Reissued counts the objects asked for again after every request of
	// theirs in flight failed with its path's connection.
	Reissued int
	// Splits counts the objects asked for in two parts, a head and the
	// rest on another path (hints.Decision.Split).
	Splits int
	// Joins counts the responses whose rest was shared with a path that
	// came up idle, their streams stopped at a byte (hints.Policy.Join).
	Joins int
}

// HintedPathStats is one path's share.
type HintedPathStats struct {
	Name      string
	Requests  int   // requests sent on the path (copies and tails included)
	Used      int64 // body bytes of the path that went into returned objects
	Received  int64 // DATA payload the path's connections received (h2 only), wasted bytes included
	Redials   int   // connections that died and were replaced by a redial
	Stalls    int   // connections closed for silence (liveness)
	RTT       time.Duration
	Bandwidth float64 // bytes/s
	Loss      float64
}

func (h *Hinted) pingInterval() time.Duration {
	if h.PingInterval > 0 {
		return h.PingInterval
	}
	return 100 * time.Millisecond
}

func (h *Hinted) tailCheck() time.Duration {
	if h.TailCheck > 0 {
		return h.TailCheck
	}
	return 5 * time.Millisecond
}

// HintedEndAdjust is the EndAdjust a Client of a Hinted with policy p
// (nil: none) wants. Streams end by RST_STREAM: a hinted load cancels its
// losing copies that way, and flow-control ends start every stream at a
// 16 KB window (racing the server's SETTINGS ACK over TLS). A policy that
// joins needs flow-control ends all the same, to stop a held response at
// a byte; Hinted then opens its other streams to h2's 1 MiB.
func HintedEndAdjust(p *hints.Policy) EndAdjust {
	if p != nil && p.Joins() {
		return EndFlowControl
	}
	return EndReset
}

// Start opens every path's connection to rawURL's server in the background
// and starts measuring the paths; Get waits for the first.
func (h *Hinted) Start(rawURL string) error {
	if h.Policy == nil || h.Client == nil || len(h.Client.Paths) == 0 {
		return errors.New("mph2: Hinted needs a Client with paths and a Policy")
	}
	if h.Cost != nil && len(h.Cost) != len(h.Client.Paths) {
		return fmt.Errorf("mph2: %d costs for %d paths", len(h.Cost), len(h.Client.Paths))
	}
	for i, p := range h.Client.Paths {
		if p.Budget != 0 {
			// The Policy places requests, not Download's scheduler, which
			// is what honours a Path.Budget.
			return fmt.Errorf("mph2: Hinted: path %s: Budget is the Client's downloads'; a Policy's rules have their own (budget=)", p.Label(i))
		}
	}
	if h.Client.EndAdjust != EndFlowControl && HintedEndAdjust(h.Policy) == EndFlowControl {
		return errors.New("mph2: Hinted: a join rule stops streams by flow control: the Client's EndAdjust must be EndFlowControl")
	}
	u, err := parseURL(rawURL)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.u != nil {
		cancel()
		return errors.New("mph2: Hinted started twice")
	}
	h.u, h.ctx, h.stop = u, ctx, cancel
	h.stats.Paths = make([]HintedPathStats, len(h.Client.Paths))
	for i, p := range h.Client.Paths {
		h.paths = append(h.paths, &hintedPath{})
		h.stats.Paths[i].Name = p.Label(i)
		h.dialPath(i)
	}
	return nil
}

// dialPath gives path i a new connection and a watch over it; h.mu is held.
func (h *Hinted) dialPath(i int) {
	hp := h.paths[i]
	hp.down = false
	hp.admit(h.Client.conn(i, h.u))
	h.probers.Add(1)
	go h.watch(h.ctx, i)
}

// revive dials every path again when all are down (their watches have
// ended): a Hinted lives on (one per origin in shunt proxy) after an outage
// that outlasted the stall timeout, and its next object tries afresh. A path
// whose dial then fails is down again, and the object fails at once.
func (h *Hinted) revive() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil || h.ctx.Err() != nil {
		return
	}
	for _, hp := range h.paths {
		if !hp.down {
			return
		}
	}
	for i := range h.paths {
		h.dialPath(i)
	}
}

// admit makes pc, still dialing, the path's connection, with estimates
// measured afresh on it (the policy sees the path as connecting until its
// handshake's RTT is in); h.mu is held or hp not yet shared.
func (hp *hintedPath) admit(pc *pathConn) {
	r, _ := estimate.NewRTT(rttSamples) // a positive count cannot fail
	if hp.pc != nil {
		hp.gone += hp.pc.received()
	}
	hp.pc, hp.dialStart, hp.rtt = pc, time.Now(), r
	hp.minRTT, hp.rttVar, hp.bw, hp.loss = 0, 0, 0, 0
}

// watch measures path i until ctx ends and redials it when its connection
// dies, as a download's lost path is (redial.go): after a backoff that
// starts over once the path delivers, until the next attempt would start
// past the stall timeout since the connection was lost or any path last
// delivered, whichever is later (a path idle for long is still redialed
// while the others deliver, as a download's is). A
// path whose first dial fails is down; a redial that comes back speaking
// another protocol than before (a server still starting: its h2c probe
// unanswered) is dropped and dialed again.
func (h *Hinted) watch(ctx context.Context, i int) {
	defer h.probers.Done()
	h.mu.Lock()
	hp := h.paths[i]
	pc := hp.pc
	h.mu.Unlock()
	var b backoff
	var lost time.Time
	proto := ""
	for {
		select {
		case <-pc.ready:
		case <-ctx.Done():
			return
		}
		if pc.err == nil && (proto == "" || pc.proto == proto) {
			if proto != "" {
				h.mu.Lock()
				h.stats.Paths[i].Redials++
				h.mu.Unlock()
			}
			proto = pc.proto
			if last := h.probe(ctx, i, hp, pc); !last.IsZero() {
				b.delivered()
			}
			lost = time.Now()
		} else if proto == "" {
			h.mu.Lock()
			hp.down = true
			h.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		h.mu.Lock()
		since := later(lost, h.lastData)
		h.mu.Unlock()
		wait, ok := b.after(time.Now(), since.Add(h.Client.stallTimeout()))
		if !ok {
			h.mu.Lock()
			hp.down = true
			h.mu.Unlock()
			return
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		switch {
		case pc.err == nil && pc.proto != proto:
			h.Client.forget(i, h.u, pc)
			pc.close()
		case !pc.dead():
			// Gone away: it closes itself once its open streams end.
			h.Client.forget(i, h.u, pc)
		}
		pc = h.Client.conn(i, h.u)
		h.mu.Lock()
		hp.admit(pc)
		h.mu.Unlock()
	}
}

// probe measures path i on its connection pc until ctx ends or pc dies or
// stops taking requests (GOAWAY): the handshake's RTT, then a PING per
// interval, the DATA received per interval while busy, and TCP_INFO. A
// connection silent by the liveness rule is closed, so that its requests
// fail and are asked for again elsewhere. It returns when the path last
// received DATA (zero: never).
func (h *Hinted) probe(ctx context.Context, i int, hp *hintedPath, pc *pathConn) (lastData time.Time) {
	if pc.h2 == nil {
		// HTTP/1.1: nothing to measure; the transport dials as it needs.
		<-ctx.Done()
		return
	}
	h.mu.Lock()
	hp.rtt.Add(pc.connect)
	hp.minRTT, hp.rttVar = pc.connect, pc.connect/2 // RTTVAR's start in RFC 6298
	h.mu.Unlock()
	last, lastAt := pc.received(), time.Now()
	live := newLiveness(h.Client.PathTimeout)
	for {
		live.sent(time.Now())
		pctx, cancel := context.WithTimeout(ctx, live.timeout())
		rtt, err := pc.h2.Conn().Ping(pctx)
		cancel()
		if ctx.Err() != nil || pc.dead() {
			return lastData
		}
		if err == nil {
			live.answered(rtt)
		} else if live.silent(time.Now(), pc.lastFrame()) {
			h.mu.Lock()
			h.stats.Paths[i].Stalls++
			h.mu.Unlock()
			pc.close()
			return lastData
		}
		loss, lerr := tcpLoss(pc.tcp)
		now, got := time.Now(), pc.received()
		h.mu.Lock()
		if got > last {
			lastData, h.lastData = now, now
		}
		if err == nil {
			srtt, _ := hp.rtt.Estimate()
			hp.rttVar = (3*hp.rttVar + (rtt - srtt).Abs()) / 4 // as RFC 6298's RTTVAR
			hp.rtt.Add(rtt)
			hp.minRTT = min(hp.minRTT, rtt)
		}
		if lerr == nil {
			hp.loss = loss
		}
		// Only an interval in which the path had work says what it can do.
		if dt := now.Sub(lastAt); got > last && hp.queued > 0 && dt > 0 {
			inst := float64(got-last) / dt.Seconds()
			if hp.bw == 0 {
				hp.bw = inst
			} else {
				hp.bw = 0.7*hp.bw + 0.3*inst
			}
		}
		h.mu.Unlock()
		if !pc.usable() {
			return lastData // GOAWAY: its open streams go on; the path is redialed
		}
		last, lastAt = got, now
		select {
		case <-ctx.Done():
			return lastData
		case <-pc.h2.Conn().Done():
			return lastData
		case <-time.After(h.pingInterval()):
		}
	}
}

// states is the policy's view of the paths; h.mu is held.
func (h *Hinted) states() []hints.PathState {
	ps := make([]hints.PathState, len(h.paths))
	for i, hp := range h.paths {
		s := hints.PathState{Name: h.stats.Paths[i].Name, DialStart: hp.dialStart, MinRTT: hp.minRTT, RTTVar: hp.rttVar, Bandwidth: hp.bw, Loss: hp.loss, Sent: hp.sent, Queued: hp.queued}
		s.RTT, s.Up = hp.rtt.Estimate()
		if h.Cost != nil {
			s.Cost = h.Cost[i]
		}
		if isClosed(hp.pc.ready) && !hp.pc.usable() {
			// A failed path is never preferred: an RTT no live path reaches.
			s.Up, s.RTT, s.MinRTT = false, time.Hour, time.Hour
		}
		ps[i] = s
	}
	return ps
}

// Close stops the measurements and closes the connections.
func (h *Hinted) Close() error {
	h.mu.Lock()
	if h.stop != nil {
		h.stop() // under h.mu: no revive starts a watch after it
	}
	h.mu.Unlock()
	h.probers.Wait()
	return h.Client.Close()
}

// Stats reports what the Hinted did so far, with each path's DATA received
// and its latest estimates.
func (h *Hinted) Stats() HintedStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	s.Paths = append([]HintedPathStats(nil), h.stats.Paths...)
	for i, hp := range h.paths {
		s.Paths[i].Received = hp.gone + hp.pc.received()
		s.Paths[i].RTT, _ = hp.rtt.Estimate()
		s.Paths[i].Bandwidth, s.Paths[i].Loss = hp.bw, hp.loss
	}
	return s
}

// Got is one object as Get returned it.
type Got struct {
	Status int
	Header http.Header // the first response's (a redundant copy's and a tail's are checked against it)
	Body   []byte
	// Decision is the policy's; Path the path whose response (or whose
	// head, when its tail was re-requested) was used; TailPath the tail's
	// path when the tail won (-1 otherwise).
	Decision  hints.Decision
	Path      int
	TailPath  int
	Request   time.Time // the request was placed (a path's connection was up)
	FirstByte time.Time // the first response byte, any copy
	Done      time.Time
}

// Get fetches rawURL (on the server Start named) with hint, placing its
// request by the policy; hdr are extra request headers (Priority). It
// returns once a copy has completed, with the whole body.
func (h *Hinted) Get(ctx context.Context, rawURL string, hint hints.Hint, hdr http.Header) (*Got, error) {
	o, err := h.open(ctx, rawURL, hint, hdr)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	<-o.ended
	o.mu.Lock()
	g, err := o.got(), o.err
	o.mu.Unlock()
	if o.winner == nil {
		return nil, err
	}
	// Nothing was read yet: the body is the winner's (after the lead's
	// head, when a tail won), as bytes are counted by where they came from.
	g.Body = make([]byte, o.lead.size)
	if _, err := io.ReadFull(o, g.Body); err != nil {
		return nil, err
	}
	return g, nil
}

// awaitFirst waits until a path's connection is up, while a path is
// dialing or being redialed; it fails once every path is down.
func (h *Hinted) awaitFirst(ctx context.Context) error {
	for {
		h.mu.Lock()
		if h.paths == nil {
			h.mu.Unlock()
			return errors.New("mph2: Hinted not started")
		}
		var errs []error
		var wait <-chan struct{}
		for i, hp := range h.paths {
			switch {
			case hp.down && hp.pc.err != nil:
				errs = append(errs, hp.pc.err)
			case hp.down:
				errs = append(errs, fmt.Errorf("path %s: connection lost, redialed %d times", h.stats.Paths[i].Name, h.stats.Paths[i].Redials))
			case hp.pc.usable():
				h.mu.Unlock()
				return nil
			case wait == nil && !isClosed(hp.pc.ready):
				wait = hp.pc.ready
			}
		}
		h.mu.Unlock()
		if len(errs) == len(h.Client.Paths) {
			return errors.Join(errs...)
		}
		// Wait for a dial to end, polling a few milliseconds apart (a
		// path between redials has none) rather than a goroutine per
		// path and call.
		select {
		case <-wait:
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// liveConn returns path p's connection once it is up: it waits while the
// connection dials, and while the path is redialed after its connection
// died (the policy may choose a path that is connecting); it fails once
// the path is down.
func (h *Hinted) liveConn(ctx context.Context, p int) (*pathConn, error) {
	for {
		h.mu.Lock()
		pc := h.paths[p].pc
		h.mu.Unlock()
		select {
		case <-pc.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if pc.usable() {
			return pc, nil
		}
		h.mu.Lock()
		down := h.paths[p].down && h.paths[p].pc == pc
		h.mu.Unlock()
		if down {
			return nil, cmp.Or(pc.err, errors.New("connection lost, not redialed"))
		}
		select { // until the path's next dial starts
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// RoundTrip makes Hinted a net/http RoundTripper for plain GETs to the
// server Start named: the hint comes from the browser's headers
// (hints.FromHeaders). It returns with the first response's header, and
// the body streams as it arrives (see hobject); Placed is told then, of the
// path whose response the header is.
func (h *Hinted) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) {
		return nil, fmt.Errorf("mph2: Hinted handles plain GETs only (got %s)", req.Method)
	}
	hint := hints.FromHeaders(req.Header)
	o, err := h.open(req.Context(), req.URL.String(), hint, req.Header)
	if err != nil {
		return nil, err
	}
	g, err := o.awaitLead()
	if err != nil {
		o.Close()
		return nil, err
	}
	if h.Placed != nil {
		h.Placed(req, hint, g)
	}
	size := o.lead.size // set once, before awaitLead returned
	hd := g.Header.Clone()
	hd.Set("Content-Length", strconv.FormatInt(size, 10))
	return &http.Response{Status: strconv.Itoa(g.Status) + " " + http.StatusText(g.Status), StatusCode: g.Status, Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: hd, ContentLength: size, Body: o, Request: req}, nil
}
