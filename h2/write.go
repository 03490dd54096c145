package h2

import (
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

type wkind uint8

const (
	wData wkind = iota
	wHeaders
	wPushPromise
	wSettings
	wSettingsAck
	wPing
	wPingAck
	wRST
	wGoAway
	wWindowUpdate
	wRaw
	wClose // no frame: flush and close once everything before it is written
)

// wframe is one frame for the writer. Control frames are queued in order;
// DATA frames are made by the scheduler when the writer collects a batch.
type wframe struct {
	kind       wkind
	id         uint32
	val        uint32 // increment, error code, promised or last stream ID
	end        bool
	closeAfter bool // the connection's last frame: half-close, drain and close after it
	ping       [8]byte
	fields     []hpack.HeaderField
	shared     []hpack.HeaderField // more fields, after fields: a PreparedWriter's, not to be modified
	data       []byte
	settings   []http2.Setting
	ftype      http2.FrameType
	flags      http2.Flags
	after      func()           // runs on the writer after the frame is written
	chunk      *[chunkSize]byte // a DATA frame's own send-queue chunk, pooled once written
	borrowed   bool             // DATA of a WriteShared caller's: written by reference
}

// writeLoop owns the connection's output: it takes batches of frames under
// the lock, writes them without it, and flushes only when no work is left, so
// many frames share one syscall.
func (c *Conn) writeLoop() {
	defer c.writers.Done()
	// The kit was taken by wakeWriterLocked (a client's by newConn).
	batch := c.kit.batch
	owned := true // false once the idle writer gave its kit back
	defer func() {
		// A closed connection's kit goes back to the pool too: h2load's
		// runs close 100 connections and open 100 new ones, which took
		// new kits (~7 KB each, and their batches grown anew) while the
		// closed ones' became garbage. Every other exit follows close,
		// after which no writer starts.
		if owned {
			c.mu.Lock()
			c.putWriteBuffersLocked(batch)
			c.mu.Unlock()
		}
	}()
	dirty, yielded := false, false
	for {
		c.mu.Lock()
		if len(c.written) > 0 {
			// The last batch, written, held their last frames.
			c.free = append(c.free, c.written...)
			clear(c.written)
			c.written = c.written[:0]
		}
		for !c.hasWorkLocked() {
			if c.closed {
				c.writerRunning = false
				c.addBusyLocked(-1)
				c.mu.Unlock()
				return
			}
			if dirty {
				c.mu.Unlock()
				if !yielded {
					// Let runnable handlers add their responses first, so
					// one write carries many (it costs no latency when
					// nothing else is runnable).
					yielded = true
					runtime.Gosched()
					c.mu.Lock()
					continue
				}
				yielded = false
				if err := c.bw.Flush(); err != nil {
					c.close(err)
					return
				}
				dirty = false
				c.mu.Lock()
				continue
			}
			if !c.keepWriter && c.writerIdleLocked() {
				// Idle: no goroutine nor buffers until there is output.
				c.writerRunning = false
				c.addBusyLocked(-1)
				c.nudgeLocked()
				c.putWriteBuffersLocked(batch) // with the control queues' arrays
				owned = false
				c.dropFreeLocked()
				c.streams.shrink()
				c.sched.Reset()
				// The timer (~150 bytes with its closure) is made again
				// by the next quiet spell, at most once per grace.
				c.graceTimer.Stop()
				c.graceTimer = nil
				c.mu.Unlock()
				return
			}
			c.writerWaits = true
			c.wcond.Wait()
			c.writerWaits = false
		}
		c.idleSince = time.Time{}
		budget := writeBatchBudget
		if (c.sendq != nil || c.wantSendq) && c.dataReadyLocked() {
			c.mu.Unlock()
			if c.wantSendq {
				// Made with the first DATA: an idle connection holds none.
				c.wantSendq = false
				c.sendq = newSendQueue(c.nc, c.cfg.sendMark)
			}
			if c.sendq != nil && c.sendq.paced(time.Now()) {
				// Short send queue on a slow link: what is buffered goes
				// out, then the scheduler picks the next mark's worth once
				// the kernel would take it, not before.
				if dirty {
					if err := c.bw.Flush(); err != nil {
						c.close(err)
						return
					}
					dirty, yielded = false, false
				}
				if err := c.sendq.waitWritable(); err != nil {
					c.close(err)
					return
				}
				budget = c.sendq.budget(time.Now())
			}
			c.mu.Lock()
		}
		if c.encTableChanged {
			c.henc.SetMaxDynamicTableSizeLimit(c.encTableSize)
			c.blocks.tableChanged()
			c.encTableChanged = false
		}
		maxFrame := int(c.peer.maxFrameSize)
		batch = c.collectLocked(batch[:0], budget)
		c.mu.Unlock()

		for i := range batch {
			f := &batch[i]
			if err := c.writeFrame(f, maxFrame); err != nil {
				c.close(err)
				return
			}
			if f.chunk != nil {
				chunkPool.Put(f.chunk)
			}
			if f.after != nil {
				f.after()
			}
			switch {
			case f.kind == wClose || f.closeAfter:
				c.bw.Flush()
				c.drainAndClose(f.closeAfter)
				return
			}
			*f = wframe{}
		}
		dirty = true
	}
}

// defaultWriterGrace is how long a server connection's writer outlives its last
// stream at first (quietGrace lengthens it for clients that come back). A
// client that keeps a connection busy (h2load, a page load) opens the next
// stream within microseconds to a round trip; ending the writer in between
// cost a goroutine start, its stack growth and a kit from the pool per
// burst. An idle connection still holds no writer after the grace.
const defaultWriterGrace = 10 * time.Millisecond

// writerIdleLocked reports whether the writer, with no work, has had no
// stream for the connection's grace (quietGrace, from Config.writerGrace); the
// first call of an idle spell arms a timer that wakes the writer when the
// grace ends.
func (c *Conn) writerIdleLocked() bool {
	if c.activePeer+c.activeOurs > 0 {
		c.idleSince = time.Time{}
		return false
	}
	now := time.Now()
	grace := c.grace.of(c.cfg.writerGrace)
	if c.idleSince.IsZero() {
		c.idleSince = now
		if c.graceTimer == nil {
			c.graceTimer = time.AfterFunc(grace, func() {
				c.mu.Lock()
				c.wcond.Broadcast()
				c.mu.Unlock()
			})
		} else {
			c.graceTimer.Reset(grace)
		}
		return false
	}
	if now.Sub(c.idleSince) < grace {
		return false
	}
	c.grace.ranOut(c.idleSince)
	c.idleSince = time.Time{}
	return true
}

// writeKit is what a running writer writes with: the buffered writer, a
// Framer writing into it, and the DATA arena. Kits are pooled, so an idle
// connection holds none.
type writeKit struct {
	bw *batchWriter
	fr *http2.Framer
	// arena is made by the first DATA frame that must be copied out of its
	// stream's queue (collectLocked), and kept with the kit: a writer of
	// shared bodies only (the file cache's) never needs one. Made with
	// every kit, its 80 KB were more than half of what each of h2load's
	// 100 new connections allocated, and brought garbage collections at
	// the start of every run (issue 18's p99 at -c 100).
	arena *[writeBatchBudget + maxDataFrame]byte
	// batch is the writer's batch array, empty, kept grown.
	batch []wframe
	// queues are the control queues' arrays (Conn.ctrl and spare) of the
	// connection that gave the kit back, empty, kept grown: each new
	// connection of h2load -c 100 grew its own to 16 frames (2.4 KB), its
	// first burst's responses, ~4.5 KB of the 14 KB it allocated (issue 18).
	queues [2][]wframe
}

var writeKits = sync.Pool{New: func() any {
	k := &writeKit{bw: newBatchWriter()}
	k.fr = http2.NewFramer(k.bw, nil)
	return k
}}

// takeWriteBuffers gives the writer a kit, before it starts: under c.mu
// (or while newConn makes c), as it takes the kit's control queues too.
func (c *Conn) takeWriteBuffers() {
	if c.kit != nil {
		return
	}
	c.kit = writeKits.Get().(*writeKit)
	c.kit.bw.Reset(sendClock{c.nc, c.cfg.SendTimeout, recordsUnder(c.nc)}, plainTCP(c.nc))
	c.bw, c.arena = c.kit.bw, nil
	if c.kit.arena != nil {
		c.arena = c.kit.arena[:0]
	}
	if c.cfg.Trace == nil {
		c.wfr = c.kit.fr
	}
	c.useKitQueuesLocked()
}

// useKitQueuesLocked makes the kit's control queue arrays c's, with the
// frames queued so far (the one that started the writer).
func (c *Conn) useKitQueuesLocked() {
	q := &c.kit.queues
	if cap(q[0]) <= len(c.ctrl) || c.spare != nil {
		return
	}
	c.ctrl, c.spare = append(q[0], c.ctrl...), q[1]
	*q = [2][]wframe{}
}

// putWriteBuffersLocked returns the kit, with the writer's batch array
// and the control queues' arrays, once the writer has flushed; the lock
// orders this against the next writer's takeWriteBuffers. The queues are
// empty unless the connection closed, whose frames go unwritten.
func (c *Conn) putWriteBuffersLocked(batch []wframe) {
	clear(batch) // frames a failed write left
	c.kit.batch = batch[:0]
	c.kit.keepQueuesLocked(c)
	c.kit.bw.Reset(sendClock{}, nil)
	writeKits.Put(c.kit)
	c.kit, c.bw, c.arena = nil, nil, nil
	if c.cfg.Trace == nil {
		c.wfr = nil
	}
}

// framerOut is what a tracing connection's Framer writes to: the writer's
// current buffered writer.
type framerOut struct{ c *Conn }

func (w framerOut) Write(p []byte) (int, error) { return w.c.bw.Write(p) }

func (c *Conn) hasWorkLocked() bool {
	return len(c.ctrl) > 0 || c.dataReadyLocked()
}

// dataReadyLocked reports whether the scheduler has DATA the windows allow.
func (c *Conn) dataReadyLocked() bool {
	return c.sched.Len() > 0 && !c.connBlocked && !c.closing
}

// keepQueuesLocked moves c's control queue arrays, emptied, into k.
func (k *writeKit) keepQueuesLocked(c *Conn) {
	for i, q := range [2][]wframe{c.ctrl, c.spare} {
		clear(q[:cap(q)]) // what failLocked's truncation left too
		k.queues[i] = q[:0]
	}
	c.ctrl, c.spare = nil, nil
}

// collectLocked takes every queued control frame, then DATA frames chosen by
// the scheduler up to budget bytes, none larger than budget.
func (c *Conn) collectLocked(batch []wframe, budget int) []wframe {
	batch = append(batch, c.ctrl...)
	clear(c.ctrl)
	c.ctrl, c.spare = c.spare[:0], c.ctrl[:0]
	if c.closing {
		return batch
	}
	c.arena = c.arena[:0]
	frameCap := min(int(c.peer.maxFrameSize), maxDataFrame)
	maxFrame := min(frameCap, budget)
	for budget > 0 && !c.connBlocked {
		e, ok := c.sched.Next()
		if !ok {
			break
		}
		id := e.ID
		st := c.streams.get(id)
		if st == nil {
			c.sched.Remove(e)
			continue
		}
		s := &st.send
		if s.ready > 0 {
			// The budget may be overshot by one frame (the arena has room):
			// cutting a response's last frame short would cost it a copy
			// and an extra frame in the next batch, and a paced writer's
			// small batches would put other streams' frames between the
			// pieces of a response that fits one frame.
			n := min(s.ready, maxFrame)
			if s.end && s.ready <= frameCap {
				n = s.ready
			}
			n = int(min(int64(n), st.sendWin.Avail(), c.sendWin.Avail()))
			if n <= 0 {
				if st.sendWin.Avail() <= 0 {
					c.sched.Remove(e)
					continue
				}
				c.connBlocked = true
				break
			}
			data, chunk, ok := s.q.take(n)
			borrowed := ok && chunk == nil
			if !ok {
				if c.arena == nil {
					c.kit.arena = new([writeBatchBudget + maxDataFrame]byte)
					c.arena = c.kit.arena[:0]
				}
				off := len(c.arena)
				c.arena = c.arena[:off+n]
				s.q.Read(c.arena[off:])
				data = c.arena[off:]
			}
			s.ready -= n
			s.sent += int64(n)
			st.sendWin.Take(n)
			c.sendWin.Take(n)
			budget -= n
			end := s.end && s.q.Len() == 0 && s.trailers == nil
			batch = append(batch, wframe{kind: wData, id: id, end: end, data: data, chunk: chunk, borrowed: borrowed})
			// Wake a blocked body writer only once half the queue has
			// drained, so that it refills in large writes rather than
			// waking for every frame.
			if s.waiting && s.q.Len() <= maxPendingSend/2 {
				s.waiting = false
				st.sendCond.Broadcast()
			}
			if end {
				s.endSent = true
				s.q.Release()
				c.localClosedLocked(st)
			} else if !s.sendable() {
				c.sched.Remove(e)
			}
			continue
		}
		if s.end && !s.endSent && s.q.Len() == 0 {
			s.endSent = true
			s.q.Release()
			if s.trailers != nil {
				batch = append(batch, wframe{kind: wHeaders, id: id, end: true, fields: s.trailers})
			} else {
				batch = append(batch, wframe{kind: wData, id: id, end: true})
			}
			c.localClosedLocked(st)
		}
		c.sched.Remove(e)
	}
	// Every frame queued for the streams closed so far is in this batch
	// or an earlier one.
	c.written = append(c.written, c.freeing...)
	clear(c.freeing)
	c.freeing = c.freeing[:0]
	return batch
}

// writeFrame writes one frame into the buffered writer.
func (c *Conn) writeFrame(f *wframe, maxFrame int) error {
	fr := c.wfr
	switch f.kind {
	case wData:
		if c.cfg.Trace != nil {
			return fr.WriteData(f.id, f.end, f.data)
		}
		return c.writeDataFrame(f)
	case wHeaders, wPushPromise:
		return c.writeHeaderBlock(f, maxFrame)
	case wSettings:
		return fr.WriteSettings(f.settings...)
	case wSettingsAck:
		return fr.WriteSettingsAck()
	case wPing:
		return fr.WritePing(false, f.ping)
	case wPingAck:
		return fr.WritePing(true, f.ping)
	case wRST:
		return fr.WriteRSTStream(f.id, http2.ErrCode(f.val))
	case wGoAway:
		return fr.WriteGoAway(f.id, http2.ErrCode(f.val), f.data)
	case wWindowUpdate:
		return fr.WriteWindowUpdate(f.id, f.val)
	case wRaw:
		return fr.WriteRawFrame(f.ftype, f.flags, f.id, f.data)
	}
	return nil
}

// writeDataFrame writes a DATA frame into the buffered writer directly: the
// Framer would first copy the payload into its own frame buffer. Shared
// bytes stay unmodified until the flush, so they go by reference.
func (c *Conn) writeDataFrame(f *wframe) error {
	var flags http2.Flags
	if f.end {
		flags = http2.FlagDataEndStream
	}
	c.writeFrameHeader(len(f.data), http2.FrameData, flags, f.id)
	var err error
	if f.borrowed {
		_, err = c.bw.WriteRef(f.data)
	} else {
		_, err = c.bw.Write(f.data)
	}
	return err
}

// writeFrameHeader writes a frame header into the buffered writer.
func (c *Conn) writeFrameHeader(n int, t http2.FrameType, flags http2.Flags, id uint32) {
	c.dataHdr = frameHeader{uint32(n), t, flags, id}.encode()
	c.bw.Write(c.dataHdr[:])
}

// frameHeaderLen is the size of an HTTP/2 frame header (RFC 9113 4.1).
const frameHeaderLen = 9

// frameHeader is a frame header as the engine's own paths write and read
// it, without the Framer: DATA and HEADERS written straight into the
// buffered writer, and the read loop's look at the next frame.
type frameHeader struct {
	length uint32
	typ    http2.FrameType
	flags  http2.Flags
	id     uint32
}

func (h frameHeader) encode() [frameHeaderLen]byte {
	n, id := h.length, h.id
	return [frameHeaderLen]byte{byte(n >> 16), byte(n >> 8), byte(n), byte(h.typ), byte(h.flags),
		byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
}

// parseFrameHeader reads the first frameHeaderLen bytes of b; the stream
// identifier's reserved bit is dropped (RFC 9113 4.1).
func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length: uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:    http2.FrameType(b[3]),
		flags:  http2.Flags(b[4]),
		id:     (uint32(b[5])<<24 | uint32(b[6])<<16 | uint32(b[7])<<8 | uint32(b[8])) & (1<<31 - 1),
	}
}

