package mph2

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/multipath"
)

type evKind uint8

const (
	evHeaders evKind = iota
	evData
	evEnd      // the stream's body ended (err nil) or failed
	evRTT      // a PING sample
	evPathDown // the path's connection failed
	evSuspend  // the path went silent: PING unanswered, no frame, for its timeout
	evResume   // a silent path answered or delivered again
	evHanded   // the first response went to the caller (Options.HandOver)
	evRedialed // a lost path's new connection is ready (or failed): pc
	evFresh    // a suspended path's fresh connection is ready: pc, beside old
)

// event is what the helper goroutines report to the owner.
type event struct {
	kind   evKind
	stream multipath.StreamID
	path   int
	// evHeaders
	res   *http.Response
	h2s   *h2.Stream
	first int64 // object offset of the body's first byte
	last  int64 // object offset just past the body's last byte, -1 unknown
	size  int64 // the object's complete length, -1 unknown
	// evData
	buf *[]byte
	n   int
	// evRTT
	rtt time.Duration
	err error
	// The connection a path event is about (evRTT, evPathDown, evSuspend,
	// evResume, evRedialed, evFresh): one replaced by a redial is past news.
	pc *pathConn
	// evFresh: the suspended connection pc is to replace.
	old *pathConn
}

// stream is the owner's record of one request.
type stream struct {
	id      multipath.StreamID
	path    int
	start   int64 // requested range [start, end); end -1: the whole object
	end     int64
	first   int64 // object offset of the body's first byte: start, or 0 for a 200
	cancel  context.CancelFunc
	h2s     *h2.Stream // nil until headers, and for HTTP/1.1
	manual  bool       // the stream's window is granted by grant
	headers bool
	recv    int64 // body bytes received
	bodyLen int64 // body bytes the response announced; -1 unknown
	granted int64 // window credit given, in body bytes from the first
	limit   int64 // credit SetEnd allows; -1 none
}

