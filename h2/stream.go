package h2

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/shunt-net/shunt/h2/internal/flow"
	"github.com/shunt-net/shunt/h2/internal/prio"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// streamState is the RFC 9113 5.1 state of a stream.
type streamState uint8

const (
	stateIdle streamState = iota
	stateReservedLocal
	stateOpen
	stateHalfClosedLocal
	stateHalfClosedRemote
	stateClosed
)

// stream is one HTTP/2 stream; its fields are guarded by Conn.mu.
type stream struct {
	c     *Conn
	id    uint32
	state streamState
	ours  bool // we initiated it (client request or server push)
	// settingsSeq is how many of our SETTINGS were queued when we opened
	// the stream: its receive window already counts those (sentInitial).
	settingsSeq int
	prio        prio.Priority
	sched       prio.Entry // its place in Conn.sched, while it has DATA ready

	send     sendSide
	sendWin  flow.Send
	sendCond sync.Cond // the body source waits here for queue space

	recv     recvSide
	recvWin  flow.Recv
	recvCond sync.Cond // the body reader waits here for data

	declLen int64 // content-length of the incoming message, -1 if none
	gotLen  int64 // incoming DATA payload bytes

	// Server role. sctx and rw are allocated with the stream rather than
	// apart: a request costs fewer allocations.
	ctx    context.Context
	cancel context.CancelFunc
	sctx   streamContext
	rw     responseWriter

	// Client role.
	resc      chan struct{} // closed when res or resErr is set
	res       *http.Response
	resErr    error
	gotFinal  bool
	req       *http.Request
	gotByte   bool
	trace     *httptrace.ClientTrace
	stopWatch func() bool // stops the request-context watcher
	// reqCtx is the client request's context: a continuation of the stream
	// on another connection (migration) is cancelled with it too.
	reqCtx context.Context
	isHead bool

	// inlineDone: an InlineHandler answered the stream and returned, so
	// nothing but the connection's bookkeeping refers to it; once closed
	// too, it is reused (freeStreamLocked).
	inlineDone bool
}

// sendSide is the outbound half of a stream: bytes queued by the body source
// and how many have been sent. It holds no reference to the Conn so a later
// migration (SMig) can move it to another connection and carry on from sent.
type sendSide struct {
	q        byteQueue
	ready    int   // bytes at the head of q released for sending
	sent     int64 // body bytes sent so far
	end      bool  // the source is finished: END_STREAM follows q
	trailers []hpack.HeaderField
	endSent  bool
	headers  bool  // HEADERS have been queued
	err      error // set when the stream can take no more data
	waiting  bool
	migrated bool // SMig: a SendTail drains q; the writer no longer sends it here
}

// sendable reports whether the writer has something to send for this side,
// ignoring flow control.
func (s *sendSide) sendable() bool {
	return s.headers && (s.ready > 0 || s.end && !s.endSent && s.q.Len() == 0)
}

// recvSide is the inbound half: received body bytes not yet read.
type recvSide struct {
	q        byteQueue
	err      error // io.EOF after END_STREAM, or why the stream failed
	closed   bool  // the application stopped reading: discard data
	trailers []hpack.HeaderField
	waiting  bool
	next     *stream // SMig: once q drains, the body continues on this stream
}

func (c *Conn) newStream(id uint32, ours bool) *stream {
	return c.openStream(new(stream), id, ours)
}

// maxFreeStreams bounds the streams a connection keeps for reuse, about
// 1 KB each: a stream waits two write batches before it is reused, so
// three bursts of a client's concurrent streams (h2load -m 10).
const maxFreeStreams = 32

// newPeerStream is newStream for a request the read loop opens: it reuses
// a stream an InlineHandler finished with, if one is closed. Allocating a
// stream per request was 87 % of the bytes shunt serve allocated under
// h2load (1 KB objects), and so most of its garbage collection.
func (c *Conn) newPeerStream(id uint32) *stream {
	n := len(c.free)
	if n == 0 {
		return c.openStream(streamPool.Get().(*stream), id, false)
	}
	st := c.free[n-1]
	c.free[n-1] = nil
	c.free = c.free[:n-1]
	return c.openStream(st, id, false)
}

