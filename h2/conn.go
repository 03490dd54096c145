// Package h2 is shunt's HTTP/2 connection engine (RFC 9113), one engine for the
// client and server roles, built on golang.org/x/net/http2's Framer and hpack.
//
// It exposes what packaged stacks do not: extension frames and settings,
// application-controlled stream receive windows, PING RTT samples, and the
// hooks SMig needs to move a stream between connections.
//
// Each connection has a read goroutine (parsing and dispatch, read.go) and a
// write goroutine (control frames and the RFC 9218 DATA scheduler, write.go);
// a server connection's writer runs only while there is output or an open
// stream, and a quiet one served detached has no reader either (park.go).
// Connection state lives behind one mutex held only for bookkeeping, never
// across I/O; handlers and body readers talk to the state through it.
package h2

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shunt-net/shunt/h2/internal/flow"
	"github.com/shunt-net/shunt/h2/internal/prio"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Conn is one HTTP/2 connection in either role.
type Conn struct {
	nc     net.Conn
	cfg    *Config // with defaults; a server's connections share one (read only)
	client bool
	srv    *Server
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc

	// Owned by the read goroutine.
	br   *connReader
	rsrc *readErrs // what the framer reads through: says whether the transport failed
	// nextType is the type of the frame ReadFrame reads (frameTypeUnknown
	// if its header was not buffered yet), to tell the framer's stream errors apart.
	nextType int
	rfr      *http2.Framer
	hdec     *hpack.Decoder
	hb       headerBlock
	repeat   repeatBlock // the last block, if the next may repeat it
	inline   inlineJob   // a request for the InlineHandler, after the frame's unlock
	pieces   *pieceTrace // a DATA frame read in pieces, made whole for Trace
	ireq     *inlineReq  // what inline requests are made of

	// Owned by the write goroutine.
	bw      *batchWriter
	wfr     *http2.Framer
	henc    *hpack.Encoder
	hbuf    bytes.Buffer
	blocks  blockCache // henc's encodings of prepared responses
	arena   []byte
	dataHdr [frameHeaderLen]byte // not on the stack: bufio may pass it to the conn

	mu          sync.Mutex
	wcond       sync.Cond // the writer waits here for work
	ctrl        []wframe  // queued control and HEADERS frames, in order
	spare       []wframe
	sched       prio.Scheduler
	streams     streamTable
	sendWin     flow.Send
	recvWin     flow.Recv
	connBlocked bool // data waits for a connection WINDOW_UPDATE

	peer            peerSettings
	encTableSize    uint32 // peer's HEADER_TABLE_SIZE not yet applied to henc
	encTableChanged bool
	ourInitial      uint32   // our acknowledged SETTINGS_INITIAL_WINDOW_SIZE
	unacked         []uint32 // INITIAL_WINDOW_SIZE of each SETTINGS sent, not yet acked
	settingsSent    int      // SETTINGS frames queued so far
	settingsAcked   int      // of them, acknowledged
	peerMaxStream   uint32   // highest stream ID the peer opened
	nextStreamID    uint32   // next stream ID we open
	activePeer      int      // open streams the peer initiated
	activeOurs      int      // open streams we initiated
	reserved        int      // client slots taken by Transport.getConn, not yet used
	deferred        []func() // callbacks the read goroutine runs after unlocking
	slotWait        sync.Cond
	pendingPrio     map[uint32]prio.Priority // PRIORITY_UPDATE for streams not yet open
	// Closed streams for reuse (newPeerStream), and those whose frames
	// are still queued or being written (freeStreamLocked).
	free, freeing, written []*stream

	goAwaySent bool
	goAwayRecv *GoAwayError
	closing    bool  // fatal GOAWAY queued; stop processing frames
	closed     bool  // connection torn down
	err        error // why it ended
	done       chan struct{}

	pings   map[[8]byte]chan time.Time
	pingSeq uint64
	rtts    *[rttRingSize]time.Duration // made by the first sample
	nrtt    int

	resets    resetLimiter
	handlers  int                  // server handlers still running
	raddr     string               // nc.RemoteAddr().String(), made once
	tlsState  *tls.ConnectionState // the requests' Request.TLS, made once
	idleTimer *time.Timer
	// The writer goroutine runs while there is output or an open stream;
	// a server connection without either has none, nor its buffers
	// (startWriterLocked, writeLoop). A client's writer runs throughout.
	writerRunning bool
	keepWriter    bool
	// writerWaits: the writer is in wcond.Wait and no wake-up has been
	// sent to it since; wakeWriterLocked signals only then. A running
	// writer finds the work when it next looks, and a Signal with no
	// waiter still cost ~90 instructions.
	writerWaits bool
	writers     sync.WaitGroup
	idleSince   time.Time   // when the writer found nothing to do and no stream
	graceTimer  *time.Timer // wakes the writer when its grace has passed
	grace       quietGrace  // how long a quiet server connection keeps its writer and state
	// Owned by the running writer.
	kit       *writeKit
	sendq     *sendQueue // nil: the kernel's send queue as it is
	wantSendq bool       // make sendq with the first DATA

	// A detached server connection (Server.ServeConnDetached) parks while
	// quiet: no read goroutine, its socket in the parker's epoll set
	// (park.go). The fields after detached are under mu.
	detached  bool
	parkedNow bool
	parkToken uint64
	parkAdded bool
	ended     func() // the server's end of the connection, after the read loop
	// busyN counts open streams, running handlers and a running writer,
	// under mu with the fields it mirrors (addBusyLocked); busy is 1 while
	// busyN > 0, else 0, for the reader to tell a busy connection without
	// the lock; waitState is park.go's.
	busyN     int32
	busy      atomic.Int32
	waitState atomic.Int32
	// dataIn counts DATA payload read (DataReceived), a frame read in
	// pieces piece by piece.
	dataIn atomic.Int64
	// lastFrame is when a client connection last read a whole frame, in ns
	// since epoch (monotonic clock), 0 none yet (LastFrameRead); servers
	// leave it, so their read loop pays nothing for it.
	lastFrame atomic.Int64
	epoch     time.Time
}

