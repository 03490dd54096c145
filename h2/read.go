package h2

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shunt-net/shunt/h2/internal/prio"
	"golang.org/x/net/http2"
)

// ErrHTTP1Reply: the peer answered a client's HTTP/2 preface with an
// HTTP/1.x response, so it does not speak h2c (prior knowledge) there.
var ErrHTTP1Reply = errors.New("the server answered in HTTP/1.x, not HTTP/2: it does not speak h2c with prior knowledge on this port")

// answeredHTTP1 ends a client connection whose peer's first bytes are an
// HTTP/1.x status line, which the framer would read as an oversized frame
// (FRAME_SIZE_ERROR) and so hide what happened.
func (c *Conn) answeredHTTP1() bool {
	b, err := c.br.Peek(len("HTTP/1."))
	if err != nil || string(b) != "HTTP/1." {
		return false
	}
	c.close(ErrHTTP1Reply)
	return true
}

// readLoop reads and dispatches frames until the connection ends. It owns the
// read-side Framer and the HPACK decoder.
func (c *Conn) readLoop() {
	if c.srv == nil && c.answeredHTTP1() {
		return
	}
	c.readFrames()
}

// runReader runs a server connection's read loop, then its end, unless
// the loop parks: the parker runs it again when the socket is readable.
func (c *Conn) runReader() {
	if c.readFrames() {
		c.ended()
	}
}

// readFrames is the read loop; it reports false if it parked (park.go)
// rather than ended.
func (c *Conn) readFrames() bool {
	for {
		parked, waiting := c.park()
		if parked {
			return false
		}
		// Wait for input here, where the stack is shallow: an idle
		// connection's goroutine then keeps a small stack. An error comes
		// back to ReadFrame's read, which reports it.
		c.br.prefill()
		if waiting && c.unwait() {
			continue // nudged: now quiet
		}
		c.nextType = frameTypeUnknown
		var hdr []byte // the next frame's header, if buffered
		if c.br.Buffered() >= frameHeaderLen {
			hdr, _ = c.br.Peek(frameHeaderLen) // no read: the header is here
			c.nextType = int(hdr[3])
		}
		// A client's DATA frame may go to the body before its end arrives.
		if hdr != nil && hdr[3] == byte(http2.FrameData) && c.client {
			if ok, err := c.readDataInPieces(hdr); ok {
				if err != nil && !c.readError(err) {
					break
				}
				if err == nil {
					c.frameRead()
				}
				c.mu.Lock()
				stop := c.closing
				c.mu.Unlock()
				if stop {
					break
				}
				continue
			}
		}
		var f http2.Frame
		var err error
		ph, plain := c.takePlainHeaders(hdr)
		if !plain {
			if f, err = c.rfr.ReadFrame(); err != nil {
				if !c.readError(err) {
					break
				}
				continue
			}
			if c.cfg.Trace != nil {
				c.cfg.Trace(Recv, f)
			}
			if df, ok := f.(*http2.DataFrame); ok {
				c.dataIn.Add(int64(df.Length))
			}
		}
		c.frameRead()
		if uf, ok := f.(*http2.UnknownFrame); ok {
			if c.hb.active {
				c.fail(connError{http2.ErrCodeProtocol, "frame inside a header block"})
				break
			}
			if c.cfg.OnExtensionFrame != nil {
				c.cfg.OnExtensionFrame(c, uf)
			}
			continue
		}
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			break
		}
		if plain {
			err = c.onPlainHeadersLocked(ph)
		} else {
			err = c.processLocked(f)
		}
		c.handleErrLocked(err)
		stop := c.closing
		deferred := c.deferred
		c.deferred = nil
		c.mu.Unlock()
		for _, fn := range deferred {
			fn()
		}
		if j := c.inline; j.st != nil {
			c.inline = inlineJob{}
			c.serveInline(j)
		}
		if stop {
			break
		}
	}
	// Discard whatever the peer still sends until it closes or the drain
	// deadline set by the writer passes, then tear down.
	io.Copy(io.Discard, c.br)
	c.br.release()
	c.close(io.EOF)
	return true
}

