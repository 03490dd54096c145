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
// reference [22]) as MP-H2 §5.4 describes it: the object in byte-range
// chunks over one persistent HTTP/2 connection per path, each path asking
// for its next chunk only when its current one is complete (no pipelining).
// The slow path's chunk is doubled when the throughput of its last chunk
// reached its estimate and halved when it fell short; the fast path's chunk
// is the slow path's times the ratio of their throughput estimates, so both
// finish their chunks together. Estimates and the chunk size carry over to
// the next download (the next video segment). Paths' Map and Dial apply as
// for Client.
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
		m.sched = msSched{slow: m.Chunk, min: m.MinChunk, max: m.MaxChunk, est: make([]float64, len(m.Paths))}
		if m.sched.slow <= 0 {
			m.sched.slow = 256 << 10
		}
		if m.sched.min <= 0 {
			m.sched.min = 64 << 10
		}
		if m.sched.max <= 0 {
			m.sched.max = 4 << 20
		}
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

// Download fetches rawURL into w. Result has Size, Total and each path's
// Requests and Delivered.
func (m *MSPlayer) Download(ctx context.Context, rawURL string, w io.WriterAt) (*Result, error) {
	m.init()
	return chunked(ctx, "msplayer", m.Paths, m.trs, rawURL, w, m.sched.chunk, m.sched.done)
}

// msSched is MSPlayer's chunk sizing; its callers serialise calls.
type msSched struct {
	slow, min, max int64
	est            []float64 // bytes/s per path, 0 until its first chunk
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

func (s *msSched) chunk(p int) int64 {
	sp := s.slowPath()
	if p == sp || s.est[p] == 0 || s.est[sp] == 0 {
		return s.slow
	}
	return min(s.max, int64(float64(s.slow)*s.est[p]/s.est[sp]))
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