// peerSettings are the values the peer announced, with RFC defaults.
type peerSettings struct {
	maxFrameSize    uint32
	initialWindow   uint32
	maxStreams      uint32
	enablePush      bool
	maxHeaderList   uint32
	raw             []http2.Setting // every setting announced, latest value, in order of first mention
	noRFC7540Prio   bool
	gotFirst        bool
	headerTableSize uint32
}

// newConn makes a connection; cfg has its defaults (Config.withDefaults).
func newConn(nc net.Conn, cfg *Config, client bool, parent context.Context) *Conn {
	ctx, cancel := context.WithCancel(parent)
	c := &Conn{
		nc:         nc,
		cfg:        cfg,
		client:     client,
		ctx:        ctx,
		cancel:     cancel,
		br:         newConnReader(nc),
		sendWin:    flow.NewSend(initialWindowRFC),
		recvWin:    flow.NewRecv(initialWindowRFC),
		ourInitial: initialWindowRFC,
		done:       make(chan struct{}),
		peer: peerSettings{
			maxFrameSize:    defaultMaxFrame,
			initialWindow:   initialWindowRFC,
			maxStreams:      defaultMaxStreams, // assumed until the peer's SETTINGS
			enablePush:      !client,
			maxHeaderList:   1<<32 - 1,
			headerTableSize: 4096,
		},
	}
	c.wcond.L = &c.mu
	c.slotWait.L = &c.mu
	if client {
		c.epoch = time.Now()
		c.nextStreamID = 1
		c.peer.enablePush = true // a server may push; we refuse it in our SETTINGS
	} else {
		c.nextStreamID = 2
		c.peer.enablePush = true // until the client says otherwise
	}
	c.resets = newResetLimiter(max(100, 2*int(cfg.MaxConcurrentStreams)), time.Second)

	var src io.Reader = c.br
	if !client {
		src = &headerClock{r: c.br, nc: nc, limit: cfg.HeaderTimeout}
	}
	c.rsrc = &readErrs{r: src}
	c.newReadFramer()

	if client {
		c.keepWriter = true
		c.takeWriteBuffers()
	}
	if cfg.Trace != nil {
		c.wfr = http2.NewFramer(&traceWriter{w: framerOut{c}, trace: cfg.Trace}, nil)
	}
	c.henc = hpack.NewEncoder(&c.hbuf)
	return c
}

