// Package fetch holds replay's real transports: Fetchers that download a
// page's objects from a server holding them (package site) over HTTP/1.1 with
// at most N connections, HTTP/2 over one connection with at most S
// concurrent streams, or HTTP/3 over one QUIC connection with at most S
// concurrent streams.
//
// A Fetcher serves one page load: its connections are opened by the load's
// first requests (their handshakes count in the page load time, as a
// browser's do) and closed by Close, so no connection or congestion state
// crosses loads.
//
// Requests wait in one FIFO queue for a free slot (a connection for HTTP/1.1,
// a stream for HTTP/2 and HTTP/3), so the limit is shunt's and identical for
// the three protocols, whatever the libraries beneath would allow.
// Fetched.Request is when a request got its slot and was handed to the
// library (a connection still being opened then counts as waiting for the
// first byte), FirstByte when the response's header arrived, Done when the
// last body byte did.
package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/site"
	"github.com/shunt-net/shunt/smig"
)

// Protocols a Fetcher speaks.
const (
	H1 = "h1"
	H2 = "h2"
	H3 = "h3"
)

// Defaults of Config.
const (
	DefaultConns   = 6   // browsers' connections per host
	DefaultStreams = 100 // the paper's SCTP streams, and the usual server limit
	maxSlots       = 1000
)

// Schedules: how the server shares one connection between the responses in
// flight (H2, H3). The Fetcher asks for it with an RFC 9218 Priority header
// on every request, which shunt's HTTP/2 server and quic-go's HTTP/3 server
// both obey, so both protocols run the same schedule.
const (
	// Interleaved (u=3, i): the responses in flight share the connection
	// round-robin, frame by frame, as the paper's SCTP server did with its
	// round-robin stream scheduler and I-DATA interleaving.
	Interleaved = "interleaved"
	// Sequential (u=3): one response after another in stream order, RFC
	// 9218's default for requests that carry no priority.
	Sequential = "sequential"
	// Browser: the urgencies Chromium 156 sends by resource type (seen on
	// its HTTP/2 requests): documents u=0, i; style sheets u=0; scripts
	// u=1; images u=2, i. Fonts get u=0 and the rest u=2, i here. So the
	// replay can be set beside a browser that gets scripts and style sheets
	// ahead of images.
	Browser = "browser"
	// DefaultSchedule is the paper's multistreamed transport.
	DefaultSchedule = Interleaved
)

// priority is the Priority field value of a request for an object of class
// c under schedule s; "" for no schedule (H1).
func priority(s string, c page.Class) string {
	switch s {
	case Interleaved:
		return "u=3, i"
	case Sequential:
		return "u=3"
	case Browser:
		switch c {
		case page.ClassHTML:
			return "u=0, i"
		case page.ClassCSS, page.ClassFont:
			return "u=0"
		case page.ClassJS:
			return "u=1"
		}
		return "u=2, i"
	}
	return ""
}

// Config says how to reach the server and how much parallelism to use.
type Config struct {
	Proto   string // H1, H2 or H3
	Conns   int    // H1: connections at most (default DefaultConns)
	Streams int    // H2, H3: concurrent streams at most (default DefaultStreams)
	Addr    string // server HOST:PORT (UDP port for H3)
	// TLS: https for H1 and H2 (H2 then negotiates h2 by ALPN; without TLS
	// it is h2c with prior knowledge). H3 is always TLS.
	TLS       bool
	TLSConfig *tls.Config // base client TLS configuration (roots, ServerName); nil: system roots
	Page      string      // page name: objects are at site.URLPath(Page, path)
	// Dial opens TCP connections (H1, H2); nil: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ListenUDP opens the UDP socket of the QUIC connection (H3); nil: any
	// local port.
	ListenUDP func() (net.PacketConn, error)
	// SMig makes H2 an SMig client (smig.Transport) with this policy; the
	// client applies only MigCP, a server policy runs in the server (serve
	// with site.ServeConfig.SMig). nil: plain HTTP/2.
	SMig *smig.Policy
	// PoolDial, with SMig, opens the pooled connection (id 1, and more if
	// one dies) instead of Dial: bound to another path than the requests'
	// connection, it lets the server steer responses across paths (issue
	// 19). nil: Dial.
	PoolDial func(ctx context.Context, id int, network, addr string) (net.Conn, error)
	// Schedule is Interleaved, Sequential or Browser (H2, H3; default
	// DefaultSchedule); H1 has one response per connection at a time.
	Schedule string
}

