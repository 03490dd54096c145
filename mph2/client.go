// Package mph2 is MP-H2 as a working client (MP-H2 §3): it downloads one
// HTTP object over several paths at once, one persistent HTTP/2 connection
// per path, by carrying out the decisions of package multipath's scheduler
// with real connections and a real clock.
//
// One goroutine per download owns the scheduler. Everything else (a
// goroutine per request reading its body, one per path sending a PING every
// 100 ms and watching the connection) reports to it over a channel; it feeds
// the events to the scheduler with time.Now and executes the Actions:
// ranged GETs, stream ends moved by HTTP/2 flow control (the stream's manual
// window) or RST_STREAM, received bytes written at their object offsets.
// Only bytes the scheduler delivers are written, so a path that fails leaves
// nothing half-verified in the file: the bytes it still owed are requested
// again on the other paths.
//
// Servers that ignore Range get a single-path download; servers without
// HTTP/2 (ALPN http/1.1, or no h2c) get ranged HTTP/1.1 requests on that
// path, where a stream's end can only be moved by closing its connection.
package mph2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"crypto/tls"

	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/multipath"
)

// EndAdjust chooses how a stream's byte-range end is moved (MP-H2 §3.4.2).
type EndAdjust = multipath.EndAdjust

const (
	EndFlowControl = multipath.FlowControl // the default: no tail bytes
	EndReset       = multipath.ResetStream
)

// Mode is how a Client uses its paths (multipath.Mode).
type Mode = multipath.Mode

const (
	ModeAggregate   = multipath.Aggregate   // every path at once (the default)
	ModeHandover    = multipath.Handover    // the first working path; the next while it fails or stalls
	ModeInteractive = multipath.Interactive // each download on the path expected to finish first, after a probe of unmeasured paths
)

// Protocols a Client may be limited to (Client.Proto).
const (
	ProtoHTTP2 = "h2"
	ProtoHTTP1 = "http/1.1"
)

// Client downloads objects over its Paths. Its connections persist across
// downloads (one per path and server); Close closes them. Safe for
// concurrent use, but concurrent downloads share the paths' connections and
// their Received counts.
type Client struct {
	Paths     []Path
	TLSConfig *tls.Config
	// Proto "" negotiates per path (ALPN for https, h2c probe for http,
	// HTTP/1.1 otherwise); ProtoHTTP2 or ProtoHTTP1 insists on one.
	Proto        string
	EndAdjust    EndAdjust
	NoPipelining bool
	// Mode is how the paths are used; the zero Mode aggregates them.
	Mode Mode
	// HandoverAfter is how long the path in use may deliver nothing while
	// it has work before ModeHandover moves its ranges to the next path
	// (default 1 s). In aggregate mode a path with work that is silent
	// (no DATA, no PING answer) for max(HandoverAfter, 2 x its RTT) while
	// another path delivers gives its ranges to the others (Stalls). A
	// path that goes silent (PathTimeout) or down moves in every mode.
	HandoverAfter time.Duration
	// Cache, if set, keeps each path's bandwidth and RTT estimates across
	// downloads and starts the next one from them (MP-H2+FS+BW/L).
	Cache *estimate.Cache
	// PingInterval is the HTTP/2 PING period per path; default 100 ms.
	PingInterval time.Duration
	// PathTimeout is the floor of the silence timeout: a path is suspended
	// (its ranges move to the other paths) once its PING is unanswered and
	// no frame at all has arrived for max(PathTimeout, 4 x its smoothed PING
	// RTT), so a path still delivering DATA is never suspended for a late
	// PING ACK; it comes back as soon as it answers or delivers. It also
	// bounds the h2c probe when dialing. Default 3 s.
	PathTimeout time.Duration
	DialTimeout time.Duration // default 15 s
	// StallTimeout fails a download when no path has delivered a byte for
	// this long; a path's outage alone never does (default 2 minutes, about
	// what TCP's retransmissions take before they give up on a first try).
	// A path whose connection dies is redialed (backing off from 100 ms to
	// 1 s) until it runs out, and re-admitted with fresh estimates, its
	// ranges asked again with If-Range: a download outlives a server
	// restart.
	StallTimeout time.Duration

	mu    sync.Mutex
	conns map[connKey]*pathConn
	// h2c holds the http servers that answered a path's h2c probe: its
	// later connections send requests at once, without the probe's round
	// trip (the proxy's fresh connections per response paid it every time).
	h2c map[connKey]bool
	// learned keeps the paths' estimates across downloads when Cache is nil
	// and the mode picks a path by them (ModeInteractive).
	learned *estimate.Cache
	// spent is, per path, the budget (Path.Budget) that finished downloads
	// used and running ones hold (budgets.go).
	spent []int64
}

