package mph2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"testing"
	"time"

	"github.com/shunt-net/shunt/hints"
)

// fakePath is a path whose responses the test writes: each request waits
// for the test's answer, and the body is what the test writes, when it
// writes it.
type fakePath struct{ reqs chan *fakeExchange }

type fakeExchange struct {
	req  *http.Request
	resp chan *http.Response
}

func (f *fakePath) RoundTrip(req *http.Request) (*http.Response, error) {
	x := &fakeExchange{req: req, resp: make(chan *http.Response, 1)}
	ctx := req.Context()
	select {
	case f.reqs <- x:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteHeaders != nil {
		tr.WroteHeaders() // as a transport does once the request is out
	}
	select {
	case r := <-x.resp:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fakePath) CloseIdleConnections() {}

// next is the path's next request (the test fails after 5 s without one).
func (f *fakePath) next(t *testing.T) *fakeExchange {
	t.Helper()
	select {
	case x := <-f.reqs:
		return x
	case <-time.After(5 * time.Second):
		t.Fatal("no request on the path")
		return nil
	}
}

// answer sends the response's header; its body is what the test writes to
// the pipe, and the copy's cancellation breaks it as a stream reset would.
func (x *fakeExchange) answer(status int, hdr http.Header, length int64) *io.PipeWriter {
	pr, pw := io.Pipe()
	ctx := x.req.Context()
	go func() {
		<-ctx.Done()
		pr.CloseWithError(ctx.Err())
	}()
	x.resp <- &http.Response{StatusCode: status, Status: fmt.Sprint(status), Header: hdr, ContentLength: length, Body: pr}
	return pw
}

// fakeHinted is a Hinted over paths cheap (cost 0) and exp (cost 1) whose
// connections are fakes.
func fakeHinted(t *testing.T, rules string) (*Hinted, [2]*fakePath) {
	t.Helper()
	pol, err := hints.Parse("test.rules", rules)
	if err != nil {
		t.Fatal(err)
	}
	const base = "http://origin.test"
	u, _ := parseURL(base)
	c := &Client{Paths: []Path{{Name: "cheap"}, {Name: "exp"}}, conns: map[connKey]*pathConn{}}
	var fakes [2]*fakePath
	for i := range fakes {
		fakes[i] = &fakePath{reqs: make(chan *fakeExchange, 3)}
		pc := &pathConn{ready: make(chan struct{}), h1: fakes[i], proto: "http/1.1"}
		close(pc.ready)
		c.conns[keyOf(i, u)] = pc
	}
	h := &Hinted{Client: c, Policy: pol, Cost: []float64{0, 1}, TailCheck: time.Millisecond}
	if err := h.Start(base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, fakes
}

// startRoundTrip asks for the object through RoundTrip in the background;
// the function returned waits for the response, which comes with the
// header, before the body.
func startRoundTrip(t *testing.T, h *Hinted, hdr http.Header) func() *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://origin.test/obj", nil)
	req.Header = hdr
	return background(t, "response", func() (*http.Response, error) { return h.RoundTrip(req) })
}

// background runs f in the background; the function returned waits for
// its result (what, in the failure after 5 s without one).
func background[T any](t *testing.T, what string, f func() (T, error)) func() T {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	return func() T {
		t.Helper()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.v
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s", what)
			var zero T
			return zero
		}
	}
}

// object is the test's body: every byte depends on its offset, so a byte
// repeated, skipped or reordered shows.
func object(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// readN reads exactly n bytes of the stream (failing after 5 s).
func readN(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(r, b)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reading %d bytes: %v", n, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%d bytes not delivered", n)
	}
	return b
}

func write(t *testing.T, w io.Writer, b []byte) {
	t.Helper()
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
}

func objHeader(etag string) http.Header {
	return http.Header{"Etag": {etag}, "Content-Type": {"text/html"}}
}

// answerRange checks that x asks for want from off on with If-Range
// naming ETag v1, and answers it: 206, ETag v1.
func answerRange(t *testing.T, x *fakeExchange, want []byte, off int) {
	t.Helper()
	if r, ir := x.req.Header.Get("Range"), x.req.Header.Get("If-Range"); r != fmt.Sprintf("bytes=%d-", off) || ir != `"v1"` {
		t.Fatalf("asked with Range %q If-Range %q, want bytes=%d- and the first response's ETag", r, ir, off)
	}
	hdr := objHeader(`"v1"`)
	hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, len(want)-1, len(want)))
	write(t, x.answer(206, hdr, int64(len(want)-off)), want[off:])
}

