package mph2

// One object of a Hinted load: its copies (the primary request, a
// redundant copy, a tail re-requested by Range) and the byte stream the
// application reads from them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/hints"
)

// hcopy is one request of an object on one path: the whole object, or from
// off on (a tail, a split's rest, or the rest after a connection died), or
// a split's head, up to end. The fields after check are guarded by its
// object's mu.
type hcopy struct {
	path   int
	off    int64
	end    int64 // > 0: a head, the bytes before end (0: to the object's end); once the response came, where its bytes end
	cancel context.CancelFunc
	// learn: the hint had no size, so the response's length is counted on
	// the path (Sent, and Queued until the copy ends) once it is known.
	learn bool
	// check, for a whole copy asked for again without a validator, is the
	// object's first bytes as received before: the copy's must equal them.
	check []byte
	// hold: the copy's stream gets credit only credit bytes ahead of what
	// has arrived (a manual window), so that a join can stop it at a byte.
	hold   bool
	credit int64

	size   int64     // the object's size; -1 until the response says
	got    int64     // body bytes read, from off
	held   int64     // a held copy's credit given: the offset the server may send up to (0: not held)
	sent   time.Time // the request went out on its connection
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
//
// When every copy has failed with its path's connection (closed, reset,
// GOAWAY, silent), the object is asked for again on another live path
// (reissue): by Range + If-Range from the bytes held when it has a
// validator, else whole with its first bytes checked against those held;
// the stream goes on from whichever copy holds the next byte.
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
	copies    []*hcopy // primary, redundant copy, tail, re-issues, in the order started
	second    *hcopy   // the redundant copy
	tail      *hcopy   // the tail or hedge
	lead      *hcopy   // the first copy from byte 0 whose response came
	ref       *hcopy   // the first copy whose response came: the others must match it
	winner    *hcopy
	done      time.Time // the winner completed
	err       error     // every copy failed
	delivered int64
	used      []int64 // bytes delivered per path
	closed    bool
	settled   bool
	retry     reissuer // run's
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
	h.revive()
	if err := h.awaitFirst(ctx); err != nil {
		return nil, err
	}
	pl := h.decide(hint, hints.ParseUrgency(hdr.Get("Priority")))
	d := pl.Decision
	if d.Path < 0 {
		return nil, errors.New("mph2: the policy chose no path")
	}
	now := time.Now()
	o := &hobject{h: h, d: d, placed: max(hint.Size, 0), learn: hint.Size < 0, rawURL: rawURL, hdr: hdr, req: now, events: make(chan copyDone, 3),
		ended: make(chan struct{}), used: make([]int64, len(h.paths))}
	o.cond = sync.NewCond(&o.mu)
	o.ctx, o.cancel = context.WithCancel(ctx)
	if d.Split > 0 {
		o.start(d.Path, 0, d.Split, nil, pl.turns[d.Path])
		o.start(d.Rest, d.Split, 0, nil, pl.turns[d.Rest])
	} else {
		o.start(d.Path, 0, 0, nil, pl.turns[d.Path])
	}
	if d.Redundant() {
		o.second = o.start(d.Second, 0, 0, nil, pl.turns[d.Second])
	}
	go o.run()
	return o, nil
}

// decide places a request by the policy and counts its bytes on the paths
// it chose: at once, or, when the policy gathers, together with the requests
// asked for within Policy.Gather of the first of them, the most urgent first
// (hints.First). urgency is what the request's Priority asks the server for
// (-1: none), which the batch's turns go by.
func (h *Hinted) decide(hint hints.Hint, urgency int) placed {
	h.mu.Lock()
	if h.Policy.Gather <= 0 {
		defer h.mu.Unlock()
		return h.turnsFor(h.place(hint, time.Now()))
	}
	w := gathered{hint, urgency, make(chan placed, 1)}
	h.batch = append(h.batch, w)
	if len(h.batch) == 1 {
		time.AfterFunc(h.Policy.Gather, h.placeBatch)
	}
	h.mu.Unlock()
	return <-w.d
}

// gathered is a request waiting for its batch to be placed.
type gathered struct {
	hint    hints.Hint
	urgency int // the request's Priority's; -1 none
	d       chan placed
}

// byFirst compares as hints.First orders.
func byFirst(x, y hints.Hint) int {
	switch {
	case hints.First(x, y):
		return -1
	case hints.First(y, x):
		return 1
	}
	return 0
}

// placed is a decision and the turns of its copies on their paths.
type placed struct {
	hints.Decision
	turns map[int]*turn
}

