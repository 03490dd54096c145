package mph2

import (
	"context"
	"crypto/tls"
	"io"
	"sync"
	"time"

	"github.com/shunt-net/shunt/h2"
)

// MSPlayer is MSPlayer's scheduler (Chen, Towsley, Khalili 2014; MP-H2
// reference [22]) as MP-H2 §5.4 describes it: the video in byte-range
// chunks over one persistent HTTP/2 connection per path, each path asking
// for its next chunk only when its current one is complete (no pipelining).
// The slow path's chunk is doubled when the throughput of its last chunk
// reached its estimate and halved when it fell short; the fast path's chunk
// is the slow path's times the ratio of their throughput estimates, so both
// finish their chunks together. Estimates and chunk sizes run on from one
// download (video segment) to the next. Paths' Map and Dial apply as for
// Client.
//
// Where we had to choose: MSPlayer streams one video file, so a chunk runs
// on into the next seconds of video and both paths stay busy; a DASH player
// (ExoPlayer in MP-H2 §5.4, package dash here) asks for one segment at a
// time, after its adaptation chose the segment's rung, so a chunk cannot
// run into a segment not chosen yet. Where the paths' next chunks would
// reach past the segment's end, its remaining bytes are split over the
// paths in the ratio of those chunks (each path's share claimed when it
// asks next), so every path carries its part of the segment and they
// finish together, as they would mid-stream; giving the remainder to the
// first path to ask would leave the others idle, and once chunks outgrow
// segments, one path would carry every segment. This needs the segment's
// size up front (Download's size; the manifest gives it). The estimate is
// an EWMA of per-chunk throughput (weight msAlpha), the first chunk 256 KB
// and chunks within 64 KB..4 MB: the paper's exact estimator and bounds
// are not in MP-H2, so these are ours.
type MSPlayer struct {
	Paths     []Path
	TLSConfig *tls.Config
	// Chunk is the slow path's first chunk (default 256 KB), kept within
	// [MinChunk, MaxChunk] (default 64 KB, 4 MB).
	Chunk, MinChunk, MaxChunk int64

	once  sync.Once
	trs   []*h2.Transport
	sched msSched
}

func (m *MSPlayer) init() {
	m.once.Do(func() {
		for _, p := range m.Paths {
			m.trs = append(m.trs, &h2.Transport{AllowHTTP: true, DialContext: p.dialer(), TLSClientConfig: m.TLSConfig})
		}
		m.sched = newMSSched(len(m.Paths), m.Chunk, m.MinChunk, m.MaxChunk)
	})
}

// Close closes every path's connection.
func (m *MSPlayer) Close() {
	m.init()
	for _, tr := range m.trs {
		tr.CloseIdleConnections()
	}
}

// Warm opens every path's connection with a whole GET of rawURL.
func (m *MSPlayer) Warm(ctx context.Context, rawURL string) error {
	m.init()
	return warm(ctx, m.Paths, m.trs, rawURL)
}

// Download fetches rawURL, size bytes (-1 if unknown: then the first
// responses' Content-Range tells it, and the last chunks are not split),
// into w. Result has Size, Total and each path's Requests and Delivered.
// onResponse, if not nil, is called once, when the first response's headers
// have arrived.
func (m *MSPlayer) Download(ctx context.Context, rawURL string, size int64, w io.WriterAt, onResponse func()) (*Result, error) {
	m.init()
	o := m.sched.object()
	return chunked(ctx, "msplayer", m.Paths, m.trs, rawURL, size, w, o.claim, m.sched.done, onResponse)
}

// msSched is MSPlayer's chunk sizing; its callers serialise calls.
type msSched struct {
	slow, min, max int64
	est            []float64 // bytes/s per path, 0 until its first chunk
}

func newMSSched(paths int, first, lo, hi int64) msSched {
	s := msSched{slow: first, min: lo, max: hi, est: make([]float64, paths)}
	if s.slow <= 0 {
		s.slow = 256 << 10
	}
	if s.min <= 0 {
		s.min = 64 << 10
	}
	if s.max <= 0 {
		s.max = 4 << 20
	}
	return s
}

// slowPath is the path with the lowest estimate; before every path has one,
// the last path (cellular after WiFi) is taken as the slow one.
func (s *msSched) slowPath() int {
	slow := len(s.est) - 1
	for i, e := range s.est {
		if e == 0 {
			return len(s.est) - 1
		}
		if e < s.est[slow] {
			slow = i
		}
	}
	return slow
}

// chunk is path p's next chunk as the paper sizes it, mid-stream. Where the
// fastest path's chunk would pass max, every chunk is scaled down alike, so
// the cap keeps their ratio.
func (s *msSched) chunk(p int) int64 {
	sp := s.slowPath()
	if s.est[sp] == 0 {
		return s.slow
	}
	top := 1.0
	for _, e := range s.est {
		top = max(top, e/s.est[sp])
	}
	slow := min(float64(s.slow), float64(s.max)/top)
	return max(s.min, int64(slow*s.est[p]/s.est[sp]))
}

// msAlpha weighs a new throughput sample in a path's estimate.
const msAlpha = 0.2

func (s *msSched) done(p int, n int64, d time.Duration) {
	if n <= 0 || d <= 0 {
		return
	}
	bw := float64(n) / d.Seconds()
	if p == s.slowPath() && s.est[p] > 0 {
		if bw >= s.est[p] {
			s.slow = min(s.max, 2*s.slow)
		} else {
			s.slow = max(s.min, s.slow/2)
		}
	}
	if s.est[p] == 0 {
		s.est[p] = bw
	} else {
		s.est[p] = (1-msAlpha)*s.est[p] + msAlpha*bw
	}
}

// msObject is one download's claims: its last round's shares, once fixed.
type msObject struct {
	s      *msSched
	shares []int64 // nil until the paths' next chunks reach the end
}

func (s *msSched) object() *msObject { return &msObject{s: s} }

// claim is path p's next chunk with rem bytes unclaimed (-1: unknown): the
// paper's chunk, or once every path's next chunk together reaches the end,
// p's share of what remains, split in the ratio of those chunks. 0: p has
// nothing more to fetch.
func (o *msObject) claim(p int, rem int64) int64 {
	if rem < 0 {
		return o.s.chunk(p)
	}
	if o.shares == nil {
		var sum int64
		next := make([]int64, len(o.s.est))
		for q := range next {
			next[q] = o.s.chunk(q)
			sum += next[q]
		}
		if rem > sum {
			return next[p]
		}
		o.shares = make([]int64, len(next))
		left := rem
		for q := range next {
			o.shares[q] = rem * next[q] / sum
			left -= o.shares[q]
		}
		o.shares[p] += left // the rounding's bytes go to the path asking now
	}
	n := min(o.shares[p], rem)
	o.shares[p] = 0
	return n
}