// download is one Download: the scheduler and the state only the owner
// goroutine (run) touches.
type download struct {
	c     *Client
	ctx   context.Context
	stopC context.CancelFunc
	u     *url.URL
	w     io.WriterAt
	o     Options
	s     *multipath.Scheduler
	start time.Time

	// parent is Download's context: a response handed over outlives the
	// download on it.
	parent context.Context
	asked  bool // the first request has been made

	events  chan event
	wg      sync.WaitGroup
	conns   []*pathConn
	data0   []int64 // each h2 connection's DATA count at the start
	gone    []int64 // DATA received on the path's connections that died
	body    []int64 // body bytes read per path (HTTP/1.1 paths' Received)
	streams map[multipath.StreamID]*stream
	down    []bool
	errs    []string
	// A path whose connection died is redialed (paced by its backoff)
	// while redialing; redials counts its new connections.
	redialing []bool
	backoffs  []backoff
	redials   []int
	// A suspended path is dialed afresh (refresh) until freshStop[p] is
	// called: it is back, replaced, lost or down.
	freshStop []context.CancelFunc
	refused   []string // why a path was refused for this server
	// switchFirst[k] is when the path of the scheduler's k-th Switch first
	// delivered after it; zero until then.
	switchFirst []time.Time
	// Suspensions per path: how many, since when the current one runs, and
	// how long the ended ones lasted.
	suspensions []int
	suspendedAt []time.Time
	suspended   []time.Duration
	progress    time.Time // the last time any path delivered body bytes
	ignored     bool
	// validator is the first 200/206's strong ETag (else Last-Modified) and
	// the path it came on: every range must come from that version.
	validator     string
	validatorPath int
	written       int64
	told          bool // OnResponse called
	done          bool
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func newDownload(ctx context.Context, c *Client, u *url.URL, w io.WriterAt, o Options, s *multipath.Scheduler, start time.Time) *download {
	n := len(c.Paths)
	d := &download{c: c, u: u, w: w, o: o, s: s, start: start,
		events:  make(chan event, 64),
		streams: make(map[multipath.StreamID]*stream),
		conns:   make([]*pathConn, n), data0: make([]int64, n), gone: make([]int64, n), body: make([]int64, n),
		down: make([]bool, n), errs: make([]string, n), refused: make([]string, n),
		redialing: make([]bool, n), backoffs: make([]backoff, n), redials: make([]int, n), freshStop: make([]context.CancelFunc, n),
		suspensions: make([]int, n), suspendedAt: make([]time.Time, n), suspended: make([]time.Duration, n), progress: start}
	d.parent = ctx
	d.ctx, d.stopC = context.WithCancel(ctx)
	return d
}

// stop ends the helpers and waits for them.
func (d *download) stop() {
	d.stopC()
	for _, st := range d.streams {
		st.cancel() // the first one's context is not d.ctx's
	}
	d.wg.Wait()
	// A fresh connection sent but not taken (the download ended first) is
	// no one's: the Client adopts one only when it replaces a path's.
	for {
		select {
		case ev := <-d.events:
			if ev.kind == evFresh {
				ev.pc.close()
			}
		default:
			return
		}
	}
}

// send hands an event to the owner unless the download is over.
func (d *download) send(ev event) bool {
	select {
	case d.events <- ev:
		return true
	case <-d.ctx.Done():
		if ev.buf != nil {
			bufPool.Put(ev.buf)
		}
		return false
	}
}

func (d *download) run() (*Result, error) {
	for i := range d.c.Paths {
		d.conns[i] = d.c.conn(i, d.u)
		select {
		case <-d.conns[i].ready:
			d.data0[i] = d.conns[i].received()
		default: // dialing now: everything it will receive is this download's
		}
		d.wg.Add(1)
		go d.watchPath(i, d.conns[i])
	}
	acts := d.s.OnStart(time.Now())
	if d.o.Cut > 0 {
		acts = append(acts, d.s.Cut(time.Now(), d.o.Cut)...)
	}
	if err := d.exec(acts, nil); err != nil {
		return d.result(), err
	}
	// The download fails only when no path has delivered a byte for the
	// stall timeout: outages of a path, or of all of them, are waited out.
	stall := time.NewTimer(d.c.stallTimeout())
	defer stall.Stop()
	for !d.done {
		var ev event
		select {
		case ev = <-d.events:
		case <-stall.C:
			if idle := time.Since(d.progress); idle < d.c.stallTimeout() {
				stall.Reset(d.c.stallTimeout() - idle)
				continue
			}
			return d.result(), fmt.Errorf("mph2: GET %s: no path delivered data for %v (%d of %d bytes)", d.u, d.c.stallTimeout(), d.written, d.s.Size())
		case <-d.ctx.Done():
			return d.result(), fmt.Errorf("mph2: GET %s: %w", d.u, d.ctx.Err())
		}
		if err := d.handle(ev); err != nil {
			return d.result(), fmt.Errorf("mph2: GET %s: %w", d.u, err)
		}
		if d.s.Blocked() {
			return d.result(), fmt.Errorf("mph2: GET %s: %d of %d bytes delivered, and every path that is up has spent its budget", d.u, d.written, d.s.Size())
		}
	}
	total := time.Since(d.start)
	d.settle()
	r := d.result()
	r.Total = total
	return r, nil
}

// handle feeds one event to the scheduler and executes what it decides.
func (d *download) handle(ev event) error {
	now := time.Now()
	switch ev.kind {
	case evRedialed:
		return d.redialed(now, ev.path, ev.pc)
	case evFresh:
		return d.refreshed(now, ev.path, ev.pc, ev.old)
	}
	if ev.pc != nil && (ev.pc != d.conns[ev.path] || d.redialing[ev.path]) {
		return nil // about a connection that died and is being replaced
	}
	switch ev.kind {
	case evRTT:
		if d.down[ev.path] {
			return nil
		}
		return d.exec(d.s.OnRTT(now, multipath.PathID(ev.path), ev.rtt), nil)
	case evPathDown:
		return d.lost(now, ev.path, ev.err)
	case evSuspend:
		return d.suspend(now, ev.path, ev.err)
	case evResume:
		return d.resume(now, ev.path)
	case evHanded:
		delete(d.streams, ev.stream) // its context is the caller's now
		return &HandedOver{ev.res}
	}
	st := d.streams[ev.stream]
	if st == nil {
		// A stream the scheduler reset or gave up: its bytes are tail bytes.
		if ev.buf != nil {
			d.body[ev.path] += int64(ev.n)
			bufPool.Put(ev.buf)
		}
		return nil
	}
	switch ev.kind {
	case evHeaders:
		return d.onHeaders(now, st, ev)
	case evData:
		defer bufPool.Put(ev.buf)
		if err := d.resume(now, st.path); err != nil {
			return err
		}
		d.progress = now
		d.backoffs[st.path].delivered()
		d.body[st.path] += int64(ev.n)
		st.recv += int64(ev.n)
		if st.bodyLen >= 0 && st.recv > st.bodyLen {
			return d.refuse(now, st.path, fmt.Errorf("sent %d body bytes for a response of %d", st.recv, st.bodyLen))
		}
		if err := d.exec(d.s.OnData(now, st.id, int64(ev.n)), (*ev.buf)[:ev.n]); err != nil {
			return err
		}
		d.grantPath(now, st.path)
		return nil
	case evEnd:
		if ev.err != nil && (!st.headers || d.conns[st.path].h1 != nil || d.conns[st.path].dead()) {
			// The request never got an answer, or its connection broke:
			// the path is in trouble, not just this stream.
			return d.lost(now, st.path, ev.err)
		}
		d.forget(st)
		if err := d.exec(d.s.OnStreamEnd(now, st.id), nil); err != nil {
			return err
		}
		d.grantPath(now, st.path)
		return nil
	}
	return nil
}

func (d *download) onHeaders(now time.Time, st *stream, ev event) error {
	res := ev.res
	st.headers, st.h2s, st.first = true, ev.h2s, ev.first
	st.bodyLen = -1
	if ev.last >= 0 {
		st.bodyLen = ev.last - ev.first
	}
	// The version first: a changed object answers If-Range with a 200.
	if err := d.checkVersion(st.path, res); err != nil {
		return d.refuse(now, st.path, err)
	}
	if err := d.checkRange(st, res.StatusCode, ev); err != nil {
		return d.refuse(now, st.path, err)
	}
	if res.StatusCode == http.StatusOK && (st.start > 0 || st.end >= 0) {
		d.ignored = true
	}
	acts, err := d.s.OnHeaders(now, st.id, res.StatusCode, ev.size)
	if err != nil {
		return fmt.Errorf("path %s: %w", d.pathName(st.path), err)
	}
	if !d.told && d.o.OnResponse != nil && (res.StatusCode == 200 || res.StatusCode == 206) {
		d.told = true
		d.o.OnResponse(res.StatusCode, res.Header, d.s.Size())
	}
	if err := d.exec(acts, nil); err != nil {
		return err
	}
	d.grant(now, st)
	return nil
}

// checkRange refuses a response that does not answer the request: a 206
// to a request without Range, or whose Content-Range does not start at the
// request's first byte or end at its last (or the object's, for a range
// reaching past it); a 200 to a ranged request on a budgeted path, whose
// whole body could overrun the budget.
func (d *download) checkRange(st *stream, status int, ev event) error {
	ranged := st.start > 0 || st.end >= 0
	switch status {
	case http.StatusPartialContent:
		if !ranged {
			return fmt.Errorf("206 to a request without Range")
		}
		want := st.end
		if want < 0 || (ev.size >= 0 && want > ev.size) {
			want = ev.size
		}
		if ev.first != st.start || ev.last != want {
			return fmt.Errorf("asked for bytes [%d,%d), the 206's Content-Range says [%d,%d) of %d", st.start, st.end, ev.first, ev.last, ev.size)
		}
	case http.StatusOK:
		if ranged && d.c.Paths[st.path].Budget > 0 {
			return fmt.Errorf("200 to a ranged request: the whole body could overrun the path's budget of %d bytes", d.c.Paths[st.path].Budget)
		}
	}
	return nil
}

// checkVersion refuses a response of another version of the object than
// the first one's (a server restarted with a new file, multi-homed mirrors
// out of step): its bytes would be spliced with the others' unnoticed.
func (d *download) checkVersion(p int, res *http.Response) error {
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusPartialContent {
		return nil
	}
	v := validator(res.Header)
	switch {
	case v == "":
		return nil
	case d.validator == "":
		d.validator, d.validatorPath = v, p
		return nil
	case v != d.validator:
		return fmt.Errorf("another version of the object: validator %s, path %s's was %s", v, d.pathName(d.validatorPath), d.validator)
	}
	return nil
}

// validator is what tells one version of an object from another and
// may go in If-Range (RFC 9110 13.1.5): its strong ETag, else its
// Last-Modified; "" if it has neither.
func validator(h http.Header) string {
	v := h.Get("ETag")
	if v == "" || strings.HasPrefix(v, "W/") {
		v = h.Get("Last-Modified")
	}
	return v
}

// refuse takes path p out of this download for what its server answered.
func (d *download) refuse(now time.Time, p int, why error) error {
	if d.refused[p] == "" {
		d.refused[p] = why.Error()
	}
	return d.pathDown(now, p, fmt.Errorf("refused: %w", why))
}

// pathDown gives path p's work to the others for the rest of the download
// and closes its connection, so the next download dials afresh.
func (d *download) pathDown(now time.Time, p int, cause error) error {
	if d.down[p] {
		return nil
	}
	d.down[p], d.redialing[p] = true, false
	if cause != nil {
		d.errs[p] = cause.Error()
	}
	d.endSuspension(now, p)
	d.drop(p)
	acts, err := d.s.OnPathDown(now, multipath.PathID(p))
	if err != nil {
		return fmt.Errorf("%w (path %s: %v)", err, d.pathName(p), cause)
	}
	return d.exec(acts, nil)
}

// drop forgets path p's streams and closes its connection.
func (d *download) drop(p int) {
	for _, st := range d.streams {
		if st.path == p {
			d.forget(st)
		}
	}
	pc := d.conns[p]
	pc.close()
	d.gone[p] += pc.received() - d.data0[p]
	d.data0[p] = pc.received()
}

// lost handles path p's connection dying (reset, EOF, GOAWAY, a request
// refused): a path that had connected is redialed, its ranges waiting for
// it or moved to the paths that are up; one whose dial failed is down.
func (d *download) lost(now time.Time, p int, cause error) error {
	if d.down[p] || d.redialing[p] {
		return nil
	}
	if d.conns[p].err != nil {
		return d.pathDown(now, p, cause)
	}
	if cause != nil {
		d.errs[p] = cause.Error()
	}
	if err := d.unplug(now, p); err != nil {
		return err
	}
	return d.redial(now, p)
}

// unplug closes path p's connection for a new one: its suspension ends
// (the outage is a loss now), and the ranges it kept go to the paths that
// are up or wait for it (OnPathLost).
func (d *download) unplug(now time.Time, p int) error {
	d.redialing[p] = true
	d.endSuspension(now, p)
	d.drop(p)
	acts, err := d.s.OnPathLost(now, multipath.PathID(p))
	if err != nil {
		return err
	}
	return d.exec(acts, nil)
}

// redial dials lost path p again after its backoff, or gives the path up
// if that would start after the stall timeout runs out: the loop is
// bounded by it (and by the download's end).
func (d *download) redial(now time.Time, p int) error {
	wait, ok := d.backoffs[p].after(now, d.progress.Add(d.c.stallTimeout()))
	if !ok {
		return d.pathDown(now, p, fmt.Errorf("%s; redialed %d times, not again: the stall timeout of %v runs out first",
			d.errs[p], d.backoffs[p].tries, d.c.stallTimeout()))
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-d.ctx.Done():
			return
		}
		pc := d.c.conn(p, d.u)
		select {
		case <-pc.ready:
		case <-d.ctx.Done():
			return
		}
		d.send(event{kind: evRedialed, path: p, pc: pc})
	}()
	return nil
}

