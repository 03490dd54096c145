package h2

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/shunt-net/shunt/h2/internal/prio"
	"golang.org/x/net/http2"
)

// Hooks for SMig (package smig): moving the rest of a stream's body from one
// connection to another. The engine knows nothing of the MIGRATION frame's
// meaning; it only places the caller's marker frames at the exact byte where
// the body leaves one connection and joins another.

// Frame is an extension frame to queue (see Conn.WriteExtensionFrame).
type Frame struct {
	Type    http2.FrameType
	Flags   http2.Flags
	Payload []byte
}

func (f Frame) wframe(id uint32) wframe {
	return wframe{kind: wRaw, ftype: f.Type, flags: f.Flags, id: id, data: append([]byte(nil), f.Payload...)}
}

// ErrNothingToMigrate is returned by DetachSend when the whole body has
// already been handed to the connection.
var ErrNothingToMigrate = errors.New("h2: stream has no unsent body left to migrate")

// SendTail is the part of a stream's outgoing body that was not yet handed
// to its connection when DetachSend ran, followed by everything the source
// (a handler) writes afterwards.
type SendTail struct {
	st   *stream
	Sent int64 // body bytes that went out on the original connection
}

// DetachSend stops the stream's body on its connection: marker is queued
// right after the last DATA frame already handed to the writer, and the
// rest of the body is returned as a SendTail for another connection. The
// stream must be a response whose request is complete (half-closed remote)
// and whose HEADERS are queued. The stream stays open on this connection,
// with no more frames, until the tail is drained.
func (s *Stream) DetachSend(marker Frame) (*SendTail, error) {
	st, c := s.st, s.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closing:
		return nil, ErrConnClosed
	case st.send.migrated:
		return nil, fmt.Errorf("h2: stream %d already migrated", st.id)
	case st.state != stateHalfClosedRemote:
		return nil, fmt.Errorf("h2: stream %d cannot migrate in state %d (request not complete or stream closed)", st.id, st.state)
	case !st.send.headers:
		return nil, fmt.Errorf("h2: stream %d has not sent HEADERS yet", st.id)
	case st.send.err != nil:
		return nil, st.send.err
	case st.send.endSent || st.send.end && st.send.q.Len() == 0:
		return nil, ErrNothingToMigrate
	}
	st.send.migrated = true
	st.send.ready = 0
	c.sched.Remove(&st.sched)
	c.queueLocked(marker.wframe(st.id))
	return &SendTail{st: st, Sent: st.send.sent}, nil
}

// read takes queued body bytes, with the stream's priority as it is now:
// the request's, or what a PRIORITY_UPDATE for it on this connection made
// it. At the end of the body it closes the stream on the original
// connection without a frame (the marker ended it there) and returns
// io.EOF.
func (t *SendTail) read(p []byte) (int, prio.Priority, error) {
	st, c := t.st, t.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if st.send.err != nil {
			return 0, st.prio, st.send.err
		}
		if n := st.send.q.Read(p); n > 0 {
			// writeBody wakes us through releaseLocked once this many
			// more bytes are queued (or on Flush and at the end).
			st.send.ready = 0
			st.send.waiting = false
			st.sendCond.Broadcast() // room for the handler
			return n, st.prio, nil
		}
		if st.send.end {
			st.send.endSent = true
			c.closeStreamLocked(st, nil)
			return 0, st.prio, io.EOF
		}
		st.sendCond.Wait()
	}
}

// abort fails the source stream (the handler's writes start failing) after
// the continuation failed.
func (t *SendTail) abort(err error) {
	c := t.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeStreamLocked(t.st, err)
}

// CopyTo sends the tail on dst (from OpenMigratedStream), trailers and
// END_STREAM included, at the source stream's priority: dst's connection
// schedules it against its other streams as the request asked (moved
// images, u=2 incremental, interleave there as they would have here). It
// returns the bytes copied. If dst fails, the source stream fails too; if
// the source fails, dst is reset with CANCEL.
func (t *SendTail) CopyTo(dst *Stream) (int64, error) {
	buf := make([]byte, maxDataFrame)
	var total int64
	d := dst.st
	cur := prio.Default // OpenMigratedStream's
	for {
		n, p, err := t.read(buf)
		if p != cur {
			// Before the bytes are queued, so they are scheduled at p;
			// a later PRIORITY_UPDATE of the source follows with the
			// next read.
			d.c.mu.Lock()
			d.c.reprioritizeLocked(d, p)
			d.c.mu.Unlock()
			cur = p
		}
		if n > 0 {
			if werr := d.c.writeBody(d, buf[:n], true); werr != nil {
				t.abort(werr)
				return total, werr
			}
			total += int64(n)
		}
		if err == io.EOF {
			c := t.st.c
			c.mu.Lock()
			tr := t.st.send.trailers
			c.mu.Unlock()
			d.c.mu.Lock()
			d.c.endSendLocked(d, tr)
			d.c.mu.Unlock()
			return total, nil
		}
		if err != nil {
			dst.Reset(http2.ErrCodeCancel)
			return total, err
		}
	}
}