// checkRest reads the stream to its end and compares the whole body.
func checkRest(t *testing.T, res *http.Response, head, want []byte) {
	t.Helper()
	rest := readN(t, res.Body, len(want)-len(head))
	if got := append(head, rest...); !bytes.Equal(got, want) {
		t.Fatalf("body differs from the object (%d bytes)", len(got))
	}
	if n, err := res.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the body: %d bytes, %v; want EOF", n, err)
	}
	res.Body.Close()
}

// streamHead asks for want through RoundTrip with Sec-Fetch-Dest dest,
// answers on path p (the primary's) with want's header and first n bytes,
// and reads those n through the stream before anything else is sent.
func streamHead(t *testing.T, h *Hinted, p *fakePath, dest string, want []byte, n int) (*http.Response, *io.PipeWriter, []byte) {
	t.Helper()
	resp := startRoundTrip(t, h, http.Header{"Sec-Fetch-Dest": {dest}})
	pw := p.next(t).answer(200, objHeader(`"v1"`), int64(len(want)))
	res := resp()
	write(t, pw, want[:n])
	return res, pw, readN(t, res.Body, n)
}

// The primary's bytes reach the application as they arrive: the header
// before any body byte, the first part before the rest is sent; a
// response that breaks mid-body breaks the stream (no EOF).
func TestHintedStreamPrimary(t *testing.T) {
	h, fakes := fakeHinted(t, "urgent -> path=exp\n* -> path=cheap")
	want := object(50000)
	res, pw, head := streamHead(t, h, fakes[1], "document", want, 1000)
	if res.ContentLength != int64(len(want)) || res.Header.Get("Content-Length") != strconv.Itoa(len(want)) || res.Header.Get("Etag") != `"v1"` {
		t.Fatalf("length %d, header %v", res.ContentLength, res.Header)
	}
	write(t, pw, want[1000:])
	checkRest(t, res, head, want)
	s := h.Stats()
	if s.Paths[1].Used != int64(len(want)) || s.Paths[0].Used != 0 || s.Wasted != 0 || s.Paths[1].Requests != 1 || s.Paths[0].Requests != 0 {
		t.Errorf("stats %+v", s)
	}

}

// breakAfter streams want's first n bytes (its header hdr, Sec-Fetch-Dest
// document, on exp), lets the application read the first 1000, then breaks
// the body as a connection reset would; it returns the response and the
// bytes read.
func breakAfter(t *testing.T, h *Hinted, fakes [2]*fakePath, hdr http.Header, want []byte, n int) (*http.Response, []byte) {
	t.Helper()
	resp := startRoundTrip(t, h, http.Header{"Sec-Fetch-Dest": {"document"}})
	pw := fakes[1].next(t).answer(200, hdr, int64(len(want)))
	res := resp()
	write(t, pw, want[:n])
	head := readN(t, res.Body, 1000)
	pw.CloseWithError(io.ErrUnexpectedEOF)
	return res, head
}

// A body broken by its connection is asked for again on the other path by
// Range from the bytes received, with If-Range naming the ETag; the
// application gets every byte once, in order.
func TestHintedReissueByRange(t *testing.T) {
	h, fakes := fakeHinted(t, "urgent -> path=exp\n* -> path=cheap")
	want := object(50000)
	res, head := breakAfter(t, h, fakes, objHeader(`"v1"`), want, 3000)
	answerRange(t, fakes[0].next(t), want, 3000)
	checkRest(t, res, head, want)
	s := h.Stats()
	if s.Reissued != 1 || s.Paths[1].Used != 3000 || s.Paths[0].Used != 47000 || s.Wasted != 0 {
		t.Errorf("stats %+v: want one re-issue, 3000 bytes from exp and 47000 from cheap, none wasted", s)
	}
}

// The representation changed while the object was asked for again (the
// server answers the If-Range request whole, with another ETag): the
// stream fails after the bytes received before, which are passed on, and
// the object is not asked for a third time.
func TestHintedReissueChanged(t *testing.T) {
	h, fakes := fakeHinted(t, "urgent -> path=exp\n* -> path=cheap")
	want := object(50000)
	res, head := breakAfter(t, h, fakes, objHeader(`"v1"`), want, 3000)
	pw := fakes[0].next(t).answer(200, objHeader(`"v2"`), int64(len(want)))
	go pw.Write(object(50001)[1:])
	rest, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil || !bytes.Equal(append(head, rest...), want[:3000]) {
		t.Fatalf("read %d bytes after the head, error %v; want the 2000 received before, then an error", len(rest), err)
	}
	if len(fakes[0].reqs)+len(fakes[1].reqs) != 0 || h.Stats().Reissued != 1 {
		t.Errorf("asked again after a changed representation: stats %+v", h.Stats())
	}
}

