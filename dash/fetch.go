package dash

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/shunt-net/shunt/mph2"
)

// HTTP fetches each segment with one GET over RT: single path (an
// h2.Transport dialling one path) or kernel MPTCP (one dialling an MPTCP
// socket). A server that ignores Range is fine here: the whole file is the
// segment.
type HTTP struct{ RT http.RoundTripper }

func (f HTTP) Fetch(ctx context.Context, s Segment, started func()) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	res, err := f.RT.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", res.Status)
	}
	started()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("after %d bytes: %w", len(data), err)
	}
	if res.ContentLength >= 0 && int64(len(data)) != res.ContentLength {
		return nil, fmt.Errorf("%d bytes, Content-Length %d", len(data), res.ContentLength)
	}
	return data, nil
}

// MPH2 fetches each segment with MP-H2 over the Client's paths. FS gives
// the scheduler the manifest's segment size (MP-H2+FS); a Client with a
// Cache carries its path estimates across segments (MP-H2+FS+BW/L).
type MPH2 struct {
	Client *mph2.Client
	FS     bool
	// Done, if set, is shown every fetch's download (each path's share,
	// timing and end estimates), for the records.
	Done func(s Segment, res *mph2.Result)
}

func (f MPH2) Fetch(ctx context.Context, s Segment, started func()) ([]byte, error) {
	o := mph2.Options{OnResponse: func(int, http.Header, int64) { started() }}
	if f.FS {
		if s.Size <= 0 {
			return nil, fmt.Errorf("MP-H2+FS needs the segment's size, and the manifest gives none")
		}
		o.Size = s.Size
	}
	return fetchAt(func(w io.WriterAt) (*mph2.Result, error) {
		res, err := f.Client.Download(ctx, s.URL, w, o)
		if err == nil && f.Done != nil {
			f.Done(s, res)
		}
		return res, err
	})
}

// Downloader is mHTTP's chunked downloader, *mph2.MHTTP.
type Downloader interface {
	Download(ctx context.Context, rawURL string, w io.WriterAt, onResponse func()) (*mph2.Result, error)
}

// Chunked fetches each segment with mHTTP.
type Chunked struct{ D Downloader }

func (f Chunked) Fetch(ctx context.Context, s Segment, started func()) ([]byte, error) {
	return fetchAt(func(w io.WriterAt) (*mph2.Result, error) { return f.D.Download(ctx, s.URL, w, started) })
}

// MSPlayer fetches each segment with MSPlayer's scheduler, told the
// segment's size from the manifest (-1 when it gives none) so that a
// segment's last chunks are split over the paths.
type MSPlayer struct{ P *mph2.MSPlayer }

func (f MSPlayer) Fetch(ctx context.Context, s Segment, started func()) ([]byte, error) {
	size := s.Size
	if size <= 0 {
		size = -1
	}
	return fetchAt(func(w io.WriterAt) (*mph2.Result, error) { return f.P.Download(ctx, s.URL, size, w, started) })
}

// fetchAt runs a download into memory and returns its bytes, all written.
func fetchAt(download func(w io.WriterAt) (*mph2.Result, error)) ([]byte, error) {
	b := &memBuffer{}
	res, err := download(b)
	if err != nil {
		return nil, err
	}
	return b.bytes(res.Size)
}

// memBuffer is an io.WriterAt in memory that knows whether every byte up to
// the end was written: a hole is an error, never zeros.
type memBuffer struct {
	mu      sync.Mutex
	b       []byte
	written int64 // bytes written in all (the downloaders write each byte once)
}

func (m *memBuffer) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off > 1<<34 {
		return 0, fmt.Errorf("write at %d", off)
	}
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	copy(m.b[off:], p)
	m.written += int64(len(p))
	return len(p), nil
}

// bytes is the segment, checked to be size bytes all written.
func (m *memBuffer) bytes(size int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if int64(len(m.b)) != size || m.written != size {
		return nil, fmt.Errorf("%d bytes written over %d, the download reported %d", m.written, len(m.b), size)
	}
	return m.b, nil
}