// Options describe one download.
type Options struct {
	// Size is the object's size if the application knows it (MP-H2+FS);
	// 0 means unknown.
	Size int64
	// Cut, if positive, stops the download at this offset as MP-H2 §5.7
	// does: streams reaching past it are ended there by the EndAdjust
	// method. Bytes from Cut on are not written.
	Cut    int64
	Header http.Header // extra request headers
	// Progress, if set, is called on the owner goroutine whenever path p
	// has delivered bytes (its running total).
	Progress func(p int, delivered int64)
	// OnResponse, if set, is called once, with the first response's status
	// and headers and the object's size (-1 unknown), before any byte is
	// written.
	OnResponse func(status int, h http.Header, size int64)
	// Settle, if positive, waits after the last byte until no DATA has
	// arrived on any path for this long (at most 20 times it), so Received
	// and TailBytes include the tail bytes still in flight.
	Settle time.Duration
	// HandOver, if set, is shown the response to the download's first
	// request (the whole object, without Range; Size unknown) on the
	// goroutine that received it, before the scheduler sees it; it decides
	// from the status and headers and must not touch the body. If it
	// returns true, the download ends with a *HandedOver error carrying the
	// response: its body streams as an ordinary response on that one path
	// (HTTP/2 window refilled as it is read) and lives on the context given
	// to Download. For responses not worth splitting: an error status, a
	// small object, a server without ranges.
	HandOver func(res *http.Response) bool
	// InOrder says the writer's bytes are read in order as they arrive
	// (Transport's body): a split hands the object out from its front in
	// pieces (multipath.Config.InOrder), so the readable prefix grows at
	// the paths' summed rate.
	InOrder bool
}

// HandedOver ends a download whose first response went to the caller
// (Options.HandOver); the caller reads and closes Response.Body.
type HandedOver struct{ Response *http.Response }

func (*HandedOver) Error() string { return "mph2: response handed over to the caller" }

// Result is what one download did.
type Result struct {
	Size  int64         // bytes written
	Total time.Duration // from the call to the last byte
	// RangesIgnored: a server answered a ranged request with the whole
	// object, and the download went on over one path.
	RangesIgnored bool
	// TailBytes were received but not wanted: DATA after a stream's end
	// (RST_STREAM's tail, flow-control overshoot) and duplicates.
	TailBytes int64
	Paths     []PathResult
	Mode      Mode
	Switches  []Switch
}

// PathResult is one path's share.
type PathResult struct {
	Name      string
	Proto     string // "h2", "h2c", "http/1.1"; "" if never connected
	Requests  int
	Delivered int64 // bytes written from this path
	// Received is the DATA (h2) or body bytes (HTTP/1.1) the path received
	// during the download, tail bytes included.
	Received  int64
	Bandwidth float64       // bytes/s, the scheduler's estimate at the end
	RTT       time.Duration // application-layer RTT estimate at the end
	FirstData time.Duration // since the start; 0 if none
	LastData  time.Duration
	// Down: the path's connection failed for the rest of the download
	// (refused, or lost and not redialed before the download ended); Err
	// says why, or why it was last suspended or lost.
	Down bool
	Err  string
	// Suspensions counts the times the path went silent (an outage: PING
	// unanswered and no frame for its timeout) and was taken out of the
	// schedule until it answered again; Suspended is how long in all.
	Suspensions int
	Suspended   time.Duration
	// Stalls counts the times (aggregate mode) the path's ranges moved to
	// the others because it was silent while another path delivered, for
	// max(1 s, 2 RTTs): sooner than the silence rule's suspension.
	// FirstStall is when the first was, since the start (0: none).
	Stalls     int
	FirstStall time.Duration
	// Redials counts the times the path's connection died (reset, closed,
	// GOAWAY, a server restarted) and a new one took up its ranges.
	Redials int
	// Budget is the path's byte budget (Path.Budget; 0 none). BudgetFull is
	// when, since the start, it left the path no room for another chunk
	// (0: never): from then on the other paths carried the download alone.
	Budget     int64
	BudgetFull time.Duration
	// Retaken counts bytes this path fetched afresh, idle, from another
	// path that was slow to deliver them though credited (multipath's
	// PathStats.Retaken): up to this many arrived twice, as the other's
	// tail bytes.
	Retaken int64
	// Refused says why the path was refused for this server: a 206 or
	// Content-Range that does not match the request, a body longer than
	// its range, or a 200 to a ranged request on a budgeted path.
	Refused string
}

// Switch is one change of the path in use (ModeHandover, ModeInteractive).
type Switch struct {
	At       time.Duration // since the start
	From, To string        // From is "" for the first choice
	Why      string        // start, stall, silent, down, budget, back, probe
	// FirstByte is when, since the start, the path switched to delivered
	// its first byte after the switch; 0 if it delivered none.
	FirstByte time.Duration
}

// DefaultStallTimeout is StallTimeout's default.
const DefaultStallTimeout = 2 * time.Minute

func (c *Client) stallTimeout() time.Duration {
	if c.StallTimeout > 0 {
		return c.StallTimeout
	}
	return DefaultStallTimeout
}

// Close closes every connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, pc := range c.conns {
		pc.close()
		delete(c.conns, k)
	}
	return nil
}

