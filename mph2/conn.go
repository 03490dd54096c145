package mph2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/shunt-net/shunt/h2"
)

// flowInitialWindow is the SETTINGS_INITIAL_WINDOW_SIZE of a connection
// whose stream ends are moved by flow control. Every stream opens its own
// window (StreamOptions.ReceiveWindow) and is granted credit only about one
// bandwidth-delay product ahead of what has arrived, so a new end can always
// be announced before the server has sent past it. The paper lowers windows
// after the fact with SETTINGS plus WINDOW_UPDATEs (§3.4.2 footnote 2);
// never granting more than the scheduler may still take back needs neither.
const flowInitialWindow = 16 << 10

// pathConn is one path's connection to one server: HTTP/2 if the server
// speaks it, else an HTTP/1.1 transport whose connections go over the path.
type pathConn struct {
	ready chan struct{} // closed once dialed; then the fields below are set
	err   error
	h2    *h2.ClientConn
	h1    h1Transport
	proto string // "h2", "h2c" or "http/1.1"
	// connect is how long the TCP handshake took (a first RTT sample), and
	// tcp the TCP connection under TLS (for TCP_INFO); h2 only.
	connect time.Duration
	tcp     net.Conn
	// trusted: h2c without the probe, the server having answered it on an
	// earlier connection (Client.h2c).
	trusted bool
}

// h1Transport is what a path needs of its HTTP/1.1 transport: an
// *http.Transport, or a test's fake.
type h1Transport interface {
	http.RoundTripper
	CloseIdleConnections()
}

// lastFrame is when the h2 connection last received a frame; zero if never
// or not HTTP/2. Only once ready: the dial sets h2.
func (pc *pathConn) lastFrame() time.Time {
	if pc.h2 == nil {
		return time.Time{}
	}
	return pc.h2.Conn().LastFrameRead()
}

func (pc *pathConn) dead() bool {
	select {
	case <-pc.ready:
	default:
		return false // still dialing
	}
	if pc.err != nil {
		return true
	}
	if pc.h2 != nil {
		select {
		case <-pc.h2.Conn().Done():
			return true
		default:
		}
	}
	return false
}

// usable: dialed, open, and (HTTP/2) still taking new streams: no GOAWAY
// sent or received.
func (pc *pathConn) usable() bool {
	return isClosed(pc.ready) && !pc.dead() && (pc.h2 == nil || pc.h2.CanTakeNewRequest())
}

func (pc *pathConn) close() {
	select {
	case <-pc.ready:
	default:
		// Still dialing (Close during a redial): close what the dial
		// brings, within the dial's timeout, or it stays open unowned.
		go func() { <-pc.ready; pc.close() }()
		return
	}
	if pc.h2 != nil {
		pc.h2.Close()
	}
	if pc.h1 != nil {
		pc.h1.CloseIdleConnections()
	}
}

// received is the DATA the connection has received so far (h2 only; 0
// while it dials), counted as read: a frame cut short by the connection's
// end counts the part that came.
func (pc *pathConn) received() int64 {
	if !isClosed(pc.ready) || pc.h2 == nil {
		return 0
	}
	return pc.h2.Conn().DataReceived()
}

type connKey struct {
	path     int
	scheme   string
	hostport string
}

func keyOf(i int, u *url.URL) connKey { return connKey{i, u.Scheme, h2.HostPort(u.Host, u.Scheme)} }

// conn returns path i's connection for u's server, dialing it in the
// background if there is none or it has died. Connections persist across
// downloads, as the paper's measurements use persistent connections.
func (c *Client) conn(i int, u *url.URL) *pathConn {
	k := keyOf(i, u)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.conns[k]
	if old != nil && !old.dead() {
		return old
	}
	if old != nil && old.trusted && old.lastFrame().IsZero() {
		// Trusted and died without one frame: the server no longer
		// speaks h2c (say, replaced by an HTTP/1.1 one). Probe again.
		delete(c.h2c, k)
	}
	if c.conns == nil {
		c.conns = make(map[connKey]*pathConn)
	}
	pc := c.dialBehind(context.Background(), i, u, c.h2c[k], c.dialTimeout())
	c.conns[k] = pc
	return pc
}

// dialBehind dials path i to u's server in the background, within timeout
// and ctx; pc.ready closes when it is done.
func (c *Client) dialBehind(ctx context.Context, i int, u *url.URL, trusted bool, timeout time.Duration) *pathConn {
	pc := &pathConn{ready: make(chan struct{}), trusted: trusted}
	go func() {
		defer close(pc.ready)
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		pc.err = c.dial(ctx, i, u, pc)
		if pc.err != nil {
			pc.err = fmt.Errorf("path %s: %w", c.Paths[i].Label(i), pc.err)
		}
	}()
	return pc
}

// dialFresh dials a new connection for path i to u's server beside the one
// the Client keeps (adopt replaces that one once the new one works).
func (c *Client) dialFresh(ctx context.Context, i int, u *url.URL, timeout time.Duration) *pathConn {
	c.mu.Lock()
	trusted := c.h2c[keyOf(i, u)]
	c.mu.Unlock()
	return c.dialBehind(ctx, i, u, trusted, timeout)
}

// adopt makes pc path i's connection for u's server in place of old, so
// the next download uses it; not if the Client has moved on from old.
func (c *Client) adopt(i int, u *url.URL, old, pc *pathConn) {
	k := keyOf(i, u)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns[k] == old {
		c.conns[k] = pc
	}
}