// frameTypeUnknown marks a frame whose header was not buffered when the
// read loop looked.
const frameTypeUnknown = -1

// plainHeaders is a HEADERS frame with the whole header block, neither
// padded nor with an RFC 7540 priority: every request h2load sends (we
// announce SETTINGS_NO_RFC7540_PRIORITIES; a client that still sends a
// priority goes the Framer's way).
type plainHeaders struct {
	id   uint32
	end  bool // END_STREAM
	frag []byte
}

// takePlainHeaders takes the next frame, whose header h is buffered (else
// nextType is unknown), from the read buffer without the Framer, when it is
// a plain HEADERS frame there whole: x/net's Framer
// would copy it through the reader chain and allocate a HeadersFrame, the
// one allocation a request had left, ~50 bytes for the garbage collector
// (issue 18). The Framer is between frames and outside a header block (no
// CONTINUATION expected: its order check has nothing to carry), and so is
// the header clock (nothing timed: a whole block), so neither misses the
// frame. Frames with anything else go to the Framer, which checks them.
func (c *Conn) takePlainHeaders(h []byte) (plainHeaders, bool) {
	const plainMask = http2.FlagHeadersEndHeaders | http2.FlagHeadersPadded | http2.FlagHeadersPriority
	if c.nextType != int(http2.FrameHeaders) || c.hb.active || c.cfg.Trace != nil {
		return plainHeaders{}, false
	}
	fh := parseFrameHeader(h)
	if fh.id == 0 || fh.flags&plainMask != http2.FlagHeadersEndHeaders {
		return plainHeaders{}, false
	}
	frag, ok := c.br.framePayload(c.cfg.MaxReadFrameSize)
	return plainHeaders{id: fh.id, end: fh.flags.Has(http2.FlagHeadersEndStream), frag: frag}, ok
}

// onPlainHeadersLocked is processLocked for a plainHeaders frame.
func (c *Conn) onPlainHeadersLocked(h plainHeaders) error {
	if err := c.firstFrameLocked(http2.FrameHeaders); err != nil {
		return err
	}
	return c.onHeaders(h.id, h.end, false, h.frag, true)
}

// firstFrameLocked checks that the peer's first frame (of type t) is SETTINGS.
func (c *Conn) firstFrameLocked(t http2.FrameType) error {
	if !c.peer.gotFirst && t != http2.FrameSettings {
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("first frame is %v, not SETTINGS", t)}
	}
	return nil
}

// readErrs passes reads through and keeps the first error the transport
// returned, so a framer error can be told from a failed connection.
type readErrs struct {
	r   io.Reader
	err error
}

func (r *readErrs) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// readError handles a Framer error; it reports whether reading can go on.
func (c *Conn) readError(err error) bool {
	var se http2.StreamError
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &se) && c.nextType != int(http2.FrameWindowUpdate):
		// The framer's other stream error is a HEADERS frame whose padding
		// is longer than the frame: a connection error (RFC 9113 6.2), and
		// its field block, never decoded, would leave HPACK out of step.
		c.fail(connError{http2.ErrCodeProtocol, fmt.Sprintf("malformed frame on stream %d (HEADERS padding longer than the frame)", se.StreamID)})
	case errors.As(err, &se):
		c.mu.Lock()
		c.handleErrLocked(streamError{se.StreamID, se.Code, fmt.Sprint(se.Cause)})
		stop := c.closing
		c.mu.Unlock()
		return !stop
	case errors.As(err, &ce):
		reason := "malformed frame"
		if d := c.rfr.ErrorDetail(); d != nil {
			reason = d.Error()
		}
		c.fail(connError{http2.ErrCode(ce), reason})
	case errors.Is(err, http2.ErrFrameTooLarge):
		c.fail(connError{http2.ErrCodeFrameSize, err.Error()})
	case c.rsrc.err == nil:
		// The whole frame was read, so its payload is too short for what
		// its flags announce (PADDED without a pad length, PRIORITY without
		// its 5 bytes): RFC 9113 4.2. Without the GOAWAY the connection
		// waited for the peer to close it.
		c.fail(connError{http2.ErrCodeFrameSize, fmt.Sprintf("frame too short for its flags: %v", err)})
	default:
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return false
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

