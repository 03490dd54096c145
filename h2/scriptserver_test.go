package h2

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// scriptServer answers shunt's client frame by frame with x/net's Framer, to
// drive the client into corners a well-behaved server never reaches.
type scriptServer struct {
	t      *testing.T
	fr     *http2.Framer
	frames chan http2.Frame // what the client sent after its request, copied
}

// serveScript runs one request of shunt's client against script, which gets
// the framer after the client's request was read and the server's SETTINGS
// sent. It returns the response's body or error and the server's view.
func serveScript(t *testing.T, script func(rs *scriptServer)) (body []byte, err error, rs *scriptServer) {
	t.Helper()
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	defer ln.Close()
	rs = &scriptServer{t: t, frames: make(chan http2.Frame, 100)}
	go func() {
		nc, fr, err := acceptRequest(ln)
		if err != nil {
			return
		}
		defer nc.Close()
		rs.fr = fr
		rs.fr.WriteSettings()
		script(rs)
		for {
			f, err := rs.fr.ReadFrame()
			if err != nil {
				close(rs.frames)
				return
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				rs.frames <- &http2.GoAwayFrame{FrameHeader: f.FrameHeader, LastStreamID: f.LastStreamID, ErrCode: f.ErrCode}
			case *http2.RSTStreamFrame:
				rs.frames <- &http2.RSTStreamFrame{FrameHeader: f.FrameHeader, ErrCode: f.ErrCode}
			}
		}
	}()
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+ln.Addr().String()+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, err, rs
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return body, err, rs
}

// acceptPreface accepts a connection and reads the client's preface.
func acceptPreface(ln net.Listener) (net.Conn, *http2.Framer, error) {
	nc, err := ln.Accept()
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(nc)
	if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, http2.NewFramer(nc, br), nil
}

// acceptRequest accepts a connection and reads the client's preface and
// its frames up to the first request's HEADERS.
func acceptRequest(ln net.Listener) (net.Conn, *http2.Framer, error) {
	nc, fr, err := acceptPreface(ln)
	if err != nil {
		return nil, nil, err
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		if _, ok := f.(*http2.HeadersFrame); ok {
			return nc, fr, nil
		}
	}
}

// want waits for the client's GOAWAY or RST_STREAM with code.
func (rs *scriptServer) want(t http2.FrameType, code http2.ErrCode) {
	rs.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-rs.frames:
			if !ok {
				rs.t.Fatalf("the client closed without %v %v", t, code)
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				if t == http2.FrameGoAway && f.ErrCode == code {
					return
				}
				rs.t.Fatalf("the client sent GOAWAY %v, want %v %v", f.ErrCode, t, code)
			case *http2.RSTStreamFrame:
				if t == http2.FrameRSTStream && f.ErrCode == code {
					return
				}
				rs.t.Fatalf("the client sent RST_STREAM %v, want %v %v", f.ErrCode, t, code)
			}
		case <-timeout:
			rs.t.Fatalf("no %v %v from the client within 5 s", t, code)
		}
	}
}

func rawBlock(fields ...hpack.HeaderField) []byte {
	var b []byte
	for _, f := range fields {
		b = append(b, 0)
		b = append(b, byte(len(f.Name)))
		b = append(b, f.Name...)
		b = append(b, byte(len(f.Value)))
		b = append(b, f.Value...)
	}
	return b
}

var status200 = hpack.HeaderField{Name: ":status", Value: "200"}

// A frame too short for its flags (PADDED without the pad length) is a
// FRAME_SIZE_ERROR (RFC 9113 4.2). The client used to stop reading and
// wait for the server to close, so the request hung.
func TestClientFrameTooShortForFlags(t *testing.T) {
	_, err, rs := serveScript(t, func(rs *scriptServer) {
		rs.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, rawBlock(status200))
		rs.fr.WriteRawFrame(http2.FrameData, http2.FlagDataPadded, 1, nil)
	})
	if err == nil {
		t.Fatal("the body read succeeded")
	}
	rs.want(http2.FrameGoAway, http2.ErrCodeFrameSize)
}