// newDecoder makes the HPACK decoder, with the first header block: a
// connection that never gets one (an idle one) does without.
func (c *Conn) newDecoder() {
	c.hdec = hpack.NewDecoder(4096, c.onField)
	// A field over MaxHeaderListSize must still decode (the HPACK state
	// goes on), so that the request gets 431 and the connection lives: a
	// string is bounded by what the block may hold (headerFragment's bound),
	// decoded (Huffman codes are at least 5 bits a byte, so 8/5 of that).
	c.hdec.SetMaxStringLength((2*int(c.cfg.MaxHeaderListSize) + int(c.cfg.MaxReadFrameSize)) * 8 / 5)
}

// newReadFramer makes the read side's Framer: at the start, and when a
// parked connection (which gave its Framer up, park.go) reads again.
func (c *Conn) newReadFramer() {
	c.rfr = http2.NewFramer(nil, c.rsrc)
	c.rfr.SetReuseFrames()
	c.rfr.SetMaxReadFrameSize(c.cfg.MaxReadFrameSize)
}

// initialSettings queues our first SETTINGS frame and the connection
// WINDOW_UPDATE that opens the connection window to ConnWindowSize.
func (c *Conn) initialSettings() {
	s := []http2.Setting{
		{ID: http2.SettingInitialWindowSize, Val: c.cfg.InitialWindowSize},
		{ID: http2.SettingMaxFrameSize, Val: c.cfg.MaxReadFrameSize},
		{ID: http2.SettingMaxHeaderListSize, Val: c.cfg.MaxHeaderListSize},
		{ID: settingsNoRFC7540Prio, Val: 1},
	}
	if c.client {
		push := uint32(0)
		if c.cfg.OnPush != nil {
			push = 1
		}
		s = append(s, http2.Setting{ID: http2.SettingEnablePush, Val: push})
	} else {
		s = append(s, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.cfg.MaxConcurrentStreams})
	}
	s = append(s, c.cfg.ExtraSettings...)
	c.mu.Lock()
	c.unacked = append(c.unacked, c.cfg.InitialWindowSize)
	c.settingsSent++
	c.queueLocked(wframe{kind: wSettings, settings: s})
	if inc := c.recvWin.Grow(c.cfg.ConnWindowSize - initialWindowRFC); inc > 0 {
		c.queueLocked(wframe{kind: wWindowUpdate, val: inc})
	}
	c.mu.Unlock()
}

// queueLocked appends a frame for the writer and wakes it.
func (c *Conn) queueLocked(f wframe) {
	c.ctrl = append(c.ctrl, f)
	c.wakeWriterLocked()
}

// wakeWriterLocked tells the writer there is work, starting it if none runs.
func (c *Conn) wakeWriterLocked() {
	if c.writerRunning {
		if c.writerWaits {
			c.writerWaits = false
			c.wcond.Signal()
		}
		return
	}
	if c.closed {
		return
	}
	c.writerRunning = true
	c.addBusyLocked(1)
	c.writers.Add(1)
	c.takeWriteBuffers()
	go c.writeLoop()
	// The writer may set a read deadline (the drain after GOAWAY) that only
	// a running reader sees.
	c.unparkLocked()
}

// queueControlLocked queues a frame the peer provoked (ACKs, RST_STREAM),
// failing the connection if the peer provokes more than the writer drains.
func (c *Conn) queueControlLocked(f wframe) {
	if len(c.ctrl) >= maxQueuedControl {
		c.failLocked(connError{http2.ErrCodeEnhanceYourCalm, "too many queued control frames"})
		return
	}
	c.queueLocked(f)
}

// failLocked ends the connection after a connection error: GOAWAY with the
// error's code, then a drain and close (the writer does both).
func (c *Conn) failLocked(err error) {
	if c.closing || c.closed {
		return
	}
	code := http2.ErrCodeInternal
	var reason string
	var ce connError
	if errors.As(err, &ce) {
		code, reason = ce.Code, ce.Reason
	}
	c.closing = true
	if c.err == nil {
		c.err = err
	}
	c.goAwaySent = true
	c.ctrl = c.ctrl[:0] // nothing else matters now
	c.queueLocked(wframe{kind: wGoAway, id: c.peerMaxStream, val: uint32(code), data: []byte(reason), closeAfter: true})
	// A writer stuck on a peer that does not read must not keep us alive.
	time.AfterFunc(goAwayDrainTimeout, func() { c.close(err) })
}