func (c *Conn) handleErrLocked(err error) {
	if err == nil {
		return
	}
	var se streamError
	if errors.As(err, &se) {
		c.resetStreamLocked(se.StreamID, se.Code)
		return
	}
	c.failLocked(err)
}

// processLocked dispatches one frame. It returns a connError or streamError.
func (c *Conn) processLocked(f http2.Frame) error {
	if err := c.firstFrameLocked(f.Header().Type); err != nil {
		return err
	}
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.HeadersFrame:
		return c.onHeadersFrame(f)
	case *http2.ContinuationFrame:
		return c.onContinuation(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.PingFrame:
		return c.onPing(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.RSTStreamFrame:
		return c.onRSTStream(f)
	case *http2.GoAwayFrame:
		return c.onGoAway(f)
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID {
			return streamError{f.StreamID, http2.ErrCodeProtocol, "stream depends on itself"}
		}
		return nil // RFC 7540 priorities are replaced by RFC 9218 (we announce NO_RFC7540_PRIORITIES)
	case *http2.PriorityUpdateFrame:
		return c.onPriorityUpdate(f)
	case *http2.PushPromiseFrame:
		return c.onPushPromise(f)
	}
	return nil
}

// idleLocked reports whether id names a stream that was never opened.
func (c *Conn) idleLocked(id uint32) bool {
	if c.isOurs(id) {
		return id >= c.nextStreamID
	}
	return id > c.peerMaxStream
}

// isOurs reports whether we initiate streams with this ID's parity.
func (c *Conn) isOurs(id uint32) bool { return (id%2 == 1) == c.client }

func (c *Conn) onData(f *http2.DataFrame) error {
	id := f.StreamID
	n := f.Length // flow control counts padding too
	data := f.Data()
	st := c.streams.get(id)
	if err := c.dataErrLocked(id, st, n, len(data)); err != nil {
		var se streamError
		if errors.As(err, &se) {
			// Counted against the connection's window all the same (RFC
			// 9113 6.9), so handed back at once.
			c.recvWin.Receive(n)
			c.consumedLocked(nil, int(n))
		}
		return err
	}
	c.recvWin.Receive(n)
	st.recvWin.Receive(n)
	if pad := int(n) - len(data); pad > 0 {
		c.consumedLocked(st, pad)
	}
	c.bodyBytesLocked(st, data)
	if st.recv.closed && !st.ours && st.state == stateHalfClosedLocal && !f.StreamEnded() {
		// The response is complete and nobody reads the request body: ask
		// the client to stop sending it (RFC 9113 §8.1).
		c.resetStreamLocked(id, http2.ErrCodeNo)
		return nil
	}
	if f.StreamEnded() {
		return c.bodyEndLocked(st)
	}
	return nil
}

// dataErrLocked is the error a DATA frame of n flow-controlled bytes, data
// of them payload, earns on stream id (st, nil if none is open) before
// either window has taken it; nil accepts it. Both ways a DATA frame is
// read (onData, readDataInPieces) decide by it, so they cannot drift apart.
func (c *Conn) dataErrLocked(id uint32, st *stream, n uint32, data int) error {
	if int64(n) > c.recvWin.Avail() {
		return connError{http2.ErrCodeFlowControl, fmt.Sprintf("DATA of %d bytes exceeds connection window %d", n, c.recvWin.Avail())}
	}
	if st == nil || (st.state != stateOpen && st.state != stateHalfClosedLocal) {
		if st == nil && c.idleLocked(id) {
			return connError{http2.ErrCodeProtocol, fmt.Sprintf("DATA on idle stream %d", id)}
		}
		return streamError{id, http2.ErrCodeStreamClosed, "DATA on closed stream"}
	}
	if int64(n) > st.recvWin.Avail() {
		return streamError{id, http2.ErrCodeFlowControl, fmt.Sprintf("DATA of %d bytes exceeds stream window", n)}
	}
	if st.resc != nil && !st.gotFinal {
		// A response's DATA before its final HEADERS is malformed (RFC 9113 8.1).
		return streamError{id, http2.ErrCodeProtocol, "DATA before the response's HEADERS"}
	}
	if st.declLen >= 0 && st.gotLen+int64(data) > st.declLen {
		return streamError{id, http2.ErrCodeProtocol, fmt.Sprintf("DATA exceeds content-length %d", st.declLen)}
	}
	return nil
}

// bodyBytesLocked passes received body bytes to the stream's reader, or
// consumes them when nobody reads the body any more.
func (c *Conn) bodyBytesLocked(st *stream, p []byte) {
	st.gotLen += int64(len(p))
	if len(p) == 0 {
		return
	}
	if st.recv.closed {
		c.consumedLocked(nil, len(p))
		return
	}
	st.recv.q.Write(p)
	st.recvCond.Broadcast()
}

// bodyEndLocked is the peer's END_STREAM after the body's last byte.
func (c *Conn) bodyEndLocked(st *stream) error {
	if st.declLen >= 0 && st.gotLen != st.declLen {
		return streamError{st.id, http2.ErrCodeProtocol, fmt.Sprintf("body of %d bytes, content-length %d", st.gotLen, st.declLen)}
	}
	c.remoteClosedLocked(st)
	return nil
}

func (c *Conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		if len(c.unacked) == 0 {
			return connError{http2.ErrCodeProtocol, "SETTINGS ACK without outstanding SETTINGS"}
		}
		next := c.unacked[0]
		c.unacked = c.unacked[1:]
		c.settingsAcked++
		if delta := int64(next) - int64(c.ourInitial); delta != 0 {
			c.ourInitial = next
			for _, st := range c.streams.list() {
				// A stream of ours opened after these SETTINGS were queued
				// started from their window already (sentInitial).
				if !(st.ours && st.settingsSeq >= c.settingsAcked) {
					st.recvWin.Shift(delta)
				}
			}
		}
		return nil
	}
	if err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				return connError{http2.ErrCode(ce), fmt.Sprintf("invalid setting %v", s)}
			}
			return err
		}
		return c.applySettingLocked(s)
	}); err != nil {
		return err
	}
	if !c.peer.gotFirst && c.cfg.OnSettings != nil {
		c.deferred = append(c.deferred, func() { c.cfg.OnSettings(c) })
	}
	c.peer.gotFirst = true
	c.queueControlLocked(wframe{kind: wSettingsAck})
	c.slotWait.Broadcast()
	return nil
}