// forget removes pc, path i's connection for u's server, from the Client:
// the next conn dials afresh.
func (c *Client) forget(i int, u *url.URL, pc *pathConn) {
	k := keyOf(i, u)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns[k] == pc {
		delete(c.conns, k)
	}
}

func (c *Client) dialTimeout() time.Duration {
	if c.DialTimeout > 0 {
		return c.DialTimeout
	}
	return 15 * time.Second
}

// dial connects path i to u's server and settles the protocol: TLS ALPN
// decides for https; for http, h2c with prior knowledge is tried and a PING
// must come back, else the path falls back to HTTP/1.1.
func (c *Client) dial(ctx context.Context, i int, u *url.URL, pc *pathConn) error {
	p := c.Paths[i]
	addr, err := p.target(ctx, h2.HostPort(u.Host, u.Scheme))
	if err != nil {
		return err
	}
	dial := p.dialer()
	if c.Proto == ProtoHTTP1 {
		pc.h1, pc.proto = c.h1Transport(dial, addr), "http/1.1"
		return nil
	}
	t0 := time.Now()
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	pc.connect, pc.tcp = time.Since(t0), nc
	if u.Scheme == "https" {
		cfg := c.tlsConfig(u, "h2", "http/1.1")
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		if tc.ConnectionState().NegotiatedProtocol != "h2" {
			// The server has no HTTP/2: ranged HTTP/1.1 requests instead.
			tc.Close()
			if c.Proto == ProtoHTTP2 {
				return fmt.Errorf("server %s did not choose h2 by ALPN", addr)
			}
			pc.h1, pc.proto = c.h1Transport(dial, addr), "http/1.1"
			return nil
		}
		nc, pc.proto = tc, "h2"
	} else {
		pc.proto = "h2c"
	}
	var cfg h2.Config
	if c.EndAdjust == EndFlowControl {
		cfg.InitialWindowSize = flowInitialWindow
	}
	tr := &h2.Transport{Config: cfg}
	cc, err := tr.NewClientConn(nc)
	if err != nil {
		nc.Close()
		return err
	}
	if u.Scheme == "http" && c.Proto == "" && !pc.trusted {
		// A server that sent any valid frame speaks HTTP/2 even if the PING
		// ACK is late: it may queue behind other traffic on a loaded link.
		pctx, cancel := context.WithTimeout(ctx, c.pathTimeout())
		_, err := cc.Conn().Ping(pctx)
		cancel()
		if err != nil && !(errors.Is(err, context.DeadlineExceeded) && !cc.Conn().LastFrameRead().IsZero()) {
			cc.Close()
			pc.h1, pc.proto = c.h1Transport(dial, addr), "http/1.1"
			return nil
		}
		c.mu.Lock()
		if c.h2c == nil {
			c.h2c = make(map[connKey]bool)
		}
		c.h2c[keyOf(i, u)] = true
		c.mu.Unlock()
	}
	pc.h2 = cc
	return nil
}

func (c *Client) tlsConfig(u *url.URL, protos ...string) *tls.Config {
	cfg := &tls.Config{}
	if c.TLSConfig != nil {
		cfg = c.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	cfg.NextProtos = protos
	return cfg
}

// h1Transport is Go's HTTP/1.1 client with every connection dialed over
// the path to addr. A pipelined request gets a second connection.
func (c *Client) h1Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string) *http.Transport {
	tlsConf := &tls.Config{}
	if c.TLSConfig != nil {
		tlsConf = c.TLSConfig.Clone()
	}
	tlsConf.NextProtos = []string{"http/1.1"}
	return &http.Transport{
		DialContext:         func(ctx context.Context, network, _ string) (net.Conn, error) { return dial(ctx, network, addr) },
		TLSClientConfig:     tlsConf,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression:  true, // ranges are of the bytes as stored
		MaxIdleConnsPerHost: 4,
	}
}

// roundTrip sends req on the path. window > 0 asks for a manually
// controlled HTTP/2 stream whose first window is window bytes.
func (pc *pathConn) roundTrip(req *http.Request, window int64) (*http.Response, *h2.Stream, error) {
	var opts h2.StreamOptions
	if window > 0 {
		opts = h2.StreamOptions{ManualWindow: true, ReceiveWindow: uint32(max(window, flowInitialWindow))}
	}
	return pc.roundTripOpts(req, opts)
}

// roundTripOpts sends req on the path with the HTTP/2 stream's options
// (ignored over HTTP/1.1).
func (pc *pathConn) roundTripOpts(req *http.Request, opts h2.StreamOptions) (*http.Response, *h2.Stream, error) {
	if pc.h1 != nil {
		res, err := pc.h1.RoundTrip(req)
		return res, nil, err
	}
	res, err := pc.h2.RoundTripOpts(req, opts)
	if err != nil {
		return nil, nil, err
	}
	return res, h2.StreamOf(res), nil
}

// errPathTimeout: a path's PING went unanswered and no frame arrived for
// its timeout (liveness).
var errPathTimeout = errors.New("PING unanswered and no frame received")

func (c *Client) pathTimeout() time.Duration {
	if c.PathTimeout > 0 {
		return c.PathTimeout
	}
	return defaultPathTimeout
}

// Received is the DATA payload each path's HTTP/2 connections have received
// so far (all downloads, tail bytes included), in Paths order.
func (c *Client) Received() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := make([]int64, len(c.Paths))
	for k, pc := range c.conns {
		n[k.path] += pc.received()
	}
	return n
}
