package h2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/shunt-net/shunt/content"
)

// Resume is an http.RoundTripper whose GET responses survive a broken
// connection: when a body breaks before its end (connection closed, stream
// reset, a migrated stream whose continuation never came), the rest is asked
// for again with Range and If-Range (the response's strong ETag, else its
// Last-Modified) and the reader gets one in-order body. A server whose
// validator changed answers 200, and the read fails with ErrResourceChanged
// rather than splice two versions. Works over any RoundTripper (h2, SMig,
// Go's HTTP/1.1 Transport).
type Resume struct {
	Transport http.RoundTripper
	// Retries bounds the re-requests of one response; 0 means
	// DefaultResumeRetries, negative none.
	Retries int
	// Backoff is the wait before the first re-request, doubled for each
	// next one up to maxResumeBackoff; 0 means 100 ms.
	Backoff time.Duration
	// OnResume, if set, hears of each re-request: the bytes already
	// delivered and the error that broke the body.
	OnResume func(req *http.Request, delivered int64, cause error)
}

// DefaultResumeRetries re-requests ride out a server restart of a few
// seconds (waits 0.1+0.2+0.4+0.8+1.6 s).
const DefaultResumeRetries = 5

const maxResumeBackoff = 4 * time.Second

// ErrResourceChanged: the validator no longer matched when resuming, so
// the bytes already delivered belong to another version of the resource.
var ErrResourceChanged = errors.New("h2: the resource changed while resuming (If-Range did not match): start over")

// RoundTrip sends req and gives the response a resuming body.
func (r *Resume) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	return r.Wrap(req, res), nil
}

// Wrap gives res, the answer to req, a resuming body. res is returned as it
// is when it cannot be resumed: not a GET, retries off, not 200 or 206,
// length unknown, or no strong validator to put in If-Range.
func (r *Resume) Wrap(req *http.Request, res *http.Response) *http.Response {
	if r.Retries < 0 || req.Method != http.MethodGet || res.Body == nil || res.Body == http.NoBody {
		return res
	}
	b := &resumeBody{r: r, req: req, cur: res.Body}
	switch res.StatusCode {
	case http.StatusOK:
		if res.ContentLength <= 0 {
			return res
		}
		b.first, b.last, b.total = 0, res.ContentLength-1, res.ContentLength
	case http.StatusPartialContent:
		first, last, total, err := content.ParseContentRange(res.Header.Get("Content-Range"))
		if err != nil || res.ContentLength >= 0 && res.ContentLength != last-first+1 {
			return res
		}
		b.first, b.last, b.total = first, last, total
	default:
		return res
	}
	if et := res.Header.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		b.validator = et
	} else if lm := res.Header.Get("Last-Modified"); lm != "" {
		b.validator = lm
	} else {
		return res
	}
	res.Body = b
	return res
}

// resumeBody is a response body that re-requests what is missing when it
// breaks. first..last are absolute offsets of the bytes it must deliver.
type resumeBody struct {
	r                  *Resume
	req                *http.Request
	first, last, total int64
	validator          string

	mu      sync.Mutex // cur, for Close during a Read
	cur     io.ReadCloser
	closed  bool
	got     int64 // delivered to the reader
	tries   int
	pending error // the error behind bytes already returned
}

func (b *resumeBody) want() int64 { return b.last - b.first + 1 }

func (b *resumeBody) Read(p []byte) (int, error) {
	for {
		err := b.pending
		b.pending = nil
		if err == nil {
			var n int
			n, err = b.body().Read(p)
			b.got += int64(n)
			switch {
			case b.got > b.want():
				return n, fmt.Errorf("h2: %s: body longer than the %d bytes announced", b.req.URL, b.want())
			case err == io.EOF && b.got < b.want():
				err = fmt.Errorf("h2: %s: body ended after %d of %d bytes: %w", b.req.URL, b.got, b.want(), io.ErrUnexpectedEOF)
			}
			if n > 0 {
				if err != io.EOF {
					b.pending = err
					err = nil
				}
				return n, err
			}
			if err == nil || err == io.EOF {
				return 0, err
			}
		}
		if rerr := b.resume(err); rerr != nil {
			return 0, rerr
		}
	}
}

func (b *resumeBody) body() io.ReadCloser {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

// resume replaces the broken body with a response for the missing bytes,
// or returns why it cannot.
func (b *resumeBody) resume(cause error) error {
	ctx := b.req.Context()
	retries := b.r.Retries
	if retries == 0 {
		retries = DefaultResumeRetries
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed || ctx.Err() != nil {
		return cause // the reader stopped it: not a break
	}
	for b.tries < retries {
		if b.r.OnResume != nil {
			b.r.OnResume(b.req, b.got, cause)
		}
		wait := b.r.Backoff
		if wait <= 0 {
			wait = 100 * time.Millisecond
		}
		wait = min(wait<<b.tries, maxResumeBackoff)
		b.tries++
		b.body().Close()
		if err := sleepCtx(ctx, wait); err != nil {
			return cause
		}
		res, err := b.request(ctx)
		if errors.Is(err, ErrResourceChanged) || ctx.Err() != nil {
			return err
		}
		if err != nil {
			cause = err
			continue
		}
		b.mu.Lock()
		b.cur = res.Body
		closed := b.closed
		b.mu.Unlock()
		if closed {
			res.Body.Close()
			return cause
		}
		return nil
	}
	return fmt.Errorf("h2: %s broke after %d of %d bytes and %d re-requests with Range failed: %w", b.req.URL, b.got, b.want(), b.tries, cause)
}

// request asks for bytes first+got..last if the validator still holds.
func (b *resumeBody) request(ctx context.Context) (*http.Response, error) {
	req := b.req.Clone(ctx)
	from := b.first + b.got
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", from, b.last))
	req.Header.Set("If-Range", b.validator)
	res, err := b.r.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*http.Response, error) {
		res.Body.Close()
		return nil, err
	}
	switch {
	case res.StatusCode == http.StatusOK:
		return fail(fmt.Errorf("%w (%s, %d bytes delivered)", ErrResourceChanged, b.req.URL, b.got))
	case res.StatusCode != http.StatusPartialContent:
		return fail(fmt.Errorf("h2: resuming %s at byte %d: server answered %s", b.req.URL, from, res.Status))
	}
	first, last, total, err := content.ParseContentRange(res.Header.Get("Content-Range"))
	if err != nil {
		return fail(fmt.Errorf("h2: resuming %s: %w", b.req.URL, err))
	}
	if first != from || last != b.last || total != b.total {
		return fail(fmt.Errorf("h2: resuming %s: asked for bytes %d-%d/%d, got %d-%d/%d", b.req.URL, from, b.last, b.total, first, last, total))
	}
	return res, nil
}

func (b *resumeBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.cur.Close()
}

// sleepCtx is internal/ctxtime.Sleep, which sits a floor above h2.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