// Label is the transport as figures name it: h1-6, h2-100, h3-100, with
// "-seq" for the Sequential schedule, "-prio" for Browser and "-smig" for
// SMig.
func (c Config) Label() string {
	if c.Proto == H1 {
		return fmt.Sprintf("%s-%d", c.Proto, c.Conns)
	}
	l := fmt.Sprintf("%s-%d", c.Proto, c.Streams)
	switch c.Schedule {
	case Sequential:
		l += "-seq"
	case Browser:
		l += "-prio"
	}
	if c.SMig != nil {
		l += "-smig"
	}
	return l
}

// withDefaults fills the defaults and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Conns == 0 {
		c.Conns = DefaultConns
	}
	if c.Streams == 0 {
		c.Streams = DefaultStreams
	}
	if c.Schedule == "" && c.Proto != H1 {
		c.Schedule = DefaultSchedule
	}
	switch c.Proto {
	case H1, H2, H3:
	default:
		return c, fmt.Errorf("protocol %q: want h1, h2 or h3", c.Proto)
	}
	if c.Conns < 1 || c.Conns > maxSlots {
		return c, fmt.Errorf("connections %d: want 1 to %d", c.Conns, maxSlots)
	}
	if c.Streams < 1 || c.Streams > maxSlots {
		return c, fmt.Errorf("streams %d: want 1 to %d", c.Streams, maxSlots)
	}
	if c.Proto == H1 && c.Schedule != "" {
		return c, fmt.Errorf("schedule %q: HTTP/1.1 has no streams to schedule (h2, h3 only)", c.Schedule)
	} else if c.Proto != H1 && priority(c.Schedule, "") == "" {
		return c, fmt.Errorf("schedule %q: want %s, %s or %s", c.Schedule, Interleaved, Sequential, Browser)
	}
	if c.Addr == "" {
		return c, errors.New("no server address")
	}
	if c.PoolDial != nil && c.SMig == nil {
		return c, errors.New("PoolDial opens SMig's pooled connections: it needs SMig")
	}
	if c.SMig != nil && c.Proto != H2 {
		return c, fmt.Errorf("SMig (%s) needs protocol h2, not %s", c.SMig, c.Proto)
	}
	if c.Proto == H3 {
		c.TLS = true
	}
	if c.TLSConfig == nil {
		c.TLSConfig = &tls.Config{}
	}
	if c.Dial == nil {
		var d net.Dialer
		c.Dial = d.DialContext
	}
	if c.ListenUDP == nil {
		c.ListenUDP = func() (net.PacketConn, error) { return net.ListenUDP("udp", nil) }
	}
	return c, nil
}

// transport is one protocol's client: it sends a request on one of its
// connections and says which (0-based, in the order they were opened).
type transport interface {
	roundTrip(req *http.Request) (resp *http.Response, conn int, err error)
	opened() int // connections opened so far
	close() error
}

// Fetcher implements replay.Fetcher over one of the three protocols.
type Fetcher struct {
	cfg  Config
	base string // scheme://host:port
	tr   transport

	mu       sync.Mutex
	free     int
	queue    []func()
	protoSaw string // the responses' protocol, to show what really ran
}

// New makes a Fetcher for one page load.
func New(cfg Config) (*Fetcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Fetcher{cfg: cfg, base: "http://" + cfg.Addr}
	if cfg.TLS {
		f.base = "https://" + cfg.Addr
	}
	switch cfg.Proto {
	case H1:
		f.tr, f.free = newH1(cfg), cfg.Conns
	case H2:
		f.tr, f.free = newH2(cfg), cfg.Streams
		if cfg.SMig != nil {
			f.tr = newSMig(cfg)
		}
	case H3:
		f.tr, f.free = newH3(cfg), cfg.Streams
	}
	return f, nil
}