// redialed re-admits lost path p on its new connection pc, with fresh
// estimates (OnPathResume); the ranges it is given are asked with If-Range.
// A dial that failed (the server not back yet) is tried again.
func (d *download) redialed(now time.Time, p int, pc *pathConn) error {
	if !d.redialing[p] {
		return nil
	}
	old := d.conns[p]
	// A connection trusted to speak h2c that never received a frame did
	// not: the path takes what the probe found now.
	if pc.err == nil && pc.proto != old.proto && !(old.trusted && old.lastFrame().IsZero()) {
		// An h2c probe unanswered by a server still starting: not the
		// server the path had, and not to be kept for the next download.
		d.c.forget(p, d.u, pc)
		pc.close()
		d.errs[p] = fmt.Sprintf("redialed as %s, was %s", pc.proto, old.proto)
		return d.redial(now, p)
	}
	if pc.err != nil {
		d.errs[p] = pc.err.Error()
		return d.redial(now, p)
	}
	d.redialing[p] = false
	d.redials[p]++
	d.conns[p], d.data0[p] = pc, pc.received()
	d.wg.Add(1)
	go d.watchPath(p, pc)
	acts, err := d.s.OnPathResume(now, multipath.PathID(p))
	if err != nil {
		return err
	}
	return d.exec(acts, nil)
}