// turn orders the requests of a path: a copy sends its request once the
// copy placed on the path before it has sent its own (or ended), so the
// requests leave in the order placed, the most urgent of a batch first.
// Each copy runs in a goroutine of its own, and goroutines released
// together (a batch placed, a connection's handshake done) run in no set
// order (Go runs the newest first): a batch's requests reached the server
// in any order, and a server sends what has arrived, so on hints-latency's
// google (h75) three u=2 images went ahead of the u=1 script placed
// before them.
type turn struct {
	prev <-chan struct{} // closed when the previous copy's request is sent; nil: none
	sent chan struct{}
	once sync.Once
}

// nextTurn is the turn of a copy placed on path p now; h.mu is held.
func (h *Hinted) nextTurn(p int) *turn {
	t := &turn{sent: make(chan struct{})}
	if last := h.paths[p].lastTurn; last != nil {
		t.prev = last.sent
	}
	h.paths[p].lastTurn = t
	return t
}

// turnsFor takes the turns of d's copies; h.mu is held.
func (h *Hinted) turnsFor(d hints.Decision) placed {
	pl := placed{Decision: d, turns: map[int]*turn{}}
	if d.Path < 0 {
		return pl
	}
	for p := range placedOn(d, 0) {
		pl.turns[p] = h.nextTurn(p)
	}
	return pl
}