func (c *Conn) applySettingLocked(s http2.Setting) error {
	if i := slices.IndexFunc(c.peer.raw, func(r http2.Setting) bool { return r.ID == s.ID }); i >= 0 {
		c.peer.raw[i].Val = s.Val
	} else {
		c.peer.raw = append(c.peer.raw, s)
	}
	switch s.ID {
	case http2.SettingHeaderTableSize:
		c.encTableSize = min(s.Val, 64<<10) // bound our encoder's memory
		c.encTableChanged = true
	case http2.SettingEnablePush:
		if c.client && s.Val != 0 {
			return connError{http2.ErrCodeProtocol, "server sent SETTINGS_ENABLE_PUSH=1"}
		}
		c.peer.enablePush = s.Val == 1
	case http2.SettingMaxConcurrentStreams:
		c.peer.maxStreams = s.Val
	case http2.SettingInitialWindowSize:
		delta := int64(s.Val) - int64(c.peer.initialWindow)
		c.peer.initialWindow = s.Val
		for _, st := range c.streams.list() {
			if !st.sendWin.Shift(delta) {
				return connError{http2.ErrCodeFlowControl, fmt.Sprintf("SETTINGS_INITIAL_WINDOW_SIZE %d overflows stream %d window", s.Val, st.id)}
			}
			c.scheduleLocked(st)
		}
	case http2.SettingMaxFrameSize:
		c.peer.maxFrameSize = s.Val
	case http2.SettingMaxHeaderListSize:
		c.peer.maxHeaderList = s.Val
	case settingsNoRFC7540Prio:
		if s.Val > 1 {
			return connError{http2.ErrCodeProtocol, fmt.Sprintf("SETTINGS_NO_RFC7540_PRIORITIES=%d", s.Val)}
		}
		c.peer.noRFC7540Prio = s.Val == 1
	}
	return nil
}