// freeStreamLocked keeps a closed stream that nothing refers to any more
// (inlineDone) for newPeerStream, once the frames queued for it are
// written: its HEADERS' fields are in the stream (rw.fieldBuf), and the
// writer encodes them after it let go of the lock. So the stream waits in
// freeing until the writer has taken every queued frame into a batch
// (collectLocked), then in written until that batch is written
// (writeLoop). Only the read loop reuses it, under c.mu: after every use
// of it by its closer, whoever that is, and before any use as the new
// stream.
func (c *Conn) freeStreamLocked(st *stream) {
	if len(c.free)+len(c.freeing)+len(c.written) < maxFreeStreams && !c.closed {
		c.freeing = append(c.freeing, st)
	}
}

// streamPool holds the streams connections kept for reuse when they went
// quiet or closed, for the first requests of other connections: each of
// h2load -c 100's new connections allocated its ten streams anew (~10 % of
// a new connection's CPU in malloc and span refills, issue 18).
var streamPool = sync.Pool{New: func() any { return new(stream) }}

// dropFreeLocked lets the streams kept for reuse go: the connection is
// quiet or closed. Those in free, whose frames are written, go to
// streamPool, cleared so that the pool holds no connection alive; those in
// freeing and written may still be in the writer's batch.
func (c *Conn) dropFreeLocked() {
	for _, st := range c.free {
		*st = stream{}
		streamPool.Put(st)
	}
	c.free, c.freeing, c.written = nil, nil, nil
}

// openStream makes st, new or reused, the open stream id.
func (c *Conn) openStream(st *stream, id uint32, ours bool) *stream {
	// Cleared, then set: a literal is made apart and copied, and a
	// stream is 1,080 bytes (~270 instructions a request).
	*st = stream{}
	st.c, st.id, st.state, st.ours = c, id, stateOpen, ours
	st.sched.ID = id
	st.prio = prio.Default
	st.sendWin = flow.NewSend(c.peer.initialWindow)
	st.recvWin = flow.NewRecv(c.ourInitial)
	st.declLen = -1
	if ours {
		st.recvWin = flow.NewRecv(c.sentInitial())
		st.settingsSeq = c.settingsSent
	}
	st.sendCond.L = &c.mu
	st.recvCond.L = &c.mu
	c.streams.put(st)
	if ours {
		c.activeOurs++
	} else {
		c.activePeer++
	}
	c.addBusyLocked(1)
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	if c.grace.pending() {
		c.grace.opened(time.Now(), c.cfg.writerGrace)
	}
	return st
}

// remoteClosedLocked records END_STREAM from the peer.
func (c *Conn) remoteClosedLocked(st *stream) {
	st.recv.err = io.EOF
	st.recvCond.Broadcast()
	switch st.state {
	case stateOpen:
		st.state = stateHalfClosedRemote
	case stateHalfClosedLocal:
		c.closeStreamLocked(st, nil)
	}
}

// localClosedLocked records that we sent END_STREAM.
func (c *Conn) localClosedLocked(st *stream) {
	switch st.state {
	case stateOpen:
		// Even when the handler no longer reads the request body, the stream
		// stays half-closed (local) so that the peer's frames on it are still
		// checked (a WINDOW_UPDATE overflow is still FLOW_CONTROL_ERROR);
		// onData stops the body with RST_STREAM(NO_ERROR) once more arrives.
		st.state = stateHalfClosedLocal
	case stateHalfClosedRemote, stateReservedLocal:
		c.closeStreamLocked(st, nil)
	}
}