// wait returns when the previous copy's request has been sent.
func (t *turn) wait(ctx context.Context) error {
	if t.prev == nil {
		return nil
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// done lets the next copy on the path send its request.
func (t *turn) done() { t.once.Do(func() { close(t.sent) }) }

// placeBatch places the gathered requests, the most urgent first, and lets
// them go out in turn.
func (h *Hinted) placeBatch() {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.batch
	h.batch = nil
	slices.SortStableFunc(b, func(x, y gathered) int { return byFirst(x.hint, y.hint) })
	// The server orders responses by the urgency the requests ask for,
	// which may differ from the hint's (a page's async script asks u=1).
	batch := make([]hints.Hint, len(b))
	for i, w := range b {
		batch[i] = w.hint
		if w.urgency >= 0 {
			batch[i].Urgency = w.urgency
		}
	}
	now := time.Now()
	ds := make([]hints.Decision, len(b))
	for i, w := range b {
		ds[i] = h.place(w.hint, now)
	}
	// They go out (take their turns) in the order the server should answer
	// them, by what they ask it for, which the placing's order need not be.
	out := make([]int, len(b))
	for i := range out {
		out[i] = i
	}
	slices.SortStableFunc(out, func(x, y int) int { return byFirst(batch[x], batch[y]) })
	for _, i := range out {
		b[i].d <- h.turnsFor(ds[i]) // buffered: the caller may not be waiting yet
	}
}

// place decides one request and counts its bytes on the paths chosen;
// h.mu is held.
func (h *Hinted) place(hint hints.Hint, now time.Time) hints.Decision {
	d := h.Policy.DecideLoad(hint, h.states(), now, h.Expect)
	if d.Path < 0 {
		return d
	}
	for p, n := range placedOn(d, max(hint.Size, 0)) {
		h.paths[p].sent += n
		h.paths[p].queued += n
	}
	if d.Redundant() {
		h.stats.Redundant++
	}
	if d.Split > 0 {
		h.stats.Splits++
	}
	return d
}

// placedOn is the bytes of a request of size bytes decision d puts on each
// path: the whole on Path (and on Second), or a split's head and rest.
func placedOn(d hints.Decision, size int64) map[int]int64 {
	if d.Split > 0 {
		return map[int]int64{d.Path: d.Split, d.Rest: size - d.Split}
	}
	on := map[int]int64{d.Path: size}
	if d.Second >= 0 {
		on[d.Second] = size
	}
	return on
}

// start runs one copy of the object on path from offset off, up to end (0:
// the object's end; check: see hcopy).
func (o *hobject) start(path int, off, end int64, check []byte, t *turn) *hcopy {
	cctx, cancel := context.WithCancel(o.ctx)
	c := &hcopy{path: path, off: off, end: end, cancel: cancel, size: -1, learn: o.learn, check: check}
	hdr := o.hdr
	if off > 0 || end > 0 {
		hdr = o.rangeHeader(off, end)
	}
	o.mu.Lock()
	// A join rule's whole request, the object's first copy, is held.
	c.hold = o.d.Join && o.d.Split == 0 && off == 0 && end == 0 && len(o.copies) == 0 && o.h.Client.EndAdjust == EndFlowControl
	o.copies = append(o.copies, c)
	o.mu.Unlock()
	o.h.mu.Lock()
	o.h.stats.Paths[path].Requests++
	if t == nil { // a copy made later (tail, hedge, retry) takes its turn now
		t = o.h.nextTurn(path)
	}
	o.h.mu.Unlock()
	go func() { o.events <- copyDone{c, o.h.fetchCopy(cctx, o, c, o.rawURL, hdr, t)} }()
	return c
}

// rangeHeader is the request header of a tail from off (or a head up to
// end): Range, and If-Range with the lead's strong validator when it has
// one, so a changed representation comes back whole (200) and fails the
// tail. A split's two requests go out before any response: no If-Range.
func (o *hobject) rangeHeader(off, end int64) http.Header {
	hdr := o.hdr.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	last := ""
	if end > 0 {
		last = strconv.FormatInt(end-1, 10)
	}
	hdr.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+last)
	o.mu.Lock()
	var lead http.Header
	if o.lead != nil {
		lead = o.lead.header
	}
	o.mu.Unlock()
	if v := validator(lead); v != "" {
		hdr.Set("If-Range", v)
	}
	return hdr
}

// run owns the copies until they have all ended: the first to complete
// the object (with the copies before it: a split's head and rest) wins and
// the others are cancelled; a tail is asked for when the policy says so;
// the object is asked for again from the bytes held when the last copy
// running failed with its connection, or a split's part completed after
// the other failed so.
func (o *hobject) run() {
	h, d := o.h, o.d
	defer close(o.ended)
	defer o.cancel()
	defer func() {
		o.mu.Lock()
		d := o.d // a join has split it
		o.mu.Unlock()
		h.mu.Lock()
		for p, n := range placedOn(d, o.placed) {
			h.paths[p].queued -= n
		}
		h.mu.Unlock()
	}()
	o.mu.Lock()
	running := len(o.copies)
	joining := o.copies[0].hold && !o.learn
	o.mu.Unlock()
	var tick <-chan time.Time
	if d.Tail > 0 || d.Hedge || joining {
		t := time.NewTicker(h.tailCheck())
		defer t.Stop()
		tick = t.C
	}
	ended := map[*hcopy]bool{}
	var errs []error
	var lost *hcopy // the last copy that failed with its connection
	for running > 0 {
		select {
		case ev := <-o.events:
			running--
			ended[ev.c] = true
			if ev.err != nil {
				h.mu.Lock()
				errs = append(errs, fmt.Errorf("path %s: %w", h.stats.Paths[ev.c.path].Name, ev.err))
				h.mu.Unlock()
				lost = nil // asked again only when the last failure is the connection's
				if connLost(ev.err) {
					lost = ev.c
				}
			} else if o.whole() {
				o.win(ev.c)
				for ; running > 0; running-- {
					<-o.events
				}
				continue
			}
			// A copy failed, or a split's part is done without the
			// other's bytes.
			if running > 0 {
				continue
			}
			if lost != nil && o.ctx.Err() == nil {
				err := o.reissue(lost.path)
				if err == nil {
					// The tail rule judged the lead's transfer,
					// which has ended.
					running, tick, errs, lost = 1, nil, errs[:0], nil
					continue
				}
				errs = append(errs, err)
			}
			o.mu.Lock()
			o.err = errors.Join(errs...)
			if o.retry.n > 0 {
				o.err = fmt.Errorf("asked again %d times: %w", o.retry.n, o.err)
			}
			o.cond.Broadcast()
			o.mu.Unlock()
		case <-tick:
			o.mu.Lock()
			tail := o.tail
			o.mu.Unlock()
			switch {
			case joining:
				if o.join() {
					running++
					tick = nil
				}
			case tail == nil:
				if o.askRest() {
					running++
					if !d.Hedge {
						tick = nil
					}
				}
			case o.cut(ended):
				tick = nil
			}
		}
	}
}

// whole reports whether the copies hold every byte of the object (a
// split's head and rest, or any copy that completed).
func (o *hobject) whole() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ref == nil {
		return false
	}
	spans := make([]span, len(o.copies))
	for i, c := range o.copies {
		spans[i] = span{c.off, c.got}
	}
	return held(spans) >= o.ref.size
}