// Without a validator the object is asked for again whole, and its first
// bytes are compared with those received before: the same bytes complete
// the stream (those first bytes counted as wasted); different ones fail it
// before any of them is passed on.
func TestHintedReissueWhole(t *testing.T) {
	h, fakes := fakeHinted(t, "urgent -> path=exp\n* -> path=cheap")
	want := object(50000)
	plain := http.Header{"Content-Type": {"text/html"}}
	res, head := breakAfter(t, h, fakes, plain, want, 3000)
	x := fakes[0].next(t)
	if r := x.req.Header.Get("Range"); r != "" {
		t.Fatalf("asked again with Range %q, want the whole object", r)
	}
	write(t, x.answer(200, plain, int64(len(want))), want)
	checkRest(t, res, head, want)
	// Bytes 1000-2999 come from either copy, whichever the reader finds
	// first.
	if s := h.Stats(); s.Reissued != 1 || s.Wasted != 3000 || s.Paths[1].Used < 1000 || s.Paths[0].Used+s.Paths[1].Used != 50000 {
		t.Errorf("stats %+v: want the 3000 bytes received twice wasted", s)
	}

	res, head = breakAfter(t, h, fakes, plain, want, 3000)
	other := bytes.Clone(want)
	other[2000] ^= 1
	go fakes[0].next(t).answer(200, plain, int64(len(want))).Write(other)
	rest, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil || !bytes.Equal(append(head, rest...), want[:3000]) {
		t.Fatalf("read %d bytes after the head, error %v; want the 2000 received before, then an error", len(rest), err)
	}
}

// A redundant copy that completes first while the primary has delivered
// part of the object goes on at the offset delivered; a copy of another
// representation (ETag) is never used.
func TestHintedStreamRedundantWins(t *testing.T) {
	h, fakes := fakeHinted(t, "urgent -> path=exp redundant\n* -> path=cheap")
	want := object(30000)
	res, _, head := streamHead(t, h, fakes[1], "style", want, 1000)
	write(t, fakes[0].next(t).answer(200, objHeader(`"v1"`), int64(len(want))), want)
	checkRest(t, res, head, want)
	s := h.Stats()
	if s.Redundant != 1 || s.SecondWon != 1 || s.Paths[1].Used != 1000 || s.Paths[0].Used != int64(len(want))-1000 || s.Wasted != 1000 {
		t.Errorf("stats %+v: want 1000 bytes used from the primary, the rest from the second copy, its first 1000 wasted", s)
	}

	res, pw, head := streamHead(t, h, fakes[1], "style", want, 1000)
	other := fakes[0].next(t).answer(200, objHeader(`"v2"`), int64(len(want)))
	if _, err := other.Write(object(len(want) + 1)[1:]); err == nil {
		t.Error("the copy of ETag v2 was read")
	}
	write(t, pw, want[1000:])
	checkRest(t, res, head, want)
	if s := h.Stats(); s.SecondWon != 1 || s.Paths[1].Used != int64(len(want))+1000 {
		t.Errorf("stats %+v: the v2 copy won or was used", s)
	}
}

// A tail re-request completes the end: the application, behind the
// primary, gets the primary's bytes up to where the tail starts, then the
// tail's; the tail asks for the primary's validator (If-Range).
func TestHintedStreamTail(t *testing.T) {
	h, fakes := fakeHinted(t, "* -> path=cheap tail=16KB")
	h.mu.Lock()
	h.paths[1].rtt.Add(time.Millisecond) // exp answers at once; cheap has shown nothing
	h.mu.Unlock()
	want := object(10000)
	resp := startRoundTrip(t, h, http.Header{"Sec-Fetch-Dest": {"image"}})
	pw := fakes[0].next(t).answer(200, objHeader(`"v1"`), int64(len(want)))
	res := resp()
	time.Sleep(10 * time.Millisecond) // a rate: 2000 bytes in >= 10 ms
	write(t, pw, want[:2000])
	head := readN(t, res.Body, 500)
	answerRange(t, fakes[1].next(t), want, 2000)
	checkRest(t, res, head, want)
	s := h.Stats()
	if s.Tails != 1 || s.TailWon != 1 || s.Paths[0].Used != 2000 || s.Paths[1].Used != 8000 || s.Wasted != 0 {
		t.Errorf("stats %+v: want the head's 2000 bytes from cheap, the tail's 8000 from exp", s)
	}
}

