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
	"strings"
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
// says that path would deliver it first.
//
// The path state the policy sees is measured: the RTT from the TCP
// handshake, then HTTP/2 PINGs every PingInterval (smoothed as MP-H2's
// estimator, and the minimum); the bandwidth from the DATA a busy path received per PING
// interval; the loss from the kernel's count of segments that arrived out
// of order (TCP_INFO tcpi_rcv_ooopack over tcpi_segs_in: what a receiver
// sees of loss); the cost per byte from Cost.
//
// A path whose connection dies is redialed as a download's paths are
// (backing off from 100 ms to 1 s, until Client.StallTimeout has passed
// since the path last delivered) and re-admitted with fresh estimates; a
// Get while no path is up waits for one. Requests in flight on the
// connection that died fail.
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
	// Placed, if set, is told of every response RoundTrip returns: the hint
	// the request's headers gave and the path of the response whose header
	// it passes on (before the body has arrived).
	Placed func(req *http.Request, hint hints.Hint, g *Got)

	mu      sync.Mutex
	u       *url.URL
	paths   []*hintedPath
	stats   HintedStats
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
	bw        float64
	loss      float64
	sent      int64 // body bytes placed on the path (for budgets)
	queued    int64 // body bytes placed and not yet done
}

// HintedStats is what a Hinted did since Start.
type HintedStats struct {
	Paths []HintedPathStats
	// Redundant requests went on two paths; SecondWon of them completed
	// first on their second path.
	Redundant, SecondWon int
	// Tails re-requested a response's tail; TailWon of them completed before
	// the response itself.
	Tails, TailWon int
	// Wasted is body bytes read from copies that were not used (the loser
	// of a redundant pair, a response overtaken by its tail or the tail it
	// overtook). Bytes in flight when the copy was cancelled are not read;
	// HintedPathStats.Received counts them.
	Wasted int64
}

// HintedPathStats is one path's share.
type HintedPathStats struct {
	Name      string
	Requests  int   // requests sent on the path (copies and tails included)
	Used      int64 // body bytes of the path that went into returned objects
	Received  int64 // DATA payload the path's connections received (h2 only), wasted bytes included
	Redials   int   // connections that died and were replaced by a redial
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

// Start opens every path's connection to rawURL's server in the background
// and starts measuring the paths; Get waits for the first.
func (h *Hinted) Start(rawURL string) error {
	if h.Policy == nil || h.Client == nil || len(h.Client.Paths) == 0 {
		return errors.New("mph2: Hinted needs a Client with paths and a Policy")
	}
	if h.Cost != nil && len(h.Cost) != len(h.Client.Paths) {
		return fmt.Errorf("mph2: %d costs for %d paths", len(h.Cost), len(h.Client.Paths))
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
	h.u, h.stop = u, cancel
	h.stats.Paths = make([]HintedPathStats, len(h.Client.Paths))
	for i, p := range h.Client.Paths {
		hp := &hintedPath{}
		hp.admit(h.Client.conn(i, u))
		h.paths = append(h.paths, hp)
		h.stats.Paths[i].Name = p.Label(i)
		h.probers.Add(1)
		go h.watch(ctx, i)
	}
	return nil
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
	hp.minRTT, hp.bw, hp.loss = 0, 0, 0
}

// watch measures path i until ctx ends and redials it when its connection
// dies, as a download's lost path is (redial.go): after a backoff that
// starts over once the path delivers, until the next attempt would start
// past the stall timeout since it last delivered (or first connected). A
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
	var progress time.Time
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
			if progress.IsZero() {
				progress = time.Now()
			}
			if last := h.probe(ctx, hp, pc); !last.IsZero() {
				progress = last
				b.delivered()
			}
		} else if proto == "" {
			h.mu.Lock()
			hp.down = true
			h.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		wait, ok := b.after(time.Now(), progress.Add(h.Client.stallTimeout()))
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
		if pc.err == nil && pc.proto != proto {
			h.Client.forget(i, h.u, pc)
			pc.close()
		}
		pc = h.Client.conn(i, h.u)
		h.mu.Lock()
		hp.admit(pc)
		h.mu.Unlock()
	}
}

