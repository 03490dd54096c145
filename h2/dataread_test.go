package h2

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// splitFrameServer answers one request with a body of size bytes in one
// DATA frame (END_STREAM) whose first `first` bytes it writes with the
// frame's header, the rest once release is closed; then, unless cut, it
// reads until the client goes; cut closes the connection instead of
// sending the rest.
func splitFrameServer(t *testing.T, body []byte, first int, release <-chan struct{}, cut bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, fr, err := acceptRequest(ln)
		if err != nil {
			return
		}
		defer nc.Close()
		fr.WriteSettings()
		fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1,
			rawBlock(status200, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(body))}))
		n := len(body)
		hdr := frameHeader{uint32(n), http2.FrameData, http2.FlagDataEndStream, 1}.encode()
		nc.Write(append(hdr[:], body[:first]...))
		<-release
		if cut {
			return
		}
		nc.Write(body[first:])
		io.Copy(io.Discard, nc)
	}()
	return ln.Addr().String()
}

// dialH2C opens a client connection (h2c, prior knowledge) to addr.
func dialH2C(t *testing.T, addr string) *ClientConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := (&Transport{AllowHTTP: true}).NewClientConn(nc)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// getSplit GETs splitFrameServer's response over tr; the test closes it.
func getSplit(t *testing.T, tr *Transport, addr string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
	res, err := tr.RoundTrip(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close(); cancel(); tr.CloseIdleConnections() })
	return res
}

// A DATA frame's first bytes reach the response body before its last ones
// arrive: a 16 KB frame can span the server's first congestion window, and
// the framer held all of it a round trip for its end (through shunt proxy,
// an HTML document's head reached the browser that much later). Trace
// still gets the whole frame once.
func TestClientBodyBeforeFrameEnds(t *testing.T) {
	const size, first = 12000, 1000
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i * 7)
	}
	release := make(chan struct{})
	addr := splitFrameServer(t, body, first, release, false)
	var mu sync.Mutex
	var traced []int
	tr := &Transport{AllowHTTP: true, Config: Config{Trace: func(dir Direction, f http2.Frame) {
		if df, ok := f.(*http2.DataFrame); ok && dir == Recv {
			mu.Lock()
			defer mu.Unlock()
			if !bytes.Equal(df.Data(), body) {
				t.Errorf("traced DATA of %d bytes, not the body", len(df.Data()))
			}
			traced = append(traced, int(df.Length))
		}
	}}}
	res := getSplit(t, tr, addr)
	got := make([]byte, size)
	timer := time.AfterFunc(3*time.Second, func() { close(release) })
	if _, err := io.ReadFull(res.Body, got[:first]); err != nil {
		t.Fatal(err)
	}
	if !timer.Stop() {
		t.Fatalf("the frame's first %d bytes came through only after its last ones", first)
	}
	close(release)
	rest, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(append(got[:first], rest...), body) {
		t.Fatalf("body: %v, %d bytes, equal %v", err, first+len(rest), bytes.Equal(append(got[:first], rest...), body))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(traced) != 1 || traced[0] != size {
		t.Errorf("traced DATA frames %v, want one of %d bytes", traced, size)
	}
}

// A connection lost in the middle of a frame read in pieces fails the body
// after the bytes that came: a short body is never taken for a whole one.
func TestClientBodyCutMidFrame(t *testing.T) {
	const size, first = 12000, 1000
	body := bytes.Repeat([]byte("x"), size)
	release := make(chan struct{})
	close(release)
	addr := splitFrameServer(t, body, first, release, true)
	tr := &Transport{AllowHTTP: true}
	res := getSplit(t, tr, addr)
	got, err := io.ReadAll(res.Body)
	if err == nil || len(got) > first {
		t.Fatalf("read %d bytes, error %v: want at most %d and an error", len(got), err, first)
	}
}

// DataReceived counts a frame read in pieces as it is read: a connection
// cut in the middle of a frame counts the bytes of it that reached the
// body (a count from Trace, which sees whole frames only, said 0: mph2's
// received_<path> came out below what the path delivered), and whole
// frames count whole.
func TestDataReceivedCountsPieces(t *testing.T) {
	const size, first = 12000, 1000
	body := bytes.Repeat([]byte("x"), size)
	for _, cut := range []bool{true, false} {
		release := make(chan struct{})
		close(release)
		addr := splitFrameServer(t, body, first, release, cut)
		cc := dialH2C(t, addr)
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		res, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if n := cc.Conn().DataReceived(); n != int64(len(got)) || cut && n != first || !cut && n != size {
			t.Errorf("cut %v: DataReceived %d after a body of %d bytes; want %d", cut, n, len(got), map[bool]int{true: first, false: size}[cut])
		}
		cc.Close()
	}
}