// Connect opens (or checks) every path's connection to rawURL's server and
// waits for them, so a timed download does not include handshakes. A path
// that fails is reported but the others stay usable.
func (c *Client) Connect(ctx context.Context, rawURL string) error {
	u, err := parseURL(rawURL)
	if err != nil {
		return err
	}
	var errs []error
	for i := range c.Paths {
		pc := c.conn(i, u)
		select {
		case <-pc.ready:
			errs = append(errs, pc.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

func parseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("mph2: URL %q: %w", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mph2: URL %q: want http:// or https:// with a host", rawURL)
	}
	return u, nil
}

// cacheKey names a path's estimates: the path and the server it reaches.
func cacheKey(p Path, i int, u *url.URL) string {
	return p.Label(i) + " " + u.Scheme + "://" + h2.HostPort(u.Host, u.Scheme)
}

// Download fetches rawURL over every path into w, each byte written once at
// its offset. On error, w holds only bytes that were received intact, at
// their offsets; what is missing is unknown to the caller.
func (c *Client) Download(ctx context.Context, rawURL string, w io.WriterAt, o Options) (*Result, error) {
	if len(c.Paths) == 0 {
		return nil, errors.New("mph2: Client has no paths")
	}
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := c.checkPaths(ctx, u); err != nil {
		return nil, err
	}
	cfg := multipath.Config{Paths: len(c.Paths), Size: -1, NoPipelining: c.NoPipelining, EndAdjust: c.EndAdjust,
		Mode: c.Mode, HandoverAfter: c.HandoverAfter, InOrder: o.InOrder}
	if o.Size > 0 {
		cfg.Size = o.Size
	}
	for i, p := range c.Paths {
		if p.Budget < 0 {
			return nil, fmt.Errorf("mph2: path %s: budget %d: negative", p.Label(i), p.Budget)
		}
	}
	cache := c.estimates()
	if cache != nil {
		cfg.Prior, cfg.PriorAt = make([]estimate.Path, len(c.Paths)), make([]time.Time, len(c.Paths))
		for i, p := range c.Paths {
			cfg.Prior[i], cfg.PriorAt[i], _ = cache.GetAt(cacheKey(p, i, u), start)
		}
	}
	if c.Mode == ModeInteractive {
		if err := c.handshakeRTTs(ctx, u, cfg.Prior); err != nil {
			return nil, fmt.Errorf("mph2: GET %s: %w", u, err)
		}
	}
	c.holdBudgets(&cfg)
	sched, err := multipath.New(cfg)
	if err != nil {
		c.settleBudgets(cfg, nil)
		return nil, fmt.Errorf("mph2: %w", err)
	}
	d := newDownload(ctx, c, u, w, o, sched, start)
	defer d.stop()
	res, err := d.run()
	c.settleBudgets(cfg, sched)
	if err == nil && cache != nil {
		now := time.Now()
		for i, p := range c.Paths {
			// A path that carried nothing learned nothing: keep what was known.
			if !res.Paths[i].Down && res.Paths[i].Received > 0 {
				cache.Put(cacheKey(p, i, u), now, sched.Learned(now, multipath.PathID(i)))
			}
		}
	}
	return res, err
}

// estimates is the cache the download starts from and adds to: Cache, or
// for ModeInteractive (which picks a path by estimates) the Client's own.
func (c *Client) estimates() *estimate.Cache {
	if c.Cache != nil || c.Mode != ModeInteractive {
		return c.Cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.learned == nil {
		c.learned = estimate.NewCache(0)
	}
	return c.learned
}

// handshakeRTTs gives each path whose RTT prior does not hold its
// connection's TCP handshake time, so that ModeInteractive starts on the
// path of least RTT. If no connection is open yet it waits for the first
// to be, the download's first request would wait for it anyway; a path
// still dialing then has taken at least as long as that wait.
func (c *Client) handshakeRTTs(ctx context.Context, u *url.URL, prior []estimate.Path) error {
	t0 := time.Now()
	pcs := make([]*pathConn, len(c.Paths))
	for i := range c.Paths {
		pcs[i] = c.conn(i, u)
	}
	// fill reports whether some path has an RTT now.
	fill := func() bool {
		found := false
		for i, pc := range pcs {
			if prior[i].RTT <= 0 {
				select {
				case <-pc.ready:
					prior[i].RTT = pc.connect // 0 for HTTP/1.1 and failed dials
				default:
				}
			}
			found = found || prior[i].RTT > 0
		}
		return found
	}
	if fill() {
		return nil
	}
	ready := make(chan struct{}, len(pcs))
	for _, pc := range pcs {
		go func() { <-pc.ready; ready <- struct{}{} }() // within the dial timeout
	}
	for range pcs {
		select {
		case <-ready:
		case <-ctx.Done():
			return ctx.Err()
		}
		if fill() {
			waited := time.Since(t0)
			for i, pc := range pcs {
				select {
				case <-pc.ready:
				default:
					prior[i].RTT = waited
				}
			}
			return nil
		}
	}
	return nil // no path has a TCP handshake to time (HTTP/1.1, failed dials)
}
