package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/site"
)

// MultipathConfig is a page load over several paths, one HTTP/2 connection
// per path (issue 19).
type MultipathConfig struct {
	Paths []mph2.Path
	Cost  []float64 // cost per byte of each path (nil: all 0)
	// Policy places every request (mph2.Hinted); nil: MP-H2 without hints,
	// every object split over all paths by MP-H2's scheduler (its size
	// given, as MP-H2+FS).
	Policy    *hints.Policy
	Addr      string // server HOST:PORT (every path reaches it)
	TLS       bool
	TLSConfig *tls.Config
	Page      *page.Page
	// Schedule sets the requests' Priority headers, as Config.Schedule
	// (default DefaultSchedule).
	Schedule string
}

// Multipath implements replay.Fetcher over several paths. Its connections
// open with the load's first request and close with Close.
type Multipath struct {
	cfg   MultipathConfig
	base  string
	hints map[*page.Object]hints.Hint
	h     *mph2.Hinted // with a policy
	mp    *mph2.Client // without
	once  sync.Once
	start error

	mu    sync.Mutex
	stats MultipathStats
}

// MultipathStats is what a load over several paths did.
type MultipathStats struct {
	Paths []PathStats
	// Redundant requests, and of them those whose second copy won; tails
	// and hedges re-requested, and those that won; copies cancelled as
	// clearly behind (mph2.HintedStats.Cut); objects split in a head and
	// the rest on two paths.
	Redundant, SecondWon, Tails, TailWon, Cut, Splits, Joins int
	// Wasted: body bytes read and thrown away (hinted); for MP-H2, the
	// bytes its streams received past their moved ends.
	Wasted int64
}

// PathStats is one path's share of a load.
type PathStats struct {
	Name     string
	Requests int
	Used     int64 // body bytes of this path in the objects
	Received int64 // DATA the path's connection received, waste included
	// Loss is the receiver's out-of-order share of the path's segments
	// (TCP_INFO), as the hinted policy last read it; 0 for MP-H2 rows.
	Loss float64
}

// NewMultipath prepares one page load of cfg.Page.
func NewMultipath(cfg MultipathConfig) (*Multipath, error) {
	if cfg.Schedule == "" {
		cfg.Schedule = DefaultSchedule
	}
	if priority(cfg.Schedule, "") == "" {
		return nil, fmt.Errorf("schedule %q: want %s, %s or %s", cfg.Schedule, Interleaved, Sequential, Browser)
	}
	if len(cfg.Paths) == 0 || cfg.Page == nil || cfg.Addr == "" {
		return nil, errors.New("fetch: a multipath load needs paths, a page and an address")
	}
	m := &Multipath{cfg: cfg, base: "http://" + cfg.Addr, hints: map[*page.Object]hints.Hint{}}
	if cfg.TLS {
		m.base = "https://" + cfg.Addr
	}
	for i, h := range hints.FromPage(cfg.Page) {
		m.hints[&cfg.Page.Objects[i]] = h
	}
	// MP-H2 (no policy) ends its streams by RST_STREAM too.
	c := &mph2.Client{Paths: cfg.Paths, TLSConfig: cfg.TLSConfig, Proto: mph2.ProtoHTTP2, EndAdjust: mph2.HintedEndAdjust(cfg.Policy)}
	if cfg.Policy != nil {
		var expect int64
		for _, o := range cfg.Page.Objects {
			expect += max(o.Size, 0)
		}
		m.h = &mph2.Hinted{Client: c, Policy: cfg.Policy, Cost: cfg.Cost, Expect: expect}
	} else {
		m.mp = c
	}
	m.stats.Paths = make([]PathStats, len(cfg.Paths))
	for i, p := range cfg.Paths {
		m.stats.Paths[i].Name = p.Label(i)
	}
	return m, nil
}

// Fetch downloads obj over the paths; see replay.Fetcher.
func (m *Multipath) Fetch(ctx context.Context, obj *page.Object, done func(replay.Fetched, error)) {
	hint, ok := m.hints[obj]
	if !ok {
		done(replay.Fetched{}, fmt.Errorf("object %s is not of page %s", obj.ID, m.cfg.Page.Name))
		return
	}
	if m.h != nil {
		m.once.Do(func() { m.start = m.h.Start(m.base + "/") })
		if m.start != nil {
			done(replay.Fetched{}, m.start)
			return
		}
	}
	go func() { done(m.get(ctx, obj, hint)) }()
}