// close tears the connection down: every stream fails, waiters wake.
func (c *Conn) close(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.closing = true
	if c.err == nil {
		c.err = err
	}
	cerr := c.err
	for _, st := range c.streams.list() {
		c.closeStreamLocked(st, fmt.Errorf("%w: %v", ErrConnClosed, cerr))
	}
	for _, ch := range c.pings {
		close(ch)
	}
	c.pings = nil
	c.dropFreeLocked()
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	if c.graceTimer != nil {
		c.graceTimer.Stop()
	}
	c.wcond.Broadcast()
	c.slotWait.Broadcast()
	c.unparkLocked() // its reader sees the close and ends the connection
	c.mu.Unlock()
	c.nc.Close()
	c.cancel()
	close(c.done)
	if c.srv != nil {
		c.srv.forget(c)
	}
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		return nil
	}
	return c.err
}

// DataReceived is the DATA payload, padding included, read from the peer
// so far: each piece of a frame read in pieces as it is read, so a
// connection closed in the middle of a frame counts the bytes of it that
// reached a body (a count taken from Trace, which sees whole frames,
// misses them).
func (c *Conn) DataReceived() int64 { return c.dataIn.Load() }

// LastFrameRead is when a client connection last read a whole frame of any
// type (a DATA frame read in pieces: its last piece), zero if none yet or
// on a server connection: a liveness signal without a Config.Trace, which
// would have every DATA frame copied and parsed a second time.
func (c *Conn) LastFrameRead() time.Time {
	if n := c.lastFrame.Load(); n > 0 {
		return c.epoch.Add(time.Duration(n))
	}
	return time.Time{}
}

// frameRead notes a whole frame read (LastFrameRead), on a client.
func (c *Conn) frameRead() {
	if c.client {
		c.lastFrame.Store(int64(max(time.Since(c.epoch), 1)))
	}
}

// NetConn returns the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Ping sends a PING and returns the round-trip time when its ACK arrives.
func (c *Conn) Ping(ctx context.Context) (time.Duration, error) {
	var data [8]byte
	if _, err := rand.Read(data[:]); err != nil {
		return 0, fmt.Errorf("h2: ping payload: %w", err)
	}
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return 0, ErrConnClosed
	}
	if c.pings == nil {
		c.pings = make(map[[8]byte]chan time.Time)
	}
	c.pings[data] = ch
	start := time.Now()
	c.queueLocked(wframe{kind: wPing, ping: data})
	c.mu.Unlock()
	select {
	case t, ok := <-ch:
		if !ok {
			return 0, ErrConnClosed
		}
		rtt := t.Sub(start)
		c.recordRTT(rtt)
		return rtt, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pings, data)
		c.mu.Unlock()
		return 0, ctx.Err()
	}
}

func (c *Conn) recordRTT(rtt time.Duration) {
	c.mu.Lock()
	if c.rtts == nil {
		c.rtts = new([rttRingSize]time.Duration)
	}
	c.rtts[c.nrtt%rttRingSize] = rtt
	c.nrtt++
	c.mu.Unlock()
	if c.cfg.OnRTT != nil {
		c.cfg.OnRTT(c, rtt)
	}
}

// RTTSamples returns up to the last 16 PING round-trip times, oldest first.
func (c *Conn) RTTSamples() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(c.nrtt, rttRingSize)
	out := make([]time.Duration, 0, n)
	for i := c.nrtt - n; i < c.nrtt; i++ {
		out = append(out, c.rtts[i%rttRingSize])
	}
	return out
}

// pingLoop sends periodic PINGs while the connection lives.
func (c *Conn) pingLoop() {
	t := time.NewTicker(c.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(c.ctx, 10*c.cfg.PingInterval+time.Second)
			_, err := c.Ping(ctx)
			cancel()
			if errors.Is(err, ErrConnClosed) {
				return
			}
		}
	}
}

// WriteExtensionFrame sends a frame of a type the engine does not define
// (types 0x0-0x9 and PRIORITY_UPDATE belong to the engine).
func (c *Conn) WriteExtensionFrame(t http2.FrameType, flags http2.Flags, streamID uint32, payload []byte) error {
	if t <= http2.FrameContinuation || t == http2.FramePriorityUpdate {
		return fmt.Errorf("h2: frame type %v is handled by the engine, not an extension", t)
	}
	if len(payload) > int(c.peerMaxFrameSize()) {
		return fmt.Errorf("h2: extension frame of %d bytes exceeds peer SETTINGS_MAX_FRAME_SIZE %d", len(payload), c.peerMaxFrameSize())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return ErrConnClosed
	}
	c.queueLocked(wframe{kind: wRaw, ftype: t, flags: flags, id: streamID, data: append([]byte(nil), payload...)})
	return nil
}

