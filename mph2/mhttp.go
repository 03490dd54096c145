package mph2

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
)

// MHTTP is mHTTP's scheduler (MP-H2 reference [37]), the baseline MP-H2 is
// measured against: the object in fixed chunks, every path fetching the
// next unclaimed chunk as soon as its previous one is complete (no
// pipelining, no estimates), over one persistent HTTP/2 connection per path
// (h2c for http URLs). The size comes from the first response's
// Content-Range; until then each path claims chunks blindly, and a chunk
// past the end is answered 416. Paths' Map and Dial apply as for Client.
type MHTTP struct {
	Paths     []Path
	Chunk     int64
	TLSConfig *tls.Config

	once sync.Once
	trs  []*h2.Transport
}

func (m *MHTTP) transports() []*h2.Transport {
	m.once.Do(func() {
		for _, p := range m.Paths {
			m.trs = append(m.trs, &h2.Transport{AllowHTTP: true, DialContext: p.dialer(), TLSClientConfig: m.TLSConfig})
		}
	})
	return m.trs
}

// Close closes every path's connection.
func (m *MHTTP) Close() {
	for _, tr := range m.transports() {
		tr.CloseIdleConnections()
	}
}

// pathURL is u as path p requests it: its host mapped by the path.
func pathURL(ctx context.Context, p Path, u *url.URL) (string, error) {
	t, err := p.target(ctx, h2.HostPort(u.Host, u.Scheme))
	if err != nil {
		return "", err
	}
	v := *u
	v.Host = t
	return v.String(), nil
}

// Warm opens every path's connection with a whole GET of rawURL (a small
// object), so a download that follows runs on persistent connections.
func (m *MHTTP) Warm(ctx context.Context, rawURL string) error {
	return warm(ctx, m.Paths, m.transports(), rawURL)
}

func warm(ctx context.Context, paths []Path, trs []*h2.Transport, rawURL string) error {
	u, err := parseURL(rawURL)
	if err != nil {
		return err
	}
	for i, tr := range trs {
		pu, err := pathURL(ctx, paths[i], u)
		if err == nil {
			_, _, err = getRange(ctx, tr, pu, -1, -1, io.Discard, func() {})
		}
		if err != nil {
			return fmt.Errorf("warm-up on path %s: %w", paths[i].Label(i), err)
		}
	}
	return nil
}

var errBeyondEnd = errors.New("range beyond the object")

// Download fetches rawURL in chunks over the paths and writes every byte
// at its offset in w. Result has Size, Total and each path's Requests and
// Delivered. onResponse, if not nil, is called once, when the first
// response's headers have arrived (a player's meter starts its sample
// there).
func (m *MHTTP) Download(ctx context.Context, rawURL string, w io.WriterAt, onResponse func()) (*Result, error) {
	if m.Chunk <= 0 {
		return nil, fmt.Errorf("mhttp: chunk size %d: want a positive size", m.Chunk)
	}
	return chunked(ctx, "mhttp", m.Paths, m.transports(), rawURL, -1, w, func(int, int64) int64 { return m.Chunk }, nil, onResponse)
}