// OpenMigratedStream opens a server-initiated stream that carries the rest
// of a migrated body on this (server) connection. opening(id) is the frame
// announcing it; it is queued before any DATA of the stream. The stream
// needs no HEADERS: its response head travelled on the original connection.
func (c *Conn) OpenMigratedStream(opening func(id uint32) Frame) (*Stream, error) {
	if c.client {
		return nil, errors.New("h2: OpenMigratedStream is for the server role")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closing || c.goAwaySent || c.goAwayRecv != nil:
		return nil, ErrConnClosed
	case c.nextStreamID > 1<<31-1:
		return nil, errors.New("h2: server stream IDs exhausted")
	}
	id := c.nextStreamID
	c.nextStreamID += 2
	c.queueLocked(opening(id).wframe(id))
	st := c.newStream(id, true)
	st.state = stateHalfClosedRemote
	st.send.headers = true
	// st.prio stays the default until CopyTo gives it the source's.
	return &Stream{st}, nil
}

// AcceptMigratedStream registers the server-initiated stream id, announced
// by an extension frame on this (client) connection, as the continuation of
// a migrated body: DATA on it is accepted and buffered until a reader links
// it with ContinueOn.
func (c *Conn) AcceptMigratedStream(id uint32) (*Stream, error) {
	if !c.client {
		return nil, errors.New("h2: AcceptMigratedStream is for the client role")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closing:
		return nil, ErrConnClosed
	case id%2 != 0 || id == 0:
		return nil, fmt.Errorf("h2: migrated stream %d is not server-initiated", id)
	case id <= c.peerMaxStream || c.streams.get(id) != nil:
		return nil, fmt.Errorf("h2: migrated stream %d reuses a stream ID (highest so far %d)", id, c.peerMaxStream)
	}
	c.peerMaxStream = id
	st := c.newStream(id, false)
	st.state = stateHalfClosedLocal
	return &Stream{st}, nil
}

// ContinueOn ends this stream's incoming body on its connection (the peer's
// migration marker arrived, so nothing more comes here) and makes readers
// continue with next once the bytes received here are read.
func (s *Stream) ContinueOn(next *Stream) error {
	st, c := s.st, s.st.c
	c.mu.Lock()
	if st.recv.next != nil || st.recv.err != nil || st.state == stateClosed {
		c.mu.Unlock()
		return fmt.Errorf("h2: stream %d cannot continue elsewhere: already finished", st.id)
	}
	st.recv.next = next.st
	closed := st.recv.closed
	ctx := st.reqCtx
	declLen, gotLen := st.declLen, st.gotLen
	c.remoteClosedLocked(st)
	c.mu.Unlock()
	if closed {
		// The reader gave up before the marker came: stop the continuation.
		next.st.c.closeContinuation(next.st, http2.ErrCodeCancel)
		return nil
	}
	if rest := declLen - gotLen; declLen >= 0 {
		next.st.c.expectRest(next.st, rest)
	}
	if ctx != nil {
		// The request's cancellation reaches the body wherever it went.
		nc := next.st.c
		nc.mu.Lock()
		next.st.reqCtx = ctx
		next.st.stopWatch = context.AfterFunc(ctx, func() { nc.cancelStream(next.st, ctx.Err()) })
		nc.mu.Unlock()
	}
	return nil
}

// expectRest holds a continuation to the rest of the length its source
// declared: a continuation that ends short (or runs long) is an error for
// the reader, not a silently cut body. onData checks what comes later.
func (c *Conn) expectRest(st *stream, rest int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.declLen = rest
	var err error
	switch {
	case st.gotLen > rest:
		err = fmt.Errorf("h2: migrated stream %d brought %d bytes, %d were left of the content-length", st.id, st.gotLen, rest)
	case st.recv.err == io.EOF && st.gotLen != rest:
		err = fmt.Errorf("h2: migrated stream %d ended after %d bytes, %d were left of the content-length: %w", st.id, st.gotLen, rest, io.ErrUnexpectedEOF)
	}
	if err == nil {
		return
	}
	if st.state != stateClosed {
		c.queueControlLocked(wframe{kind: wRST, id: st.id, val: uint32(http2.ErrCodeProtocol)})
		c.closeStreamLocked(st, err)
	}
	st.recv.err = err // after END_STREAM too: the reader gets it behind the bytes
	st.recvCond.Broadcast()
}

// closeContinuation is closeBody for a continuation stream, which the
// server opened, so closeBody alone would not reset it.
func (c *Conn) closeContinuation(st *stream, code http2.ErrCode) {
	c.closeBody(st, code)
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.recv.err == nil && st.state != stateClosed {
		c.resetStreamLocked(st.id, code)
	}
}

func (c *Conn) recvNext(st *stream) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return st.recv.next
}

// ActiveStreams returns the number of open streams on the connection.
func (c *Conn) ActiveStreams() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.activePeer + c.activeOurs
}

// IsClient reports whether this is the client end.
func (c *Conn) IsClient() bool { return c.client }

// StreamByID returns the open stream id on this connection, or nil.
func (c *Conn) StreamByID(id uint32) *Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.streams.get(id); st != nil {
		return &Stream{st}
	}
	return nil
}