// suspend takes silent path p out of the schedule (its ranges go to the
// paths that are up) and keeps its connection, so it can come back.
func (d *download) suspend(now time.Time, p int, cause error) error {
	if d.down[p] || d.redialing[p] || !d.suspendedAt[p].IsZero() {
		return nil
	}
	d.suspensions[p]++
	d.suspendedAt[p] = now
	if cause != nil {
		d.errs[p] = cause.Error()
	}
	acts, err := d.s.OnPathSuspend(now, multipath.PathID(p))
	if err != nil {
		return err
	}
	d.refresh(now, p)
	return d.exec(acts, nil)
}

// resume re-admits path p if it was suspended.
func (d *download) resume(now time.Time, p int) error {
	if d.suspendedAt[p].IsZero() {
		return nil
	}
	d.endSuspension(now, p)
	acts, err := d.s.OnPathResume(now, multipath.PathID(p))
	if err != nil {
		return err
	}
	return d.exec(acts, nil)
}

func (d *download) forget(st *stream) {
	st.cancel()
	delete(d.streams, st.id)
}

// exec carries out the scheduler's actions; data is the DATA just passed
// to OnData, which Deliver actions refer to.
func (d *download) exec(acts []multipath.Action, data []byte) error {
	for _, a := range acts {
		switch a.Kind {
		case multipath.Request:
			d.request(a)
		case multipath.SetEnd:
			if st := d.streams[a.Stream]; st != nil {
				st.limit = a.End - a.Start
				d.grant(time.Now(), st)
			}
		case multipath.Reset:
			if st := d.streams[a.Stream]; st != nil {
				if st.h2s != nil {
					st.h2s.Reset(http2.ErrCodeCancel)
					// No credit after RST_STREAM: the server sends at most this.
					d.s.OnResetBound(a.Stream, st.first+st.h2s.Credited())
				}
				d.forget(st) // for HTTP/1.1: closes the connection
			}
		case multipath.Deliver:
			if _, err := d.w.WriteAt(data[a.Start-a.From:a.End-a.From], a.Start); err != nil {
				return fmt.Errorf("writing bytes %d-%d: %w", a.Start, a.End-1, err)
			}
			d.written += a.End - a.Start
			d.noteFirstByte(int(a.Path))
			if d.o.Progress != nil {
				d.o.Progress(int(a.Path), d.s.Stats(a.Path).Delivered)
			}
		case multipath.Done:
			d.done = true
		}
	}
	return nil
}