func (m *Multipath) get(ctx context.Context, obj *page.Object, hint hints.Hint) (replay.Fetched, error) {
	path := site.URLPath(m.cfg.Page.Name, obj.Path)
	hdr := http.Header{"Priority": {priority(m.cfg.Schedule, obj.Class)}}
	var fd replay.Fetched
	var body []byte
	var digest string
	if m.h != nil {
		g, err := m.h.Get(ctx, m.base+path, hint, hdr)
		if err != nil {
			return fd, fmt.Errorf("GET %s: %w", path, err)
		}
		fd = replay.Fetched{Request: g.Request, FirstByte: g.FirstByte, Done: g.Done, Conn: g.Path}
		body, digest = g.Body, g.Header.Get(site.DigestHeader)
	} else {
		buf := &memAt{b: make([]byte, obj.Size)}
		var mu sync.Mutex
		fd.Request = time.Now()
		res, err := m.mp.Download(ctx, m.base+path, buf, mph2.Options{Size: obj.Size, Header: hdr,
			OnResponse: func(_ int, h http.Header, _ int64) {
				mu.Lock()
				fd.FirstByte, digest = time.Now(), h.Get(site.DigestHeader)
				mu.Unlock()
			}})
		if err != nil {
			return fd, fmt.Errorf("GET %s: %w", path, err)
		}
		fd.Done, body = time.Now(), buf.b[:res.Size]
		mu.Lock()
		if fd.FirstByte.IsZero() {
			fd.FirstByte = fd.Done
		}
		mu.Unlock()
		m.mu.Lock()
		m.stats.Wasted += res.TailBytes
		best := int64(-1)
		for i, p := range res.Paths {
			m.stats.Paths[i].Requests += p.Requests
			m.stats.Paths[i].Used += p.Delivered
			if p.Delivered > best {
				fd.Conn, best = i, p.Delivered
			}
		}
		m.mu.Unlock()
	}
	v := site.NewVerifier(path, obj.Size)
	if _, err := v.Write(body); err != nil {
		return fd, fmt.Errorf("GET %s: %w", path, err)
	}
	fd.Bytes = v.Bytes()
	if err := v.Finish(digest); err != nil {
		return fd, fmt.Errorf("GET %s: %w", path, err)
	}
	return fd, nil
}

// Stats is what the load did so far.
func (m *Multipath) Stats() MultipathStats {
	m.mu.Lock()
	s := m.stats
	s.Paths = append([]PathStats(nil), m.stats.Paths...)
	m.mu.Unlock()
	c := m.mp
	if m.h != nil {
		c = m.h.Client
		hs := m.h.Stats()
		s.Redundant, s.SecondWon, s.Tails, s.TailWon, s.Cut, s.Splits, s.Joins, s.Wasted = hs.Redundant, hs.SecondWon, hs.Tails, hs.TailWon, hs.Cut, hs.Splits, hs.Joins, hs.Wasted
		for i, p := range hs.Paths {
			s.Paths[i].Requests, s.Paths[i].Used, s.Paths[i].Loss = p.Requests, p.Used, p.Loss
		}
	}
	for i, n := range c.Received() {
		s.Paths[i].Received = n
	}
	return s
}

// Close closes the connections.
func (m *Multipath) Close() error {
	if m.h != nil {
		return m.h.Close()
	}
	return m.mp.Close()
}

// memAt is an object's bytes as MP-H2 writes them at their offsets.
type memAt struct {
	mu sync.Mutex
	b  []byte
}

func (m *memAt) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(m.b)) {
		return 0, fmt.Errorf("bytes [%d,%d) outside the object's %d", off, off+int64(len(p)), len(m.b))
	}
	return copy(m.b[off:], p), nil
}

// Schedule is the schedule the requests' Priority headers ask for.
func (m *Multipath) Schedule() string { return m.cfg.Schedule }