func (c *Conn) peerMaxFrameSize() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peer.maxFrameSize
}

// PeerSetting returns a setting the peer announced, and whether it did.
func (c *Conn) PeerSetting(id http2.SettingID) (uint32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.peer.raw {
		if s.ID == id {
			return s.Val, true
		}
	}
	return 0, false
}

// SetInitialWindowSize announces a new SETTINGS_INITIAL_WINDOW_SIZE. The
// receive windows of open streams shift by the difference once the peer
// acknowledges it (RFC 9113 6.9.2).
func (c *Conn) SetInitialWindowSize(n uint32) error {
	if n > flow.MaxWindow {
		return fmt.Errorf("h2: initial window size %d exceeds 2^31-1", n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return ErrConnClosed
	}
	c.unacked = append(c.unacked, n)
	c.settingsSent++
	c.queueLocked(wframe{kind: wSettings, settings: []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: n}}})
	return nil
}

// sentInitial is the SETTINGS_INITIAL_WINDOW_SIZE we sent last. The peer
// reads our SETTINGS before the HEADERS of a stream we open after them, so
// it gives such a stream this window, acknowledged or not.
func (c *Conn) sentInitial() uint32 {
	if n := len(c.unacked); n > 0 {
		return c.unacked[n-1]
	}
	return c.ourInitial
}

// GoAway starts a graceful shutdown: GOAWAY(NO_ERROR) naming the last stream
// the peer opened, no new streams, close once open streams finish.
func (c *Conn) GoAway() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.goAwaySent || c.closing {
		return
	}
	c.goAwaySent = true
	c.queueLocked(wframe{kind: wGoAway, id: c.peerMaxStream, val: uint32(http2.ErrCodeNo)})
	c.maybeFinishLocked()
}

// maybeFinishLocked closes a connection that has said GOAWAY once its last
// stream is done.
func (c *Conn) maybeFinishLocked() {
	if (c.goAwaySent || c.goAwayRecv != nil) && c.activePeer+c.activeOurs == 0 && !c.closing {
		c.closing = true
		// Half-close and drain, as after an error: the peer may still be
		// sending (a PING behind its GOAWAY), and closing over its unread
		// data would reset the connection under our last frames.
		c.queueLocked(wframe{kind: wClose, closeAfter: true})
	}
}

// traceWriter shows each written frame to Config.Trace. The Framer makes one
// Write per frame, so each p parses as exactly one frame.
type traceWriter struct {
	w     io.Writer
	trace func(Direction, http2.Frame)
	r     bytes.Reader
	fr    *http2.Framer
}

func (t *traceWriter) Write(p []byte) (int, error) {
	if t.fr == nil {
		t.fr = http2.NewFramer(nil, &t.r)
		t.fr.AllowIllegalReads = true
	}
	t.r.Reset(p)
	if f, err := t.fr.ReadFrame(); err == nil {
		t.trace(Sent, f)
	}
	return t.w.Write(p)
}

// sendClock puts SendTimeout's deadline on every socket write, so a peer
// that stops reading ends the connection instead of blocking its writer.
// Over a TLSServer connection, each write's records go out in one.
type sendClock struct {
	nc      net.Conn
	timeout time.Duration
	records *recordConn // under nc, or nil
}

func (w sendClock) Write(p []byte) (int, error) {
	w.arm()
	if w.records == nil {
		n, err := w.nc.Write(p)
		return n, w.explain(err)
	}
	w.records.batch()
	n, err := w.nc.Write(p)
	if err2 := w.records.send(); err == nil && err2 != nil {
		n, err = 0, err2
	}
	return n, w.explain(err)
}

// writeBuffers writes v to tcp, the socket under w's connection, with one
// writev where the kernel takes it all.
func (w sendClock) writeBuffers(tcp *net.TCPConn, v *net.Buffers) (int64, error) {
	w.arm()
	n, err := v.WriteTo(tcp)
	return n, w.explain(err)
}

func (w sendClock) arm() {
	if w.timeout > 0 {
		w.nc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w sendClock) explain(err error) error {
	if w.timeout > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("h2: the peer read nothing for %v (send timeout): %w", w.timeout, err)
	}
	return err
}
