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
		hdr := []byte{byte(n >> 16), byte(n >> 8), byte(n), byte(http2.FrameData), byte(http2.FlagDataEndStream), 0, 0, 0, 1}
		nc.Write(append(hdr, body[:first]...))
		<-release
		if cut {
			return
		}
		nc.Write(body[first:])
		io.Copy(io.Discard, nc)
	}()
	return ln.Addr().String()
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