// LastFrameRead is zero until the server's first frame, then moves with
// every whole frame: a DATA frame read in pieces counts once its last piece
// is in (mph2's liveness took it from Trace, which costs a second copy and
// parse of every DATA frame).
func TestLastFrameRead(t *testing.T) {
	const size, first = 12000, 1000
	body := bytes.Repeat([]byte("x"), size)
	release := make(chan struct{})
	addr := splitFrameServer(t, body, first, release, false)
	cc := dialH2C(t, addr)
	defer cc.Close()
	if at := cc.Conn().LastFrameRead(); !at.IsZero() {
		t.Fatalf("LastFrameRead %v before the server wrote a frame, want zero", at)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	res, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	headers := cc.Conn().LastFrameRead()
	if headers.IsZero() || time.Since(headers) < 0 {
		t.Fatalf("LastFrameRead %v after the response's HEADERS", headers)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := io.ReadFull(res.Body, make([]byte, first)); err != nil {
		t.Fatal(err)
	}
	if at := cc.Conn().LastFrameRead(); !at.Equal(headers) {
		t.Errorf("LastFrameRead moved to %v with a DATA frame's first piece, want %v (the HEADERS)", at, headers)
	}
	close(release)
	if _, err := io.ReadAll(res.Body); err != nil {
		t.Fatal(err)
	}
	if at := cc.Conn().LastFrameRead(); at.Sub(headers) < 20*time.Millisecond {
		t.Errorf("LastFrameRead %v after the DATA frame's end, want 20 ms or more after the HEADERS' %v", at, headers)
	}
}

// FuzzClientFrames writes a response to a client in chunks of a fuzzed
// size, so that DATA frames (of a fuzzed size, padded or not) arrive in
// pieces: the body must come out whole and in order. Arbitrary frames
// after the response's HEADERS must neither panic nor hang the client.
func FuzzClientFrames(f *testing.F) {
	f.Add([]byte("hello, world"), uint16(5), uint8(3), uint8(0), []byte(nil))
	f.Add(bytes.Repeat([]byte{7}, 40000), uint16(16384), uint8(255), uint8(4), []byte(nil))
	f.Add([]byte("abc"), uint16(1), uint8(1), uint8(1), seedFrames(func(fr *http2.Framer, _ *hpack.Encoder, _ *bytes.Buffer) {
		fr.WriteData(1, false, []byte("more"))
		fr.WriteRSTStream(1, http2.ErrCodeCancel)
		fr.WriteWindowUpdate(0, 1000)
		fr.WriteGoAway(1, http2.ErrCodeNo, nil)
	}))
	f.Fuzz(func(t *testing.T, body []byte, frameSize uint16, chunk uint8, pad uint8, tail []byte) {
		if len(body) > 60000 { // within the stream's first window
			body = body[:60000]
		}
		size := max(1, min(int(frameSize), 16384-1-int(pad)))
		var out bytes.Buffer
		fr := http2.NewFramer(&out, nil)
		fr.WriteSettings()
		fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, rawBlock(status200))
		for off := 0; ; off += size {
			p := body[min(off, len(body)):min(off+size, len(body))]
			end := off+size >= len(body)
			if pad > 0 {
				fr.WriteDataPadded(1, end && len(tail) == 0, p, make([]byte, pad-1))
			} else {
				fr.WriteData(1, end && len(tail) == 0, p)
			}
			if end {
				break
			}
		}
		out.Write(tail)
		// Without a tail the server end stays open until the body is read:
		// a client whose write fails (a WINDOW_UPDATE to a closed pipe) may
		// end the connection before it has read what it has buffered. A
		// tail's end is the end of the input.
		cli, srv := net.Pipe()
		defer srv.Close()
		go func() {
			if len(tail) > 0 {
				defer srv.Close()
			}
			if !awaitRequest(srv) {
				return
			}
			b := out.Bytes()
			for n := max(1, int(chunk)); len(b) > 0; b = b[min(n, len(b)):] {
				if _, err := srv.Write(b[:min(n, len(b))]); err != nil {
					return
				}
			}
		}()
		ctx, res, err := pipeGet(t, cli, 5*time.Second)
		if err != nil {
			if len(tail) == 0 || ctx.Err() != nil {
				t.Fatalf("round trip: %v", err)
			}
			return
		}
		got, err := io.ReadAll(res.Body)
		if ctx.Err() != nil {
			t.Fatalf("body not done in 5 s (%d of %d bytes, %v); input tail %x", len(got), len(body), err, truncate(tail))
		}
		if len(tail) == 0 && (err != nil || !bytes.Equal(got, body)) {
			t.Fatalf("body %d bytes (%v), want the %d sent in frames of %d, chunks of %d, pad %d", len(got), err, len(body), size, chunk, pad)
		}
	})
}

// DATA from a server before its SETTINGS is a connection error (RFC 9113
// 3.4), and DATA on a stream before the response's HEADERS a stream error
// (8.1), on the piecewise path as on the framer's: neither reaches a body.
func TestClientDataTooEarly(t *testing.T) {
	for _, settings := range []bool{false, true} {
		cli, srv := net.Pipe()
		defer srv.Close()
		go func() {
			if !awaitRequest(srv) {
				return
			}
			if settings {
				http2.NewFramer(srv, nil).WriteSettings()
			}
			// The frame's header and first byte, the rest later: it is
			// not buffered whole when the client looks at it.
			hdr := frameHeader{100, http2.FrameData, 0, 1}.encode()
			srv.Write(append(hdr[:], 'x'))
			time.Sleep(50 * time.Millisecond)
			srv.Write(make([]byte, 99))
		}()
		ctx, _, err := pipeGet(t, cli, 3*time.Second)
		if err == nil || ctx.Err() != nil {
			t.Fatalf("SETTINGS first %v: round trip: %v (context %v), want an error at once", settings, err, ctx.Err())
		}
	}
}

// awaitRequest reads the client's preface and frames up to its request's
// HEADERS, then discards what else the client sends; a fake server
// answers only then, as HEADERS on a stream the client has not opened are
// a connection error.
func awaitRequest(srv net.Conn) bool {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(srv, preface); err != nil {
		return false
	}
	fr := http2.NewFramer(nil, srv)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return false
		}
		if _, ok := f.(*http2.HeadersFrame); ok {
			go io.Copy(io.Discard, srv)
			return true
		}
	}
}