// Config is the configuration in force (defaults filled in).
func (f *Fetcher) Config() Config { return f.cfg }

// Conns is how many connections the Fetcher opened.
func (f *Fetcher) Conns() int { return f.tr.opened() }

// Protocol is the protocol the responses came with ("HTTP/2.0"), with TLS
// and ALPN when they were used; empty before the first response.
func (f *Fetcher) Protocol() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.protoSaw
}

// Close closes the Fetcher's connections.
func (f *Fetcher) Close() error { return f.tr.close() }

// Fetch queues obj's download; see replay.Fetcher.
func (f *Fetcher) Fetch(ctx context.Context, obj *page.Object, done func(replay.Fetched, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, func() {
		fd, err := f.get(ctx, obj)
		f.mu.Lock()
		f.free++
		f.pump()
		f.mu.Unlock()
		done(fd, err)
	})
	f.pump()
}

// pump starts queued requests while slots are free; f.mu is held.
func (f *Fetcher) pump() {
	for f.free > 0 && len(f.queue) > 0 {
		f.free--
		go f.queue[0]()
		f.queue[0] = nil
		f.queue = f.queue[1:]
	}
}

// get downloads and verifies one object.
func (f *Fetcher) get(ctx context.Context, obj *page.Object) (replay.Fetched, error) {
	path := site.URLPath(f.cfg.Page, obj.Path)
	var fd replay.Fetched
	if err := ctx.Err(); err != nil {
		return fd, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+path, nil)
	if err != nil {
		return fd, err
	}
	if v := priority(f.cfg.Schedule, obj.Class); v != "" {
		req.Header.Set("Priority", v)
	}
	fd.Request = time.Now()
	resp, conn, err := f.tr.roundTrip(req)
	if err != nil {
		return fd, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	fd.FirstByte, fd.Conn = time.Now(), conn
	if resp.StatusCode != http.StatusOK {
		return fd, fmt.Errorf("GET %s: status %s", path, resp.Status)
	}
	f.noteProto(resp)
	v := site.NewVerifier(path, obj.Size)
	_, err = io.Copy(v, resp.Body)
	fd.Done, fd.Bytes = time.Now(), v.Bytes()
	if err != nil {
		return fd, fmt.Errorf("GET %s after %d bytes: %w", path, v.Bytes(), err)
	}
	if err := v.Finish(resp.Header.Get(site.DigestHeader)); err != nil {
		return fd, fmt.Errorf("GET %s: %w", path, err)
	}
	return fd, nil
}

func (f *Fetcher) noteProto(resp *http.Response) {
	f.mu.Lock()
	f.protoSaw = h2.ResponseProto(resp)
	f.mu.Unlock()
}

// tlsConfig is the base configuration with the ALPN protocols set.
func tlsConfig(base *tls.Config, protos ...string) *tls.Config {
	c := base.Clone()
	c.NextProtos = protos
	return c
}

// lazyConn opens one connection on first use; every caller waits for it and
// gets the same result, so one failed handshake fails every request of the
// load rather than being retried.
type lazyConn[C any] struct {
	once   sync.Once
	conn   C
	err    error
	dialed bool
	mu     sync.Mutex
}

func (l *lazyConn[C]) get(dial func() (C, error)) (C, error) {
	l.once.Do(func() {
		c, err := dial()
		l.mu.Lock()
		l.conn, l.err, l.dialed = c, err, err == nil
		l.mu.Unlock()
	})
	return l.conn, l.err
}

// opened is how many connections were opened: 0 or 1.
func (l *lazyConn[C]) opened() int {
	if _, ok := l.take(); ok {
		return 1
	}
	return 0
}

// take returns the connection if one was opened, for closing.
func (l *lazyConn[C]) take() (C, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn, l.dialed
}