// A hedge: the urgent response on exp stalls after 2000 bytes, its rest is
// asked for on cheap, and once the hedge is clearly ahead the stalled
// response is cancelled; the stream goes on from the hedge.
func TestHintedStreamHedge(t *testing.T) {
	h, fakes := fakeHinted(t, "urgent -> path=exp hedge\n* -> path=cheap")
	h.mu.Lock()
	h.paths[0].rtt.Add(time.Millisecond)
	h.paths[1].rtt.Add(50 * time.Millisecond) // not late before 50 ms
	h.mu.Unlock()
	want := object(10000)
	resp := startRoundTrip(t, h, http.Header{"Sec-Fetch-Dest": {"style"}})
	primary := fakes[1].next(t)
	pw := primary.answer(200, objHeader(`"v1"`), int64(len(want)))
	res := resp()
	time.Sleep(60 * time.Millisecond) // 2000 bytes in >= 60 ms (a rate: over an RTT), and then silent
	write(t, pw, want[:2000])
	head := readN(t, res.Body, 2000)
	x := fakes[0].next(t)
	if r := x.req.Header.Get("Range"); r != "bytes=2000-" {
		t.Fatalf("hedge asked with Range %q, want bytes=2000-", r)
	}
	hdr := objHeader(`"v1"`)
	hdr.Set("Content-Range", fmt.Sprintf("bytes 2000-%d/%d", len(want)-1, len(want)))
	hw := x.answer(206, hdr, int64(len(want)-2000))
	time.Sleep(5 * time.Millisecond)
	write(t, hw, want[2000:6000]) // 4000 bytes in 5 ms: far ahead
	for deadline := time.Now().Add(5 * time.Second); h.Stats().Cut == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stalled response was not cut")
		}
	}
	select {
	case <-primary.req.Context().Done(): // RST_STREAM
	case <-time.After(5 * time.Second):
		t.Fatal("the cut response's request was not cancelled")
	}
	write(t, hw, want[6000:])
	checkRest(t, res, head, want)
	if s := h.Stats(); s.Tails != 1 || s.TailWon != 1 || s.Cut != 1 || s.Paths[1].Used != 2000 || s.Paths[0].Used != 8000 || s.Wasted != 0 {
		t.Errorf("stats %+v: want one hedge, won, the stalled response cut, 2000 bytes from exp and 8000 from cheap", s)
	}
}

// copies=10%: the same stall's rest (8000 of the 10000 bytes placed) is
// over the budget, so no hedge is asked for.
func TestHintedStreamHedgeBudget(t *testing.T) {
	h, fakes := fakeHinted(t, "urgent -> path=exp hedge copies=10%\n* -> path=cheap")
	h.mu.Lock()
	h.paths[0].rtt.Add(time.Millisecond)
	h.paths[1].rtt.Add(50 * time.Millisecond)
	h.mu.Unlock()
	want := object(10000)
	resp := startRoundTrip(t, h, http.Header{"Sec-Fetch-Dest": {"style"}})
	pw := fakes[1].next(t).answer(200, objHeader(`"v1"`), int64(len(want)))
	res := resp()
	time.Sleep(60 * time.Millisecond)
	write(t, pw, want[:2000])
	head := readN(t, res.Body, 2000)
	select {
	case x := <-fakes[0].reqs:
		t.Fatalf("a copy over the budget was asked for: %v", x.req.Header)
	case <-time.After(200 * time.Millisecond):
	}
	write(t, pw, want[2000:])
	checkRest(t, res, head, want)
	if s := h.Stats(); s.Tails != 0 || s.Paths[0].Requests != 0 {
		t.Errorf("stats %+v: want no copy", s)
	}

	// A page of 100 KB: its budget holds the 8000 bytes from the start.
	h.mu.Lock()
	h.Expect = 100000
	h.mu.Unlock()
	resp = startRoundTrip(t, h, http.Header{"Sec-Fetch-Dest": {"style"}})
	pw = fakes[1].next(t).answer(200, objHeader(`"v1"`), int64(len(want)))
	res = resp()
	time.Sleep(60 * time.Millisecond)
	write(t, pw, want[:2000])
	head = readN(t, res.Body, 2000)
	answerRange(t, fakes[0].next(t), want, 2000)
	checkRest(t, res, head, want)
	if s := h.Stats(); s.Tails != 1 || s.TailWon != 1 {
		t.Errorf("stats %+v: want the hedge within the page's budget, won", s)
	}
}