// grant tops up a manual stream's window to the scheduler's Credit past
// what has arrived (the distance at which it announces a lazily moved end,
// so the announcement still finds the server short of it), never beyond the
// end SetEnd gave it, and tells the scheduler: credit cannot be taken back,
// so the credited bytes will arrive.
func (d *download) grant(now time.Time, st *stream) {
	if !st.manual || st.h2s == nil {
		return
	}
	target := d.grantTarget(now, st)
	if target <= st.granted {
		return
	}
	for target > st.granted {
		inc := min(target-st.granted, 1<<30)
		if st.h2s.GrowWindow(uint32(inc)) != nil {
			return // the stream has ended
		}
		st.granted += inc
	}
	d.s.OnGrant(st.id, st.first+st.granted)
}

// grantUnit: credit short of a stream's end is given in whole multiples of
// it, so that a server held by flow control writes whole DATA frames of
// the sizes servers use (nginx 8 KiB, h2o 16 KiB).
const grantUnit = 16 << 10

// grantTarget is how far stream st's credit should reach now (st.granted:
// no WINDOW_UPDATE is due): Credit past what has arrived, never beyond the
// end SetEnd gave it. Short of that end the credit moves in steps of at
// least a quarter of the path's lead: a server that flow control holds
// (nginx) writes what each WINDOW_UPDATE allows as a short DATA frame in a
// TLS record of its own, so an update per DATA frame read cost 0.15 % more
// bytes on the wire than one stream whose window never binds ((5,5) 32 MB
// from nginx: 3494 records against curl's 2435, 5302 DATA frames against
// 3907).
func (d *download) grantTarget(now time.Time, st *stream) int64 {
	target := st.recv + d.s.Credit(now, st.id)
	if st.limit >= 0 && target >= st.limit {
		return max(st.limit, st.granted)
	}
	step := max(grantUnit, d.s.Ahead(now, multipath.PathID(st.path))/4/grantUnit*grantUnit)
	if target-st.granted < step {
		return st.granted
	}
	return st.granted + (target-st.granted)/grantUnit*grantUnit
}

