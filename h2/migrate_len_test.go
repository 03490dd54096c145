package h2

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawServer is the server end of a client connection, driven frame by
// frame; what the client sends is read and dropped.
type rawServer struct {
	fr *http2.Framer
	// requests gets the stream of each request's HEADERS as it is read: a
	// response sent before it would be HEADERS on an idle stream.
	requests chan uint32
}

func newRawServer(t *testing.T) (*ClientConn, *rawServer) {
	t.Helper()
	cn, sn := net.Pipe()
	t.Cleanup(func() { cn.Close(); sn.Close() })
	rs := &rawServer{fr: http2.NewFramer(sn, nil), requests: make(chan uint32, 16)}
	go func() {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(sn, preface); err != nil {
			return
		}
		fr := http2.NewFramer(io.Discard, sn)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if h, ok := f.(*http2.HeadersFrame); ok {
				rs.requests <- h.StreamID
			}
		}
	}()
	ready := make(chan *ClientConn, 1)
	go func() {
		cc, err := (&Transport{AllowHTTP: true}).NewClientConn(cn)
		if err != nil {
			t.Error(err)
		}
		ready <- cc
	}()
	if err := rs.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	cc := <-ready
	if cc == nil {
		t.FailNow()
	}
	return cc, rs
}

// TestContinuationKeepsContentLength: a response declares 100 bytes, 40
// come on its own stream, the rest on a continuation (SMig). A
// continuation that ends after 30 must fail the read after 70 bytes,
// whether its END_STREAM came before the two were linked or after; one
// that brings 60 ends the body cleanly.
func TestContinuationKeepsContentLength(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 10)
	for _, c := range []struct {
		rest        int  // bytes the continuation brings
		endFirst    bool // its END_STREAM arrives before ContinueOn
		wantErr     bool
		wantLenRead int
	}{
		{30, true, true, 70}, {30, false, true, 70}, {60, true, false, 100}, {60, false, false, 100}, {70, false, true, 100},
	} {
		t.Run(fmt.Sprintf("rest=%d endFirst=%v", c.rest, c.endFirst), func(t *testing.T) {
			a, sa := newRawServer(t)
			b, sb := newRawServer(t)
			go func() {
				<-sa.requests
				var hb bytes.Buffer
				enc := hpack.NewEncoder(&hb)
				enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
				enc.WriteField(hpack.HeaderField{Name: "content-length", Value: "100"})
				sa.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
				sa.fr.WriteData(1, false, body[:40])
			}()
			req, _ := http.NewRequest("GET", "http://x/", nil)
			res, err := a.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 40)
			if _, err := io.ReadFull(res.Body, got); err != nil {
				t.Fatal(err)
			}
			next, err := b.Conn().AcceptMigratedStream(2)
			if err != nil {
				t.Fatal(err)
			}
			// Past the declared 100 bytes the continuation repeats the body.
			rest := append(append([]byte(nil), body[40:]...), body...)[:c.rest]
			sendRest := func() { sb.fr.WriteData(2, true, rest) }
			if c.endFirst {
				sendRest()
				for next.Received() < int64(min(c.rest, 60)) {
					time.Sleep(time.Millisecond)
				}
			}
			if err := StreamOf(res).ContinueOn(next); err != nil {
				t.Fatal(err)
			}
			if !c.endFirst {
				go sendRest()
			}
			more, err := io.ReadAll(res.Body)
			got = append(got, more...)
			if c.wantErr != (err != nil) || len(got) > c.wantLenRead || !bytes.Equal(got, body[:min(len(got), 100)]) {
				t.Fatalf("read %d bytes, then %v; want %d bytes and error=%v", len(got), err, c.wantLenRead, c.wantErr)
			}
			if err != nil && errors.Is(err, io.EOF) {
				t.Fatalf("error %v is an EOF", err)
			}
			t.Logf("%d bytes, %v", len(got), err)
		})
	}
}