// chunked is the download loop mHTTP and MSPlayer share: every path claims
// the next unclaimed chunk of claim(path, bytes unclaimed) bytes as soon as
// its previous one is complete (no pipelining), stops when claim says 0, and
// reports each completed chunk to done. Unless size says it (-1: unknown),
// the object's size comes from the first response's Content-Range; until
// then each path claims chunks blindly (bytes unclaimed -1), and a chunk past
// the end is answered 416. onResponse (nil: none) is called once, with the
// first valid response's headers.
func chunked(ctx context.Context, name string, paths []Path, trs []*h2.Transport, rawURL string, size int64, w io.WriterAt,
	claimSize func(p int, rem int64) int64, done func(p int, n int64, d time.Duration), onResponse func()) (*Result, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		next  int64
		total = max(size, -1)
		res   = &Result{Paths: make([]PathResult, len(trs))}
	)
	claim := func(p int) (a, b int64, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		rem := int64(-1)
		if total >= 0 {
			if rem = total - next; rem <= 0 {
				return 0, 0, false
			}
		}
		n := claimSize(p, rem)
		if n <= 0 {
			return 0, 0, false
		}
		a = next
		next += n
		return a, next, true
	}
	headers := func() {}
	if onResponse != nil {
		headers = sync.OnceFunc(onResponse)
	}
	start := time.Now()
	errs := make(chan error, len(trs))
	for i, tr := range trs {
		res.Paths[i].Name, res.Paths[i].Proto = paths[i].Label(i), "h2"
		go func() {
			pu, err := pathURL(ctx, paths[i], u)
			if err != nil {
				errs <- err
				return
			}
			for {
				a, b, ok := claim(i)
				if !ok {
					errs <- nil
					return
				}
				t0 := time.Now()
				obj, n, err := getRange(ctx, tr, pu, a, b, &offsetWriter{w: w, off: a}, headers)
				if errors.Is(err, errBeyondEnd) {
					errs <- nil
					return
				}
				if err != nil {
					errs <- fmt.Errorf("path %s: %w", res.Paths[i].Name, err)
					return
				}
				mu.Lock()
				if total < 0 {
					total = obj
				} else if obj != total {
					mu.Unlock()
					errs <- fmt.Errorf("path %s: the object has %d bytes, want %d", res.Paths[i].Name, obj, total)
					return
				}
				res.Paths[i].Delivered += n
				res.Paths[i].Received += n
				res.Paths[i].Requests++
				res.Size += n
				if done != nil {
					done(i, n, time.Since(t0))
				}
				mu.Unlock()
			}
		}()
	}
	var all []error
	for range trs {
		all = append(all, <-errs)
	}
	res.Total = time.Since(start)
	if err := errors.Join(all...); err != nil {
		return res, err
	}
	if res.Size != total {
		return res, fmt.Errorf("%s: %d bytes received, want %d", name, res.Size, total)
	}
	return res, nil
}

// offsetWriter writes a stream at consecutive offsets of a WriterAt.
type offsetWriter struct {
	w   io.WriterAt
	off int64
}

func (o *offsetWriter) Write(p []byte) (int, error) {
	n, err := o.w.WriteAt(p, o.off)
	o.off += int64(n)
	return n, err
}

// getRange GETs url (bytes [a, b) if a >= 0), calls headers once the
// response is known to answer the request, copies the body to w and returns
// the object's size and the bytes copied. A 206 must be exactly the range
// asked for (ends clipped to the object).
func getRange(ctx context.Context, rt http.RoundTripper, url string, a, b int64, w io.Writer, headers func()) (obj, n int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	if a >= 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(a, 10)+"-"+strconv.FormatInt(b-1, 10))
	}
	res, err := rt.RoundTrip(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	obj = res.ContentLength
	switch res.StatusCode {
	case http.StatusOK:
		if a > 0 {
			return 0, 0, fmt.Errorf("GET %s: the server ignored Range bytes %d-%d and sent the whole object", url, a, b-1)
		}
	case http.StatusPartialContent:
		first, last, size, err := content.ParseContentRange(res.Header.Get("Content-Range"))
		if err != nil {
			return 0, 0, err
		}
		if first != a || last != min(b, size)-1 {
			return 0, 0, fmt.Errorf("GET %s: asked for bytes %d-%d, got Content-Range %q", url, a, b-1, res.Header.Get("Content-Range"))
		}
		obj = size
	case http.StatusRequestedRangeNotSatisfiable:
		return 0, 0, errBeyondEnd
	default:
		return 0, 0, fmt.Errorf("GET %s: status %s", url, res.Status)
	}
	headers()
	n, err = io.Copy(w, res.Body)
	return obj, n, err
}