// grantPath tops up the streams of path p in request order: the path's
// credit is shared, so what one stream receives or no longer needs goes to
// the streams pipelined behind it.
func (d *download) grantPath(now time.Time, p int) {
	var sts []*stream
	for _, st := range d.streams {
		if st.path == p {
			sts = append(sts, st)
		}
	}
	slices.SortFunc(sts, func(a, b *stream) int { return cmp.Compare(a.id, b.id) })
	for _, st := range sts {
		d.grant(now, st)
	}
}

// request opens the scheduler's stream a on its path.
func (d *download) request(a multipath.Action) {
	first := d.o.HandOver != nil && !d.asked && a.Start == 0 && a.End < 0
	d.asked = true
	parent := d.ctx
	if first {
		parent = d.parent
	}
	ctx, cancel := context.WithCancel(parent)
	st := &stream{id: a.Stream, path: int(a.Path), start: a.Start, end: a.End, first: a.Start, cancel: cancel, limit: -1}
	d.streams[st.id] = st
	pc := d.conns[st.path]
	var window int64
	if d.c.EndAdjust == EndFlowControl {
		window = d.s.FirstCredit(time.Now(), a.Stream)
		if a.End >= 0 {
			window = min(window, a.End-a.Start)
		}
		window = max(window, flowInitialWindow)
		st.granted = window
		d.s.OnGrant(st.id, a.Start+window)
	}
	ifRange := ""
	if a.Start > 0 || a.End >= 0 {
		// A range of another version (a server restarted with a new file)
		// comes back as the whole object, which checkVersion refuses.
		ifRange = d.validator
	}
	d.wg.Add(1)
	go d.fetch(ctx, st.id, st.path, pc, a.Start, a.End, window, ifRange, first)
	// Whether the window is manual is known once the path's protocol is;
	// only HTTP/2 streams get one.
	st.manual = window > 0
}