// transfer is c's progress for the policy, its size the hint's until the
// response says; o.mu is held.
func (o *hobject) transfer(c *hcopy) hints.Transfer {
	size := c.size
	if size < 0 && o.placed > 0 {
		size = o.placed
	}
	return hints.Transfer{Path: c.path, Size: size, From: c.off, Received: c.off + c.got, Start: c.sent, FirstByte: c.first, LastByte: c.last}
}

// askRest asks for the rest of the object on another path when the rule's
// tail (on the lead's response) or hedge (on the first request) says so
// and its copies' budget allows; it reports whether it did.
func (o *hobject) askRest() bool {
	h, d := o.h, o.d
	o.mu.Lock()
	subject := o.lead
	if d.Hedge {
		subject = o.copies[0]
	}
	var tr hints.Transfer
	if subject != nil {
		tr = o.transfer(subject)
	}
	o.mu.Unlock()
	if subject == nil {
		return false
	}
	h.mu.Lock()
	paths, now := h.states(), time.Now()
	var j int
	if d.Hedge {
		j = hints.ShouldHedge(d, tr, paths, now)
	} else {
		j = hints.ShouldTail(d, tr, paths, now)
	}
	rest := tr.Size - tr.Received
	var sent int64
	for _, hp := range h.paths {
		sent += hp.sent
	}
	if j >= 0 && hints.CopyFits(d.CopyPct, h.copyCharge, max(h.Expect, sent), rest) && h.Policy.CapFits(j, rest, paths, now, h.Expect) {
		h.stats.Tails++
		h.copyCharge += rest
		h.paths[j].sent += rest // the path's bytes, for its cap
	} else {
		j = -1
	}
	h.mu.Unlock()
	if j < 0 {
		return false
	}
	c := o.start(j, tr.Received, 0, nil, nil)
	o.mu.Lock()
	o.tail = c
	o.mu.Unlock()
	return true
}

// join shares the rest of the held first copy with a path that has come up
// idle, when the policy says that ends the object sooner (hints.Policy.Join):
// the copy's credit is never given past the cut, so its stream stops
// there, and the bytes from the cut are asked for on that path; the object
// is then split as a split rule's is. It reports whether it joined.
func (o *hobject) join() bool {
	h := o.h
	o.mu.Lock()
	c := o.copies[0]
	if c.held == 0 || len(o.copies) > 1 {
		o.mu.Unlock()
		return false
	}
	tr := o.transfer(c)
	tr.Held = c.held
	h.mu.Lock()
	j, at := h.Policy.Join(o.d, tr, h.states(), time.Now(), h.Expect)
	if j >= 0 {
		moved := o.placed - at
		h.paths[c.path].sent -= moved
		h.paths[c.path].queued -= moved
		h.paths[j].sent += moved
		h.paths[j].queued += moved
		h.stats.Joins++
	}
	h.mu.Unlock()
	if j >= 0 {
		c.end = at
		o.d.Split, o.d.Rest = at, j
	}
	o.mu.Unlock()
	if j < 0 {
		return false
	}
	o.start(j, at, 0, nil, nil)
	return true
}

// cut cancels whichever of the hedged request and its hedge is clearly
// behind the other (hints.Behind) while both run; it reports whether it
// did.
func (o *hobject) cut(ended map[*hcopy]bool) bool {
	o.mu.Lock()
	a, b := o.copies[0], o.tail
	if ended[a] || ended[b] {
		o.mu.Unlock()
		return false
	}
	ta, tb := o.transfer(a), o.transfer(b)
	o.mu.Unlock()
	o.h.mu.Lock()
	k := hints.Behind(ta, tb, o.h.states(), time.Now())
	if k >= 0 {
		o.h.stats.Cut++
	}
	o.h.mu.Unlock()
	switch k {
	case 0:
		a.cancel()
	case 1:
		b.cancel()
	}
	return k >= 0
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
	if c == o.second {
		o.h.stats.SecondWon++
	}
	if c == tail {
		o.h.stats.TailWon++
	}
}