// A response's HEADERS whose priority names its own stream is a stream
// error (RFC 9113 5.3.1); only the server side checked it.
func TestClientSelfDependentResponse(t *testing.T) {
	_, err, rs := serveScript(t, func(rs *scriptServer) {
		rs.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rawBlock(status200), EndHeaders: true, EndStream: true,
			Priority: http2.PriorityParam{StreamDep: 1, Weight: 15}})
	})
	if err == nil {
		t.Fatal("the response was accepted")
	}
	rs.want(http2.FrameRSTStream, http2.ErrCodeProtocol)
}

// A field value starting or ending with SP or HTAB makes the message
// malformed (RFC 9113 8.2.1); it was accepted.
func TestClientFieldValueWhitespace(t *testing.T) {
	for _, v := range []string{" lead", "trail\t"} {
		_, err, rs := serveScript(t, func(rs *scriptServer) {
			rs.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, rawBlock(status200, hpack.HeaderField{Name: "x-v", Value: v}))
		})
		if err == nil {
			t.Fatalf("value %q was accepted", v)
		}
		rs.want(http2.FrameRSTStream, http2.ErrCodeProtocol)
	}
	// inside a value they are fine
	body, err, _ := serveScript(t, func(rs *scriptServer) {
		rs.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, rawBlock(status200, hpack.HeaderField{Name: "x-v", Value: "a b\tc"}))
	})
	if err != nil || len(body) != 0 {
		t.Fatalf("inner whitespace: %q, %v", body, err)
	}
}

// A request the server refused (REFUSED_STREAM) is retryable: the error
// says so with ErrNotProcessed.
func TestClientRefusedIsNotProcessed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, fr, err := acceptPreface(ln)
		if err != nil {
			return
		}
		defer nc.Close()
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if _, ok := f.(*http2.HeadersFrame); ok {
				fr.WriteSettings()
				fr.WriteRSTStream(f.Header().StreamID, http2.ErrCodeRefusedStream)
			}
		}
	}()
	cc := dialH2C(t, ln.Addr().String())
	defer cc.Close()
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
	if _, err := cc.RoundTrip(req); !errors.Is(err, ErrNotProcessed) {
		t.Fatalf("err = %v, want ErrNotProcessed", err)
	}
}

// A dynamic table size update after a field is a COMPRESSION_ERROR (RFC
// 7541 4.2) even while the dynamic table is empty, where x/net's decoder
// accepts it.
func TestClientLateSizeUpdate(t *testing.T) {
	_, err, rs := serveScript(t, func(rs *scriptServer) {
		rs.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, append(rawBlock(status200), 0x20))
	})
	if err == nil {
		t.Fatal("the response was accepted")
	}
	rs.want(http2.FrameGoAway, http2.ErrCodeCompression)
}

// HEADERS whose padding is longer than the frame is a connection error
// (RFC 9113 6.2); x/net's framer calls it a stream error, and the client
// reset the stream. A zero WINDOW_UPDATE on a stream stays a stream error.
func TestClientHeadersPaddingTooLong(t *testing.T) {
	_, err, rs := serveScript(t, func(rs *scriptServer) {
		rs.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersPadded, 1, append([]byte{250}, rawBlock(status200)...))
	})
	if err == nil {
		t.Fatal("the response was accepted")
	}
	rs.want(http2.FrameGoAway, http2.ErrCodeProtocol)
	_, err, rs = serveScript(t, func(rs *scriptServer) {
		rs.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, rawBlock(status200))
		rs.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 1, []byte{0, 0, 0, 0})
	})
	if err == nil {
		t.Fatal("the response survived a zero WINDOW_UPDATE")
	}
	rs.want(http2.FrameRSTStream, http2.ErrCodeProtocol)
}