// fetch runs one request on its own goroutine: headers, then the body in
// buffers handed to the owner, then the end.
func (d *download) fetch(ctx context.Context, id multipath.StreamID, p int, pc *pathConn, a, b, window int64, ifRange string, offer bool) {
	defer d.wg.Done()
	select {
	case <-pc.ready:
	case <-ctx.Done():
		return
	}
	end := func(err error) { d.send(event{kind: evEnd, stream: id, path: p, err: err}) }
	if pc.err != nil {
		end(pc.err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.u.String(), nil)
	if err != nil {
		end(err)
		return
	}
	for k, v := range d.o.Header {
		req.Header[k] = v
	}
	switch {
	case b >= 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", a, b-1))
	case a > 0:
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", a))
	}
	if ifRange != "" {
		req.Header.Set("If-Range", ifRange)
	}
	if pc.h1 != nil {
		window = 0
	}
	res, h2s, err := pc.roundTrip(req, window)
	if err != nil {
		end(err)
		return
	}
	if offer && d.o.HandOver(res) {
		if h2s != nil && window > 0 {
			res.Body = refill(res.Body, h2s)
		}
		if !d.send(event{kind: evHanded, stream: id, path: p, res: res}) {
			res.Body.Close()
		}
		return
	}
	defer res.Body.Close()
	first, last, size, err := bodyRange(res)
	if err != nil {
		end(err)
		return
	}
	if !d.send(event{kind: evHeaders, stream: id, path: p, res: res, h2s: h2s, first: first, last: last, size: size}) {
		return
	}
	for {
		bp := bufPool.Get().(*[]byte)
		n, rerr := res.Body.Read(*bp)
		if n > 0 {
			if !d.send(event{kind: evData, stream: id, path: p, buf: bp, n: n}) {
				return
			}
		} else {
			bufPool.Put(bp)
		}
		if rerr == io.EOF {
			end(nil)
			return
		}
		if rerr != nil {
			end(rerr)
			return
		}
	}
}

// handOverWindow is the credit a handed-over response keeps ahead of what
// its reader has taken: 4 MiB, a bandwidth-delay product of 100 Mbit/s at
// 300 ms.
const handOverWindow = 4 << 20

// refill turns a manual stream's body into an ordinary one: handOverWindow
// of credit at once, then every byte read is credited again.
func refill(body io.ReadCloser, s *h2.Stream) io.ReadCloser {
	s.GrowWindow(handOverWindow)
	return &refillBody{body, s}
}

type refillBody struct {
	io.ReadCloser
	s *h2.Stream
}

func (b *refillBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.s.GrowWindow(uint32(n)) // fails only once the stream has ended
	}
	return n, err
}

// bodyRange returns the object offsets of a response body's first byte and
// just past its last (-1 unknown), and the object's complete length (-1
// unknown).
func bodyRange(res *http.Response) (first, end, size int64, err error) {
	switch res.StatusCode {
	case http.StatusOK:
		return 0, res.ContentLength, res.ContentLength, nil
	case http.StatusPartialContent:
		cr := res.Header.Get("Content-Range")
		first, last, size, err := content.ParseContentRange(cr)
		if err != nil {
			return 0, 0, 0, err
		}
		return first, last + 1, size, nil
	}
	return 0, -1, -1, nil
}

// watchPath waits for path p's connection, then (HTTP/2) sends a PING every
// PingInterval once the last one is answered: each answer is an RTT sample
// and the scheduler's clock tick. A dead connection, or the liveness rule
// (PING unanswered and no frame at all for its timeout) suspends the path.
func (d *download) watchPath(p int, pc *pathConn) {
	defer d.wg.Done()
	select {
	case <-pc.ready:
	case <-d.ctx.Done():
		return
	}
	if pc.err != nil {
		d.send(event{kind: evPathDown, path: p, pc: pc, err: pc.err})
		return
	}
	if pc.h2 == nil {
		return
	}
	interval := d.c.PingInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	live := newLiveness(d.c.PathTimeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	conn := pc.h2.Conn()
	type pong struct {
		rtt time.Duration
		err error
	}
	pongs := make(chan pong, 1) // one PING at a time: its sender never blocks
	var silentSince time.Time   // zero: the path is not silent
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-conn.Done():
			d.send(event{kind: evPathDown, path: p, pc: pc, err: fmt.Errorf("connection closed: %v", conn.Err())})
			return
		case pg := <-pongs:
			if pg.err != nil {
				if d.ctx.Err() == nil {
					d.send(event{kind: evPathDown, path: p, pc: pc, err: pg.err})
				}
				return
			}
			live.answered(pg.rtt)
			if !silentSince.IsZero() {
				silentSince = time.Time{}
				if !d.send(event{kind: evResume, path: p, pc: pc}) {
					return
				}
			}
			if !d.send(event{kind: evRTT, path: p, pc: pc, rtt: pg.rtt}) {
				return
			}
		case now := <-t.C:
			switch {
			case !silentSince.IsZero():
				// Any frame since it went silent (DATA the owner has not
				// counted yet, a WINDOW_UPDATE) brings the path back.
				if pc.lastFrame().After(silentSince) {
					silentSince = time.Time{}
					if !d.send(event{kind: evResume, path: p, pc: pc}) {
						return
					}
				}
			case live.pingSent.IsZero():
				live.sent(now)
				d.wg.Add(1)
				go func() {
					defer d.wg.Done()
					rtt, err := conn.Ping(d.ctx) // ends with the download or the connection
					pongs <- pong{rtt, err}
				}()
			case live.silent(now, pc.lastFrame()):
				silentSince = now
				if !d.send(event{kind: evSuspend, path: p, pc: pc, err: fmt.Errorf("%w for %v", errPathTimeout, live.timeout())}) {
					return
				}
			}
		}
	}
}