// admit checks a copy's response against the first (ref): the same length
// and the same validators. The first copy from byte 0 to respond becomes
// the lead (a split's rest may respond before its head). o.mu is held.
func (o *hobject) admit(c *hcopy, hdr http.Header, size int64) error {
	if ref := o.ref; ref != nil {
		if size != ref.size {
			return fmt.Errorf("%d bytes, the first response %d", size, ref.size)
		}
		for _, k := range validators {
			if v := ref.header.Get(k); v != "" && hdr.Get(k) != v {
				return fmt.Errorf("%s %q, the first response's %q", k, hdr.Get(k), v)
			}
		}
	} else {
		o.ref = c
	}
	if o.lead == nil && c.off == 0 {
		o.lead = c
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
		if src := o.source(); src != nil {
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

// source is a copy holding the next byte to deliver: the winner, else the
// lead, else any other (the lead's connection died). Every copy with a
// buffer matched the lead's response (admit) and holds only bytes checked
// where it could not (hcopy.check), so any will do. o.mu is held.
func (o *hobject) source() *hcopy {
	holds := func(c *hcopy) bool {
		return c != nil && c.buf != nil && c.off <= o.delivered && c.off+c.got > o.delivered
	}
	if holds(o.winner) {
		return o.winner
	}
	if holds(o.lead) {
		return o.lead
	}
	for _, c := range o.copies {
		if holds(c) {
			return c
		}
	}
	return nil
}

// reissue asks for the object again after its last running copy failed
// on path failed with its connection: on the live path reissuePath picks,
// from where planResume says, when the reissuer allows; while no path is
// live it waits for one. It fails once no copy of the object has made
// progress for the Client's stall timeout.
func (o *hobject) reissue(failed int) error {
	h := o.h
	stall := h.Client.stallTimeout()
	o.mu.Lock()
	progress := o.req
	spans := make([]span, len(o.copies))
	for i, c := range o.copies {
		if c.last.After(progress) {
			progress = c.last
		}
		spans[i] = span{c.off, c.got}
	}
	v := ""
	if o.lead != nil {
		v = validator(o.lead.header)
	}
	o.mu.Unlock()
	wait, ok := o.retry.wait(time.Now(), progress, stall)
	if !ok {
		return fmt.Errorf("no copy delivered a byte for %v", stall)
	}
	select {
	case <-time.After(wait):
	case <-o.ctx.Done():
		return o.ctx.Err()
	}
	ctx, cancel := context.WithDeadline(o.ctx, progress.Add(stall))
	defer cancel()
	for {
		h.mu.Lock()
		live, rtt := make([]bool, len(h.paths)), make([]time.Duration, len(h.paths))
		for i, hp := range h.paths {
			live[i] = !hp.down && hp.pc.usable()
			rtt[i], _ = hp.rtt.Estimate()
		}
		h.mu.Unlock()
		p := reissuePath(live, rtt, failed)
		if p >= 0 {
			r := planResume(spans, v)
			o.start(p, r.off, 0, o.held(r.check), nil)
			h.mu.Lock()
			h.stats.Reissued++
			h.mu.Unlock()
			return nil
		}
		if err := h.awaitFirst(ctx); err != nil {
			return fmt.Errorf("no path to ask again on: %w", err)
		}
	}
}

// held returns a copy of the object's first n bytes from the copies that
// hold them (nil for 0).
func (o *hobject) held(n int64) []byte {
	if n == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	b := make([]byte, n)
	for x := int64(0); x < n; {
		k := 0
		for _, c := range o.copies {
			if c.buf != nil && c.off <= x && c.off+c.got > x {
				k = copy(b[x:], c.buf[x-c.off:c.got])
				break
			}
		}
		if k == 0 {
			panic("mph2: held bytes with a gap") // planResume counts only bytes without one
		}
		x += int64(k)
	}
	return b
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
	if l := o.lead; l != nil {
		g.Status, g.Header, g.Path = l.status, l.header, l.path
		if l.end < l.size {
			// A split's head (206): the object the caller asked for
			// is the whole representation.
			g.Status, g.Header = http.StatusOK, l.header.Clone()
			g.Header.Del("Content-Range")
			g.Header.Set("Content-Length", strconv.FormatInt(l.size, 10))
		}
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

// fetchCopy runs one copy: the request on its path, the body read into
// its buffer, each read passed on to the object's stream.
func (h *Hinted) fetchCopy(ctx context.Context, o *hobject, c *hcopy, rawURL string, hdr http.Header, t *turn) error {
	defer t.done() // also when the request never went out
	pc, err := h.liveConn(ctx, c.path)
	if err != nil {
		return err
	}
	if err := t.wait(ctx); err != nil {
		return err
	}
	o.mu.Lock()
	c.sent = time.Now()
	o.mu.Unlock()
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: t.done}), http.MethodGet, rawURL, nil)
	if err != nil {
		return finalError{err}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	var opts h2.StreamOptions
	if h.Client.EndAdjust == EndFlowControl {
		// The connection's streams start with flowInitialWindow: a held
		// copy is given its credit by hand, the others h2's usual window.
		opts.ReceiveWindow = hintedWindow
		if c.hold {
			c.credit = h.holdCredit(c.path)
			opts = h2.StreamOptions{ManualWindow: true, ReceiveWindow: uint32(c.credit)}
		}
	}
	resp, h2s, err := pc.roundTripOpts(req, opts)
	if err != nil {
		return err
	}
	defer resp.Body.Close() // before the end: RST_STREAM (CANCEL)
	now := time.Now()
	size := resp.ContentLength
	end := c.end
	switch {
	case c.off == 0 && end > 0 && resp.StatusCode == http.StatusOK:
		end = 0 // a server without ranges sends a split's head whole
	case c.off == 0 && end == 0 && resp.StatusCode != http.StatusOK:
		return finalError{fmt.Errorf("status %s", resp.Status)}
	case resp.StatusCode != http.StatusPartialContent && (c.off > 0 || end > 0):
		return finalError{fmt.Errorf("from byte %d: status %s (no ranges, or the representation changed)", c.off, resp.Status)}
	}
	if c.off > 0 || end > 0 {
		if size, err = rangeTotal(resp.Header.Get("Content-Range"), c.off, end); err != nil {
			return finalError{err}
		}
	}
	if size < 0 {
		return finalError{errors.New("response without a length")}
	}
	if end == 0 || end > size {
		end = size
	}
	o.mu.Lock()
	if err := o.admit(c, resp.Header, size); err != nil {
		o.mu.Unlock()
		return finalError{err}
	}
	c.status, c.header, c.size, c.first, c.last, c.end = resp.StatusCode, resp.Header, size, now, now, end
	c.buf = make([]byte, end-c.off)
	if c.hold && h2s != nil && opts.ManualWindow {
		c.held = min(c.off+c.credit, end)
	}
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
	// lim is where the copy's bytes end, which a join moves to its cut.
	for n, lim := int64(0), int64(len(c.buf)); n < lim; {
		k, err := resp.Body.Read(c.buf[n:lim])
		if end := min(n+int64(k), int64(len(c.check))); n < end && !bytes.Equal(c.buf[n:end], c.check[n:end]) {
			return finalError{fmt.Errorf("asked again without a validator, the object differs from the bytes received before it (in %d-%d)", n, end-1)}
		}
		n += int64(k)
		var grow int64
		if k > 0 {
			if c.hold {
				c.credit = max(c.credit, h.holdCredit(c.path)) // as the path's bandwidth shows
			}
			o.mu.Lock()
			c.got, c.last = n, time.Now()
			lim = c.end - c.off
			if c.held > 0 {
				// Credit a quarter at a time, and the last bytes to the end.
				if t := min(c.end, c.off+n+c.credit); t-c.held >= c.credit/4 || t == c.end && t > c.held {
					grow, c.held = t-c.held, t
				}
			}
			o.cond.Broadcast()
			o.mu.Unlock()
		}
		if grow > 0 {
			h2s.GrowWindow(uint32(grow)) // fails only once the stream has ended
		}
		if err == io.EOF && n < lim {
			return fmt.Errorf("body ended after %d of %d bytes: %w", n, lim, io.ErrUnexpectedEOF)
		}
		if err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

// hintedWindow is a Hinted stream's receive window on a connection whose
// streams start with flowInitialWindow (EndFlowControl): h2's default.
const hintedWindow = 1 << 20

// holdCredit is how far ahead of the bytes received a held copy on path p
// lets the server send: two round trips at the path's bandwidth, at least
// 64 KB (a held stream must not be slower than the others).
func (h *Hinted) holdCredit(p int) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	hp := h.paths[p]
	return max(64<<10, int64(2*hp.bw*hp.minRTT.Seconds()))
}

// rangeTotal checks a Content-Range of bytes off-(end-1)/total, or with
// end 0 off-(total-1)/total, and returns total.
func rangeTotal(cr string, off, end int64) (int64, error) {
	first, last, total, err := content.ParseContentRange(cr)
	if end == 0 && (err != nil || first != off || last != total-1) {
		return 0, fmt.Errorf("Content-Range %q: want bytes %d-LAST/TOTAL to the end", cr, off)
	}
	if end > 0 && (err != nil || first != off || last != min(end, total)-1) {
		return 0, fmt.Errorf("Content-Range %q: want bytes %d-%d/TOTAL", cr, off, end-1)
	}
	return total, nil
}