// writeHeaderBlock HPACK-encodes fields and writes HEADERS or PUSH_PROMISE
// plus as many CONTINUATION frames as the peer's frame size requires.
func (c *Conn) writeHeaderBlock(f *wframe, maxFrame int) error {
	block := c.encodeBlock(f)
	first := block
	if len(first) > maxFrame {
		first = first[:maxFrame]
	}
	rest := block[len(first):]
	var err error
	switch {
	case f.kind == wPushPromise:
		err = c.wfr.WritePushPromise(http2.PushPromiseParam{StreamID: f.id, PromiseID: f.val, BlockFragment: first, EndHeaders: len(rest) == 0})
	case c.cfg.Trace == nil:
		// Straight into the buffered writer, as DATA: the Framer would
		// build the frame in its own buffer first (~200 instructions a
		// response).
		var flags http2.Flags
		if f.end {
			flags |= http2.FlagHeadersEndStream
		}
		if len(rest) == 0 {
			flags |= http2.FlagHeadersEndHeaders
		}
		c.writeFrameHeader(len(first), http2.FrameHeaders, flags, f.id)
		_, err = c.bw.Write(first)
	default:
		err = c.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.id, BlockFragment: first, EndStream: f.end, EndHeaders: len(rest) == 0})
	}
	for err == nil && len(rest) > 0 {
		frag := rest
		if len(frag) > maxFrame {
			frag = frag[:maxFrame]
		}
		rest = rest[len(frag):]
		err = c.wfr.WriteContinuation(f.id, len(rest) == 0, frag)
	}
	return err
}

// encodeBlock returns f's fields HPACK-encoded, valid until the next call.
func (c *Conn) encodeBlock(f *wframe) []byte {
	if block, ok := c.blocks.lookup(f); ok {
		return block
	}
	c.hbuf.Reset()
	for _, hf := range f.fields {
		c.henc.WriteField(hf)
	}
	for _, hf := range f.shared {
		c.henc.WriteField(hf)
	}
	block := c.hbuf.Bytes()
	c.blocks.encoded(f, block)
	return block
}

// drainAndClose ends a connection after its last frame. After a connection
// error or a GOAWAY exchange it half-closes and keeps reading (discarding)
// briefly, so the peer gets our last frames rather than a TCP reset for its
// unread data.
func (c *Conn) drainAndClose(afterError bool) {
	if afterError {
		if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		c.nc.SetReadDeadline(time.Now().Add(goAwayDrainTimeout))
		c.mu.Lock()
		draining := c.closing && !c.closed
		c.mu.Unlock()
		if draining {
			// The read loop has stopped processing; it reads until EOF or the deadline.
			<-c.done
			return
		}
	}
	c.close(net.ErrClosed)
}