// closeStreamLocked moves st to closed. err, if not nil, fails both halves
// for the application; with nil, data already received stays readable.
func (c *Conn) closeStreamLocked(st *stream, err error) {
	if st.state == stateClosed {
		return
	}
	st.state = stateClosed
	c.streams.del(st.id)
	c.sched.Remove(&st.sched)
	if st.ours {
		c.activeOurs--
	} else {
		c.activePeer--
	}
	c.addBusyLocked(-1)
	c.slotWait.Signal()
	if err != nil {
		if st.recv.err == nil {
			st.recv.err = err
		}
		st.send.err = err
		st.send.q.Release()
		st.send.ready = 0
		if st.resc != nil && !st.gotFinal {
			st.resErr = err
			st.gotFinal = true
			close(st.resc)
		}
	} else if st.send.err == nil {
		st.send.err = errStreamDone
	}
	if st.recv.closed {
		st.recv.q.Release()
	}
	st.recvCond.Broadcast()
	st.sendCond.Broadcast()
	if st.cancel != nil && err != nil {
		st.cancel()
	}
	if st.stopWatch != nil {
		st.stopWatch()
	}
	if st.inlineDone {
		c.freeStreamLocked(st) // no use of st after this
	}
	c.maybeFinishLocked()
	if c.activePeer+c.activeOurs == 0 {
		// A waiting writer starts its idle spell (writerIdleLocked).
		c.wcond.Signal()
		if c.idleTimer != nil && !c.closing {
			c.idleTimer.Reset(c.cfg.IdleTimeout)
		}
	}
}

var errStreamDone = streamDoneError{}

type streamDoneError struct{}

func (streamDoneError) Error() string { return "h2: stream already finished" }

// resetStreamLocked sends RST_STREAM and closes the stream if it is known.
func (c *Conn) resetStreamLocked(id uint32, code http2.ErrCode) {
	c.queueControlLocked(wframe{kind: wRST, id: id, val: uint32(code)})
	if st := c.streams.get(id); st != nil {
		c.closeStreamLocked(st, StreamResetError{StreamID: id, Code: code})
	}
}

// consumedLocked hands n read bytes back to the stream and connection
// windows, queueing WINDOW_UPDATEs as the windows decide.
func (c *Conn) consumedLocked(st *stream, n int) {
	if inc := c.recvWin.Consume(n); inc > 0 {
		c.queueLocked(wframe{kind: wWindowUpdate, val: inc})
	}
	if st != nil && st.state != stateClosed && !st.recv.closedByPeer() {
		if inc := st.recvWin.Consume(n); inc > 0 {
			c.queueLocked(wframe{kind: wWindowUpdate, id: st.id, val: inc})
		}
	}
}

// closedByPeer reports whether the peer will send no more data.
func (r *recvSide) closedByPeer() bool { return r.err != nil }

// readBody reads received body bytes for the application, following a
// migrated stream onto its continuation (SMig) once this part is drained.
func (c *Conn) readBody(st *stream, p []byte) (int, error) {
	n, next, err := c.readOwnBody(st, p)
	if next != nil {
		return next.c.readBody(next, p)
	}
	return n, err
}

func (c *Conn) readOwnBody(st *stream, p []byte) (int, *stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for st.recv.q.Len() == 0 && st.recv.err == nil {
		st.recvCond.Wait()
	}
	if st.recv.q.Len() == 0 {
		st.recv.q.Release()
		if st.recv.next != nil {
			return 0, st.recv.next, nil
		}
		return 0, nil, st.recv.err
	}
	if len(p) == 0 {
		return 0, nil, nil
	}
	n := st.recv.q.Read(p)
	c.consumedLocked(st, n)
	return n, nil, nil
}