// pipeGet sends a GET over a client connection on nc and returns the
// round trip's context (its deadline d), response and error.
func pipeGet(t *testing.T, nc net.Conn, d time.Duration) (context.Context, *http.Response, error) {
	t.Helper()
	cc, err := (&Transport{}).NewClientConn(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://x/", nil)
	res, err := cc.RoundTrip(req)
	return ctx, res, err
}

// A DATA frame refused as a stream error still counts against the
// connection's window, so its bytes must be handed back: a body over its
// content-length kept them, and a peer that kept doing so would have
// stalled every other stream of the connection. Whole and piecewise.
func TestRefusedDataReturnsConnectionCredit(t *testing.T) {
	for _, split := range []bool{false, true} {
		cli, srv := net.Pipe()
		defer srv.Close()
		go func() {
			if !awaitRequest(srv) {
				return
			}
			fr := http2.NewFramer(srv, nil)
			fr.WriteSettings()
			fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1,
				rawBlock(status200, hpack.HeaderField{Name: "content-length", Value: "10"}))
			hdr := frameHeader{20, http2.FrameData, 0, 1}.encode()
			if split {
				srv.Write(append(hdr[:], 'x'))
				time.Sleep(50 * time.Millisecond)
				srv.Write(make([]byte, 19))
			} else {
				srv.Write(append(hdr[:], make([]byte, 20)...))
			}
		}()
		cc, err := (&Transport{}).NewClientConn(cli)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://x/", nil)
		res, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("split %v: round trip: %v", split, err)
		}
		if _, err := io.ReadAll(res.Body); err == nil {
			t.Fatalf("split %v: a body over its content-length read without an error", split)
		}
		c := cc.Conn()
		c.mu.Lock()
		held := int64(c.cfg.ConnWindowSize) - c.recvWin.Avail() - c.recvWin.Pending()
		c.mu.Unlock()
		if held != 0 {
			t.Errorf("split %v: the connection window holds %d bytes of a refused frame, want 0", split, held)
		}
	}
}
