package mph2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Transport is an http.RoundTripper that turns plain GETs into multipath
// downloads, the body streamed to the caller in order.
//
// Memory: bytes that arrive ahead of the next in-order byte are held until
// the gap before them fills. The gap is the part a slower path still owes,
// so in the worst case (the path carrying the object's start stalls) the
// whole object is held: memory is bounded by the object's size. Download
// into a file (Client.Download) for objects too large for that.
type Transport struct {
	Client *Client
	// Fallback carries requests that are not a plain GET (a method other
	// than GET, a body, or a Range header of the caller's own); nil means
	// such requests fail.
	Fallback http.RoundTripper
	// Options are the base options of every download (Size, Progress and
	// Settle are honoured; OnResponse and Header are the Transport's).
	Options Options
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) || req.Header.Get("Range") != "" {
		if t.Fallback == nil {
			return nil, fmt.Errorf("mph2: Transport handles plain GETs only (got %s with Range %q), and has no Fallback", req.Method, req.Header.Get("Range"))
		}
		return t.Fallback.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	body := &orderedBody{pending: map[int64][]byte{}, cancel: cancel}
	body.cond = sync.NewCond(&body.mu)
	type head struct {
		h    http.Header
		size int64
	}
	heads := make(chan head, 1)
	failed := make(chan error, 1)
	o := t.Options
	o.Header = req.Header
	o.OnResponse = func(_ int, h http.Header, size int64) { heads <- head{h.Clone(), size} }
	go func() {
		_, err := t.Client.Download(ctx, req.URL.String(), body, o)
		body.finish(err)
		if err != nil {
			failed <- err
		}
	}()
	select {
	case hd := <-heads:
		// Whatever the paths' responses were (206s, a 200), the caller
		// asked for the whole object and gets it.
		hd.h.Del("Content-Range")
		hd.h.Del("Content-Length")
		if hd.size >= 0 {
			hd.h.Set("Content-Length", strconv.FormatInt(hd.size, 10))
		}
		return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/2.0", ProtoMajor: 2,
			Header: hd.h, ContentLength: hd.size, Body: body, Request: req}, nil
	case err := <-failed:
		cancel()
		return nil, err
	}
}

// orderedBody reassembles bytes written at offsets into a stream.
type orderedBody struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[int64][]byte // chunks not yet contiguous with head, by offset
	ready   [][]byte         // contiguous chunks the reader may take
	head    int64            // offset just past the last ready byte
	done    bool
	err     error
	cancel  context.CancelFunc
}

// WriteAt copies p: the caller's buffer is reused.
func (b *orderedBody) WriteAt(p []byte, off int64) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return 0, errors.New("mph2: response body closed")
	}
	b.pending[off] = append([]byte(nil), p...)
	for {
		c, ok := b.pending[b.head]
		if !ok {
			break
		}
		delete(b.pending, b.head)
		b.ready = append(b.ready, c)
		b.head += int64(len(c))
	}
	b.cond.Broadcast()
	return len(p), nil
}

func (b *orderedBody) finish(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.done, b.err = true, err
	}
	b.cond.Broadcast()
}

func (b *orderedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.ready) == 0 && !b.done {
		b.cond.Wait()
	}
	if len(b.ready) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n := copy(p, b.ready[0])
	if n == len(b.ready[0]) {
		b.ready = b.ready[1:]
	} else {
		b.ready[0] = b.ready[0][n:]
	}
	return n, nil
}

// Close stops the download if it is still running.
func (b *orderedBody) Close() error {
	b.cancel()
	b.finish(errors.New("mph2: response body closed"))
	return nil
}