// closeBody stops the application's reading: queued and future data is
// dropped (and credited back), and an unfinished stream is reset.
func (c *Conn) closeBody(st *stream, code http2.ErrCode) {
	if next := c.recvNext(st); next != nil {
		defer next.c.closeContinuation(next, code)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.recv.closed {
		return
	}
	st.recv.closed = true
	if n := st.recv.q.Len(); n > 0 {
		if inc := c.recvWin.Consume(n); inc > 0 {
			c.queueLocked(wframe{kind: wWindowUpdate, val: inc})
		}
	}
	st.recv.q.Release()
	if st.recv.err == nil && st.state != stateClosed && st.ours {
		// A server's request body is stopped by onData when more of it
		// arrives after the response, so that the stream stays checkable.
		c.resetStreamLocked(st.id, code)
	}
}

// writeBody queues p on the stream's send side, blocking while the queue is
// full. release makes the queued bytes available to the writer at once.
func (c *Conn) writeBody(st *stream, p []byte, release bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(p) > 0 {
		var stop func()
		for st.send.err == nil && st.send.q.Len() >= maxPendingSend {
			if stop == nil && c.cfg.SendTimeout > 0 {
				stop = c.watchSendLocked(st)
			}
			st.send.waiting = true
			st.sendCond.Wait()
		}
		if stop != nil {
			stop()
		}
		if st.send.err != nil {
			return st.send.err
		}
		n := min(len(p), maxPendingSend-st.send.q.Len())
		st.send.q.Write(p[:n])
		p = p[n:]
		if release || st.send.q.Len()-st.send.ready >= flushThreshold {
			c.releaseLocked(st)
		}
	}
	return nil
}

// watchSendLocked resets st if the peer takes none of its body for
// SendTimeout while its writer waits (no WINDOW_UPDATE: a stalled reader).
func (c *Conn) watchSendLocked(st *stream) (stop func()) {
	sent := st.send.sent
	var t *time.Timer
	t = time.AfterFunc(c.cfg.SendTimeout, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case st.send.err != nil || st.state == stateClosed:
		case st.send.sent != sent:
			sent = st.send.sent
			t.Reset(c.cfg.SendTimeout)
		default:
			c.queueControlLocked(wframe{kind: wRST, id: st.id, val: uint32(http2.ErrCodeCancel)})
			c.closeStreamLocked(st, fmt.Errorf("h2: stream %d: the peer took none of the body for %v (send timeout, window %d)", st.id, c.cfg.SendTimeout, st.sendWin.Avail()))
		}
	})
	return func() { t.Stop() }
}

// releaseLocked makes all queued bytes sendable and schedules the stream.
func (c *Conn) releaseLocked(st *stream) {
	st.send.ready = st.send.q.Len()
	c.scheduleLocked(st)
}

// scheduleLocked adds st to the DATA scheduler if it has something to send
// and window to send it.
func (c *Conn) scheduleLocked(st *stream) {
	if st.send.migrated {
		st.sendCond.Broadcast() // wake the SendTail instead
		return
	}
	if st.state == stateClosed || !st.send.sendable() {
		return
	}
	if st.send.ready > 0 && st.sendWin.Avail() <= 0 {
		return
	}
	c.sched.Add(&st.sched, st.prio)
	c.wakeWriterLocked()
}

// endSendLocked marks the source finished, with optional trailers.
func (c *Conn) endSendLocked(st *stream, trailers []hpack.HeaderField) {
	if st.send.end || st.send.err != nil {
		return
	}
	st.send.end = true
	st.send.trailers = trailers
	c.releaseLocked(st)
}

// streamBody is a request body (server) or response body (client): reads
// drain the stream's receive queue and hand the bytes back to flow control;
// at EOF the received trailers move to *trailer.
type streamBody struct {
	c         *Conn
	st        *stream
	trailer   *http.Header
	closeCode http2.ErrCode // sent if the body is closed before its end
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.c.readBody(b.st, p)
	if err == io.EOF && b.trailer != nil {
		b.c.takeTrailers(b.st, b.trailer)
	}
	return n, err
}

func (b *streamBody) Close() error {
	b.c.closeBody(b.st, b.closeCode)
	return nil
}
