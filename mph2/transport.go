package mph2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shunt-net/shunt/h2"
)

// Transport is an http.RoundTripper over MP-H2's paths. A GET whose
// response is large enough (SplitMin) and rangeable (200 with a
// Content-Length and "Accept-Ranges: bytes") is split by byte ranges over
// every path (MP-H2's unknown-size start: the first path's whole-object GET
// learns the size; the object then goes out from its front in pieces sized
// by each path's rate, Options.InOrder); the caller receives a 200 with the
// object's Content-Length and a body streamed in order, whose prefix grows
// at about the paths' summed rate. Every other response (an error status, a small or unrangeable
// object, a body of unknown length) is the first path's response, passed
// through as it came. Requests that are not a plain GET (another method, a
// body, a Range or a conditional header of the caller's own) go as they are
// on the first path without a byte budget whose connection works.
//
// Path budgets (Path.Budget) hold across every response: the GET's first
// request goes on a path without a budget if there is one (else as a range
// the budget holds, so nothing is passed through whole on a budgeted path).
//
// A split body that cannot be completed (no path left, the stall timeout)
// ends with an error from Read, never with a silent EOF.
//
// Memory: bytes that arrive ahead of the next in-order byte are held until
// the gap before them fills. The gap is the part a slower path still owes,
// so in the worst case (the path carrying the object's start stalls) the
// whole object is held: memory is bounded by the object's size. Download
// into a file (Client.Download) for objects too large for that.
type Transport struct {
	Client *Client
	// SplitMin is the smallest object split over the paths; smaller ones
	// stay on the first path's response. Default DefaultSplitMin.
	SplitMin int64
	// Options are the base options of every download (Progress and Settle
	// are honoured; Size, OnResponse, HandOver, Header and InOrder are the
	// Transport's).
	Options Options
}

// DefaultSplitMin is Transport.SplitMin's default: 256 KiB, about two
// round trips' worth of a 10 Mbit/s, 100 ms path, below which a second
// path's request would hardly arrive before the first path is done.
const DefaultSplitMin = 256 << 10

func (t *Transport) splitMin() int64 {
	if t.SplitMin > 0 {
		return t.SplitMin
	}
	return DefaultSplitMin
}

// passHeaders make a GET the caller's own: its response is not the whole
// object, or not ours to assemble from ranges.
var passHeaders = []string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.Client.Paths) == 0 {
		return nil, errors.New("mph2: Transport's Client has no paths")
	}
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return nil, fmt.Errorf("mph2: Transport: URL %v: want http:// or https:// with a host", req.URL)
	}
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) || slices.ContainsFunc(passHeaders, func(h string) bool { return req.Header.Get(h) != "" }) {
		return t.passThrough(req)
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
	o.Size = 0
	o.Header = req.Header
	o.InOrder = true
	o.OnResponse = func(_ int, h http.Header, size int64) { heads <- head{h.Clone(), size} }
	o.HandOver = func(res *http.Response) bool {
		if res.StatusCode == http.StatusOK && res.ContentLength >= t.splitMin() && rangeable(res.Header) {
			return false
		}
		return true
	}
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
		var ho *HandedOver
		if errors.As(err, &ho) {
			res := ho.Response
			res.Body = &cancelBody{res.Body, cancel}
			res.Request = req
			return res, nil
		}
		cancel()
		return nil, err
	}
}

// rangeable: the server says it serves byte ranges of this representation
// (not, say, of a body it compresses on the fly).
func rangeable(h http.Header) bool {
	return strings.EqualFold(strings.TrimSpace(h.Get("Accept-Ranges")), "bytes")
}

// passThrough sends req as it is on the first path without a budget whose
// connection to the server works: a response passed through is not sized
// by the scheduler, so nothing would bound it on a budgeted path.
func (t *Transport) passThrough(req *http.Request) (*http.Response, error) {
	use, errs := PassThroughPaths(t.Client.Paths)
	for _, i := range use {
		pc := t.Client.conn(i, req.URL)
		select {
		case <-pc.ready:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		if pc.err != nil {
			errs = append(errs, pc.err)
			continue
		}
		if pc.h1 != nil {
			return pc.h1.RoundTrip(req)
		}
		return pc.h2.RoundTripOpts(req, h2.StreamOptions{ReceiveWindow: handOverWindow})
	}
	return nil, fmt.Errorf("mph2: %s %s: no path reaches the server: %w", req.Method, req.URL, errors.Join(errs...))
}

// cancelBody ends the request's context once the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
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
