package h2

import (
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// Config holds the limits and hooks shared by both roles. Zero values mean defaults.
type Config struct {
	MaxConcurrentStreams uint32        // streams the peer may open; default 100
	MaxHeaderListSize    uint32        // default 64 KiB
	InitialWindowSize    uint32        // per-stream receive window; default 1 MiB
	ConnWindowSize       uint32        // connection receive window; default 16 MiB
	MaxReadFrameSize     uint32        // default 16 KiB
	IdleTimeout          time.Duration // close a connection with no open stream after this
	// HeaderTimeout (server role) bounds the client preface and each header
	// block, from its first byte to its end; default 10 s. Slow headers
	// (slowloris) lose the connection.
	HeaderTimeout time.Duration
	// SendTimeout, if positive, bounds how long sending may make no
	// progress: a socket write that the peer does not read within it closes
	// the connection, and a stream whose queued body the peer takes nothing
	// of (no WINDOW_UPDATE) within it is reset (CANCEL), failing its writer.
	// A stalled peer then holds no goroutine or buffer for long.
	SendTimeout time.Duration
	// ExtraSettings are announced in the first SETTINGS frame (extension settings).
	ExtraSettings []http2.Setting
	// OnExtensionFrame receives frames of types the engine does not know. It
	// runs on the connection's read goroutine; the frame is valid only during
	// the call. Nil means ignore them, as RFC 9113 section 4.1 requires.
	OnExtensionFrame func(c *Conn, f *http2.UnknownFrame)
	// OnSettings, if set, runs once after the peer's first SETTINGS frame
	// was applied (extensions negotiated by setting start here). It runs on
	// the read goroutine without the connection lock.
	OnSettings func(c *Conn)
	// Trace, if set, sees every frame read or written (shunt get -v). Written
	// HEADERS are shown as their raw frames.
	Trace func(dir Direction, f http2.Frame)
	// OnPush (client role), if set, accepts server push (ENABLE_PUSH 1):
	// it is called on a goroutine of its own with each promised request and
	// its response once the response HEADERS arrive, and must close
	// res.Body. Nil refuses push.
	OnPush func(c *Conn, req *http.Request, res *http.Response)

	// PingInterval, if positive, sends a PING this often and records the RTT
	// (Conn.RTTSamples); OnRTT, if set, is called with each sample.
	PingInterval time.Duration
	OnRTT        func(c *Conn, rtt time.Duration)

	// KernelSendQueue (server role) leaves a TCP connection's send queue to
	// the kernel, which lets megabytes of a bulk response wait unsent in the
	// socket ahead of anything the scheduler picks later. By default the
	// engine keeps the unsent part to a few milliseconds of sending (see
	// sendq.go), unless TCP_NOTSENT_LOWAT was set on the socket already.
	KernelSendQueue bool
	// sendMark, if set, replaces sendMark for this connection's send queue
	// (tests pace loopback, whose rate would always give maxSendMark).
	sendMark func(window int, srtt, minRTT time.Duration) int
	// writerGrace (server role), if set, replaces defaultWriterGrace. It
	// is per server, not a package variable, so a test that lengthens it
	// races with no other test's connections.
	writerGrace time.Duration

	// KeepIdleReader (server role, Server.ServeConnDetached) keeps a quiet
	// connection's read goroutine, which by default it gives up (park.go):
	// about 4.7 KB more per idle h2c connection. Parking costs a busy
	// connection two atomic operations per wait for input (the h2load A/B
	// in docs/results.md, issue 18, found no difference).
	KeepIdleReader bool
}

// Direction tells whether a traced frame was read or written.
type Direction int

const (
	Recv Direction = iota
	Sent
)

func (d Direction) String() string {
	if d == Sent {
		return "send"
	}
	return "recv"
}

const (
	defaultMaxStreams     = 100
	defaultMaxHeaderList  = 64 << 10
	defaultStreamWindow   = 1 << 20
	defaultConnWindow     = 16 << 20
	defaultMaxFrame       = 16 << 10
	initialWindowRFC      = 65535 // the window before any SETTINGS (RFC 9113 6.9.2)
	maxDataFrame          = 16 << 10
	maxPendingSend        = 256 << 10 // body bytes queued per stream before the writer blocks
	startSendThreshold    = 32 << 10  // buffered response bytes that force HEADERS out
	flushThreshold        = 16 << 10  // queued bytes released to the writer without Flush
	maxQueuedControl      = 1000      // queued control frames before ENHANCE_YOUR_CALM
	maxHeaderBlockFrames  = 128       // HEADERS + CONTINUATION frames in one block
	rttRingSize           = 16
	writeBatchBudget      = 64 << 10
	goAwayDrainTimeout    = time.Second
	prefaceTimeout        = 10 * time.Second
	settingsNoRFC7540Prio = http2.SettingNoRFC7540Priorities
)

// withDefaults returns cfg with zero fields replaced by defaults and values
// clamped to what the protocol allows.
func (cfg Config) withDefaults() Config {
	if cfg.MaxConcurrentStreams == 0 {
		cfg.MaxConcurrentStreams = defaultMaxStreams
	}
	if cfg.MaxHeaderListSize == 0 {
		cfg.MaxHeaderListSize = defaultMaxHeaderList
	}
	if cfg.InitialWindowSize == 0 {
		cfg.InitialWindowSize = defaultStreamWindow
	}
	if cfg.InitialWindowSize > 1<<31-1 {
		cfg.InitialWindowSize = 1<<31 - 1
	}
	if cfg.ConnWindowSize < initialWindowRFC {
		cfg.ConnWindowSize = defaultConnWindow
	}
	if cfg.ConnWindowSize > 1<<31-1 {
		cfg.ConnWindowSize = 1<<31 - 1
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = prefaceTimeout
	}
	if cfg.MaxReadFrameSize < defaultMaxFrame {
		cfg.MaxReadFrameSize = defaultMaxFrame
	}
	if cfg.MaxReadFrameSize > 1<<24-1 {
		cfg.MaxReadFrameSize = 1<<24 - 1
	}
	if cfg.writerGrace <= 0 {
		cfg.writerGrace = defaultWriterGrace
	}
	return cfg
}