// settle waits for tail bytes still in flight (Options.Settle).
func (d *download) settle() {
	if d.o.Settle <= 0 {
		return
	}
	total := func() (n int64) {
		for _, pc := range d.conns {
			if pc.h2 != nil {
				n += pc.received()
			}
		}
		return n
	}
	last := total()
	deadline := time.Now().Add(20 * d.o.Settle)
	for time.Now().Before(deadline) {
		select {
		case <-time.After(d.o.Settle):
		case <-d.ctx.Done():
			return
		}
		n := total()
		if n == last {
			return
		}
		last = n
	}
}

func (d *download) pathName(p int) string { return d.c.Paths[p].Label(p) }

// noteFirstByte records path p's first delivery after each switch to it.
func (d *download) noteFirstByte(p int) {
	sw := d.s.Switches()
	for len(d.switchFirst) < len(sw) {
		d.switchFirst = append(d.switchFirst, time.Time{})
	}
	for k, x := range sw {
		if int(x.To) == p && d.switchFirst[k].IsZero() {
			d.switchFirst[k] = time.Now()
		}
	}
}

func (d *download) result() *Result {
	r := &Result{Size: d.written, Total: time.Since(d.start), RangesIgnored: d.ignored, Mode: d.c.Mode}
	for k, x := range d.s.Switches() {
		sw := Switch{At: x.At.Sub(d.start), To: d.pathName(int(x.To)), Why: x.Why}
		if x.From >= 0 {
			sw.From = d.pathName(int(x.From))
		}
		if k < len(d.switchFirst) && !d.switchFirst[k].IsZero() {
			sw.FirstByte = d.switchFirst[k].Sub(d.start)
		}
		r.Switches = append(r.Switches, sw)
	}
	now := time.Now()
	var received int64
	for i := range d.c.Paths {
		st := d.s.Stats(multipath.PathID(i))
		e := d.s.Estimate(now, multipath.PathID(i))
		pr := PathResult{Name: d.pathName(i), Requests: st.Requests, Delivered: st.Delivered,
			Bandwidth: e.Bandwidth, RTT: e.RTT, Down: d.down[i] || d.redialing[i], Err: d.errs[i],
			Suspensions: d.suspensions[i], Suspended: d.suspended[i], Redials: d.redials[i],
			Budget: d.c.Paths[i].Budget, Refused: d.refused[i], Retaken: st.Retaken}
		if !st.BudgetFull.IsZero() {
			pr.BudgetFull = st.BudgetFull.Sub(d.start)
		}
		pr.Stalls = st.Stalls
		if !st.FirstStall.IsZero() {
			pr.FirstStall = st.FirstStall.Sub(d.start)
		}
		if !d.suspendedAt[i].IsZero() {
			pr.Suspended += now.Sub(d.suspendedAt[i])
		}
		pc := d.conns[i]
		select {
		case <-pc.ready:
			pr.Proto = pc.proto
		default:
		}
		pr.Received = d.body[i]
		if pr.Proto == "h2" || pr.Proto == "h2c" {
			pr.Received = pc.received() - d.data0[i] + d.gone[i]
		}
		if !st.FirstData.IsZero() {
			pr.FirstData = st.FirstData.Sub(d.start)
		}
		if !st.LastData.IsZero() {
			pr.LastData = st.LastData.Sub(d.start)
		}
		received += pr.Received
		r.Paths = append(r.Paths, pr)
	}
	r.TailBytes = max(received-d.written, 0)
	return r
}