// probe measures the path on its connection pc until ctx ends or pc dies:
// the handshake's RTT, then a PING per interval, the DATA received per
// interval while busy, and TCP_INFO. It returns when the path last received
// DATA (zero: never).
func (h *Hinted) probe(ctx context.Context, hp *hintedPath, pc *pathConn) (lastData time.Time) {
	if pc.h2 == nil {
		// HTTP/1.1: nothing to measure; the transport dials as it needs.
		<-ctx.Done()
		return
	}
	h.mu.Lock()
	hp.rtt.Add(pc.connect)
	hp.minRTT = pc.connect
	h.mu.Unlock()
	last, lastAt := pc.received(), time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rtt, err := pc.h2.Conn().Ping(pctx)
		cancel()
		if ctx.Err() != nil || pc.dead() {
			return lastData
		}
		loss, lerr := tcpLoss(pc.tcp)
		now, got := time.Now(), pc.received()
		if got > last {
			lastData = now
		}
		h.mu.Lock()
		if err == nil {
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
		s := hints.PathState{Name: h.stats.Paths[i].Name, DialStart: hp.dialStart, MinRTT: hp.minRTT, Bandwidth: hp.bw, Loss: hp.loss, Sent: hp.sent, Queued: hp.queued}
		s.RTT, s.Up = hp.rtt.Estimate()
		if h.Cost != nil {
			s.Cost = h.Cost[i]
		}
		if hp.pc.dead() {
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
	stop := h.stop
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
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

// hcopy is one request of an object on one path: the whole object, or from
// off on (a tail). The fields after learn are guarded by its object's mu.
type hcopy struct {
	path   int
	off    int64
	cancel context.CancelFunc
	// learn: the hint had no size, so the response's length is counted on
	// the path (Sent, and Queued until the copy ends) once it is known.
	learn bool

	size   int64 // the object's size; -1 until the response says
	got    int64 // body bytes read, from off
	first  time.Time
	last   time.Time
	status int
	header http.Header
	// buf[:got] is read by the object's stream while the copy still writes
	// buf[got:].
	buf []byte
}

// hobject is one object's copies and the byte stream the application reads
// from them (an io.ReadCloser). The lead copy, the first whose response
// came (normally the primary), passes its bytes on as they arrive; once a
// copy completes first (the winner), the stream goes on from the winner at
// the offset already delivered (from the lead up to where a winning tail
// starts). A copy's bytes are used only once its response matched the
// lead's (length and validators), so the stream never repeats, skips or
// mixes bytes of different representations.
type hobject struct {
	h      *Hinted
	d      hints.Decision
	placed int64 // the hint's size, counted on the decision's paths
	learn  bool  // no size in the hint: copies count the response's
	rawURL string
	hdr    http.Header
	req    time.Time
	ctx    context.Context
	cancel context.CancelFunc // every copy
	events chan copyDone
	ended  chan struct{} // closed once every copy has ended (run returned)

	mu        sync.Mutex
	cond      *sync.Cond
	copies    []*hcopy // primary, redundant copy, tail, in the order started
	tail      *hcopy
	lead      *hcopy
	winner    *hcopy
	done      time.Time // the winner completed
	err       error     // every copy failed
	delivered int64
	used      []int64 // bytes delivered per path
	closed    bool
	settled   bool
}

type copyDone struct {
	c   *hcopy
	err error
}

// errBodyClosed is what a stream's Read returns after Close.
var errBodyClosed = errors.New("mph2: hinted body read after Close")

// open places rawURL's request by the policy and starts its copies; the
// object's stream can be read at once (Read waits for the bytes).
func (h *Hinted) open(ctx context.Context, rawURL string, hint hints.Hint, hdr http.Header) (*hobject, error) {
	if err := h.awaitFirst(ctx); err != nil {
		return nil, err
	}
	now := time.Now()
	h.mu.Lock()
	d := h.Policy.Decide(hint, h.states(), now)
	if d.Path < 0 {
		h.mu.Unlock()
		return nil, errors.New("mph2: the policy chose no path")
	}
	placed := max(hint.Size, 0)
	for _, p := range []int{d.Path, d.Second} {
		if p >= 0 {
			h.paths[p].sent += placed
			h.paths[p].queued += placed
		}
	}
	if d.Redundant() {
		h.stats.Redundant++
	}
	h.mu.Unlock()
	o := &hobject{h: h, d: d, placed: placed, learn: hint.Size < 0, rawURL: rawURL, hdr: hdr, req: now, events: make(chan copyDone, 3),
		ended: make(chan struct{}), used: make([]int64, len(h.paths))}
	o.cond = sync.NewCond(&o.mu)
	o.ctx, o.cancel = context.WithCancel(ctx)
	o.start(d.Path, 0)
	if d.Redundant() {
		o.start(d.Second, 0)
	}
	go o.run()
	return o, nil
}

// start runs one copy of the object on path from offset off.
func (o *hobject) start(path int, off int64) *hcopy {
	cctx, cancel := context.WithCancel(o.ctx)
	c := &hcopy{path: path, off: off, cancel: cancel, size: -1, learn: o.learn}
	hdr := o.hdr
	if off > 0 {
		hdr = o.rangeHeader(off)
	}
	o.mu.Lock()
	o.copies = append(o.copies, c)
	o.mu.Unlock()
	o.h.mu.Lock()
	o.h.stats.Paths[path].Requests++
	o.h.mu.Unlock()
	go func() { o.events <- copyDone{c, o.h.fetchCopy(cctx, o, c, o.rawURL, hdr)} }()
	return c
}

// rangeHeader is the request header of a tail from off: Range, and
// If-Range with the lead's strong validator when it has one, so a changed
// representation comes back whole (200) and fails the tail.
func (o *hobject) rangeHeader(off int64) http.Header {
	hdr := o.hdr.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	o.mu.Lock()
	lead := o.lead.header
	o.mu.Unlock()
	if et := lead.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		hdr.Set("If-Range", et)
	} else if lm := lead.Get("Last-Modified"); lm != "" {
		hdr.Set("If-Range", lm)
	}
	return hdr
}

// run owns the copies until they have all ended: the first to complete
// wins and the others are cancelled; a tail is asked for when the policy
// says so.
func (o *hobject) run() {
	h, d := o.h, o.d
	defer close(o.ended)
	defer o.cancel()
	defer func() {
		h.mu.Lock()
		for _, p := range []int{d.Path, d.Second} {
			if p >= 0 {
				h.paths[p].queued -= o.placed
			}
		}
		h.mu.Unlock()
	}()
	o.mu.Lock()
	running := len(o.copies)
	o.mu.Unlock()
	var tick <-chan time.Time
	if d.Tail > 0 {
		t := time.NewTicker(h.tailCheck())
		defer t.Stop()
		tick = t.C
	}
	var errs []error
	for running > 0 {
		select {
		case ev := <-o.events:
			running--
			if ev.err != nil {
				errs = append(errs, fmt.Errorf("path %s: %w", h.stats.Paths[ev.c.path].Name, ev.err))
				if running == 0 {
					o.mu.Lock()
					o.err = errors.Join(errs...)
					o.cond.Broadcast()
					o.mu.Unlock()
				}
				continue
			}
			o.win(ev.c)
			for ; running > 0; running-- {
				<-o.events
			}
		case <-tick:
			o.mu.Lock()
			lead, tail := o.lead, o.tail
			var tr hints.Transfer
			if lead != nil {
				tr = hints.Transfer{Path: lead.path, Size: lead.size, Received: lead.got, FirstByte: lead.first, LastByte: lead.last}
			}
			o.mu.Unlock()
			if lead == nil || tail != nil {
				continue
			}
			h.mu.Lock()
			j := hints.ShouldTail(d, tr, h.states(), time.Now())
			if j >= 0 {
				h.stats.Tails++
			}
			h.mu.Unlock()
			if j >= 0 {
				c := o.start(j, tr.Received)
				o.mu.Lock()
				o.tail = c
				o.mu.Unlock()
				running++
				tick = nil
			}
		}
	}
}

// win makes c, complete, the winner and cancels the other copies.
func (o *hobject) win(c *hcopy) {
	o.mu.Lock()
	o.winner, o.done = c, time.Now()
	for _, x := range o.copies {
		if x != c {
			x.cancel()
		}
	}
	tail := o.tail
	o.cond.Broadcast()
	o.mu.Unlock()
	o.h.mu.Lock()
	defer o.h.mu.Unlock()
	if o.d.Redundant() && c.path == o.d.Second && c != tail {
		o.h.stats.SecondWon++
	}
	if c == tail {
		o.h.stats.TailWon++
	}
}

// admit checks a copy's response against the lead's (the first response
// becomes the lead): the same length and the same validators. o.mu is held.
func (o *hobject) admit(c *hcopy, hdr http.Header, size int64) error {
	if o.lead == nil {
		if c.off > 0 {
			return errors.New("a tail before any response")
		}
		o.lead = c
		return nil
	}
	if size != o.lead.size {
		return fmt.Errorf("%d bytes, the first response %d", size, o.lead.size)
	}
	for _, k := range validators {
		if v := o.lead.header.Get(k); v != "" && hdr.Get(k) != v {
			return fmt.Errorf("%s %q, the first response's %q", k, hdr.Get(k), v)
		}
	}
	return nil
}

// validators are the response fields that name a representation: a copy
// whose differ from the lead's has other bytes.
var validators = []string{"ETag", "Last-Modified", "Repr-Digest"}

// Read passes on the object's bytes in order; see hobject.
func (o *hobject) Read(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		if o.closed {
			return 0, errBodyClosed
		}
		if o.lead != nil && o.delivered >= o.lead.size {
			return 0, io.EOF
		}
		src := o.lead
		if w := o.winner; w != nil && w.off <= o.delivered {
			src = w
		}
		// A winning tail starts at or below what the lead has read.
		if src != nil && src.off+src.got > o.delivered {
			n := copy(p, src.buf[o.delivered-src.off:src.got])
			o.delivered += int64(n)
			o.used[src.path] += int64(n)
			return n, nil
		}
		if o.err != nil {
			return 0, o.err
		}
		o.cond.Wait()
	}
}

// Close cancels the copies still running, waits for them and counts the
// object's bytes: those read but not delivered are wasted.
func (o *hobject) Close() error {
	o.mu.Lock()
	o.closed = true
	o.cond.Broadcast()
	o.mu.Unlock()
	o.cancel()
	<-o.ended
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.settled {
		return nil
	}
	o.settled = true
	wasted := -o.delivered
	for _, c := range o.copies {
		wasted += c.got
	}
	o.h.mu.Lock()
	defer o.h.mu.Unlock()
	o.h.stats.Wasted += wasted
	for p, n := range o.used {
		o.h.stats.Paths[p].Used += n
	}
	return nil
}

// got describes the object so far: the lead's response, the winner once
// there is one. o.mu is held.
func (o *hobject) got() *Got {
	g := &Got{Decision: o.d, Path: -1, TailPath: -1, Request: o.req, Done: o.done}
	if o.lead != nil {
		g.Status, g.Header, g.Path = o.lead.status, o.lead.header, o.lead.path
	}
	if w := o.winner; w != nil && w != o.tail {
		g.Path = w.path
	} else if w != nil {
		g.TailPath = w.path
	}
	for _, c := range o.copies {
		if !c.first.IsZero() && (g.FirstByte.IsZero() || c.first.Before(g.FirstByte)) {
			g.FirstByte = c.first
		}
	}
	return g
}

// awaitLead waits until the object has a response to pass on, or failed.
func (o *hobject) awaitLead() (*Got, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.lead == nil && o.err == nil {
		o.cond.Wait()
	}
	if o.lead == nil {
		return nil, o.err
	}
	return o.got(), nil
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
			case !hp.pc.dead() && isClosed(hp.pc.ready):
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

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// fetchCopy runs one copy: the request on its path, the body read into
// its buffer, each read passed on to the object's stream.
func (h *Hinted) fetchCopy(ctx context.Context, o *hobject, c *hcopy, rawURL string, hdr http.Header) error {
	pc, err := h.liveConn(ctx, c.path)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, _, err := pc.roundTrip(req, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close() // before the end: RST_STREAM (CANCEL)
	now := time.Now()
	size := resp.ContentLength
	switch {
	case c.off == 0 && resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %s", resp.Status)
	case c.off > 0 && resp.StatusCode != http.StatusPartialContent:
		return fmt.Errorf("tail from %d: status %s (no ranges, or the representation changed)", c.off, resp.Status)
	case c.off > 0:
		if size, err = rangeTotal(resp.Header.Get("Content-Range"), c.off); err != nil {
			return err
		}
	}
	if size < 0 {
		return errors.New("response without a length")
	}
	o.mu.Lock()
	if err := o.admit(c, resp.Header, size); err != nil {
		o.mu.Unlock()
		return err
	}
	c.status, c.header, c.size, c.first, c.last = resp.StatusCode, resp.Header, size, now, now
	c.buf = make([]byte, size-c.off)
	o.cond.Broadcast()
	o.mu.Unlock()
	if c.learn {
		// A browser's request says no size; a budget or a finish estimate
		// needs the path's bytes all the same.
		n := size - c.off
		h.mu.Lock()
		h.paths[c.path].sent += n
		h.paths[c.path].queued += n
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.paths[c.path].queued -= n
			h.mu.Unlock()
		}()
	}
	for n := int64(0); n < int64(len(c.buf)); {
		k, err := resp.Body.Read(c.buf[n:])
		n += int64(k)
		if k > 0 {
			o.mu.Lock()
			c.got, c.last = n, time.Now()
			o.cond.Broadcast()
			o.mu.Unlock()
		}
		if err == io.EOF && n < int64(len(c.buf)) {
			return fmt.Errorf("body ended after %d of %d bytes", n, len(c.buf))
		}
		if err != nil && err != io.EOF {
			return err
		}
	}
	return nil
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
		if pc.err == nil && !pc.dead() {
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

// rangeTotal checks a Content-Range of bytes off-(total-1)/total and
// returns total.
func rangeTotal(cr string, off int64) (int64, error) {
	spec, ok := strings.CutPrefix(cr, "bytes ")
	rng, tot, ok2 := strings.Cut(spec, "/")
	first, last, ok3 := strings.Cut(rng, "-")
	a, err1 := strconv.ParseInt(first, 10, 64)
	b, err2 := strconv.ParseInt(last, 10, 64)
	total, err3 := strconv.ParseInt(tot, 10, 64)
	if !ok || !ok2 || !ok3 || errors.Join(err1, err2, err3) != nil || a != off || b != total-1 || total <= off {
		return 0, fmt.Errorf("Content-Range %q: want bytes %d-LAST/TOTAL to the end", cr, off)
	}
	return total, nil
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