func (c *Conn) onPing(f *http2.PingFrame) error {
	if !f.IsAck() {
		c.queueControlLocked(wframe{kind: wPingAck, ping: f.Data})
		return nil
	}
	if ch, ok := c.pings[f.Data]; ok {
		delete(c.pings, f.Data)
		ch <- time.Now()
	}
	return nil
}

func (c *Conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	if f.StreamID == 0 {
		if !c.sendWin.Add(f.Increment) {
			return connError{http2.ErrCodeFlowControl, fmt.Sprintf("WINDOW_UPDATE %d overflows connection window", f.Increment)}
		}
		if c.connBlocked && c.sendWin.Avail() > 0 {
			c.connBlocked = false
			c.wakeWriterLocked()
		}
		return nil
	}
	st := c.streams.get(f.StreamID)
	if st == nil {
		if c.idleLocked(f.StreamID) {
			return connError{http2.ErrCodeProtocol, fmt.Sprintf("WINDOW_UPDATE on idle stream %d", f.StreamID)}
		}
		return nil
	}
	if !st.sendWin.Add(f.Increment) {
		return streamError{f.StreamID, http2.ErrCodeFlowControl, fmt.Sprintf("WINDOW_UPDATE %d overflows stream window", f.Increment)}
	}
	c.scheduleLocked(st)
	return nil
}

func (c *Conn) onRSTStream(f *http2.RSTStreamFrame) error {
	st := c.streams.get(f.StreamID)
	if st == nil {
		if c.idleLocked(f.StreamID) {
			return connError{http2.ErrCodeProtocol, fmt.Sprintf("RST_STREAM on idle stream %d", f.StreamID)}
		}
		return nil
	}
	if !c.client && !st.ours && !st.send.endSent && !c.resets.allow(time.Now()) {
		c.closeStreamLocked(st, StreamResetError{StreamID: st.id, Code: f.ErrCode, Remote: true})
		return connError{http2.ErrCodeEnhanceYourCalm, "too many stream resets"}
	}
	err := StreamResetError{StreamID: st.id, Code: f.ErrCode, Remote: true}
	if c.client && f.ErrCode == http2.ErrCodeRefusedStream {
		c.closeStreamLocked(st, retryableError{err})
		return nil
	}
	c.closeStreamLocked(st, err)
	return nil
}

func (c *Conn) onGoAway(f *http2.GoAwayFrame) error {
	ga := &GoAwayError{LastStreamID: f.LastStreamID, Code: f.ErrCode, Debug: string(f.DebugData())}
	c.goAwayRecv = ga
	for _, st := range c.streams.list() {
		if st.ours && st.id > f.LastStreamID {
			c.closeStreamLocked(st, retryableError{ga})
		}
	}
	c.slotWait.Broadcast()
	c.maybeFinishLocked()
	return nil
}

// reprioritizeLocked gives st priority p, also in the DATA scheduler if it
// is waiting there.
func (c *Conn) reprioritizeLocked(st *stream, p prio.Priority) {
	st.prio = p
	c.sched.Update(&st.sched, p)
}

func (c *Conn) onPriorityUpdate(f *http2.PriorityUpdateFrame) error {
	if c.client {
		return nil
	}
	id := f.PrioritizedStreamID
	if id%2 == 0 {
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("PRIORITY_UPDATE for push stream %d", id)}
	}
	p, err := prio.Parse(f.Priority)
	if err != nil {
		return nil // an unparsable value is ignored (RFC 9218 7.1)
	}
	if st := c.streams.get(id); st != nil {
		c.reprioritizeLocked(st, p)
		return nil
	}
	if c.idleLocked(id) && len(c.pendingPrio) < int(c.cfg.MaxConcurrentStreams) {
		if c.pendingPrio == nil {
			c.pendingPrio = make(map[uint32]prio.Priority)
		}
		c.pendingPrio[id] = p
	}
	return nil
}
