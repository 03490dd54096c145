package h2

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func TestSettingsPayloadRoundTrip(t *testing.T) {
	in := []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1 << 20}, {ID: http2.SettingEnablePush, Val: 0}, {ID: 0xf0f0, Val: 7}}
	out, err := ParseSettingsPayload(AppendSettingsPayload(nil, in...))
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %v, %v", out, err)
	}
	if _, err := ParseSettingsPayload([]byte{0, 4, 0x80, 0, 0, 0}); err == nil {
		t.Fatal("initial window 2^31 accepted")
	}
	if _, err := ParseSettingsPayload([]byte{0, 4, 0}); err == nil {
		t.Fatal("truncated payload accepted")
	}
}

func FuzzSettingsPayload(f *testing.F) {
	f.Add(AppendSettingsPayload(nil, http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 14}, http2.Setting{ID: 0x9, Val: 1}))
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := ParseSettingsPayload(p)
		if err != nil {
			return
		}
		if again := AppendSettingsPayload(nil, s...); !bytes.Equal(again, p) {
			t.Fatalf("re-encoding %x gave %x", p, again)
		}
	})
}

// FuzzRequestFields checks the request-header validator on arbitrary field
// lists (seeded from the client's encoder) and that whatever the client
// encodes for a valid request passes it unchanged.
func FuzzRequestFields(f *testing.F) {
	f.Add("GET", "/a?b=c", "example.com", "accept", "*/*")
	f.Add("CONNECT", "", "example.com:443", "te", "trailers")
	f.Add("POST", "/", "h", "Connection", "close")
	f.Fuzz(func(t *testing.T, method, path, host, name, value string) {
		fields := []hpack.HeaderField{{Name: ":method", Value: method}, {Name: ":path", Value: path}, {Name: ":authority", Value: host}, {Name: name, Value: value}}
		parseRequestFields(fields) // must not panic

		req, err := http.NewRequest(method, "http://"+host+path, nil)
		if err != nil || method == http.MethodConnect || req.URL.Host == "" {
			return
		}
		req.Header.Set(name, value)
		enc, err := requestFields(req, false)
		if err != nil {
			return
		}
		rh, err := parseRequestFields(enc)
		if err != nil {
			t.Fatalf("client encoded %v, server rejected it: %v", enc, err)
		}
		if rh.method != req.Method || rh.path != req.URL.RequestURI() || rh.authority != req.Host {
			t.Fatalf("round trip changed the request: %+v from %v", rh, enc)
		}
	})
}

// seedFrames renders frames with x/net's Framer for the engine fuzz corpus.
func seedFrames(write func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer)) []byte {
	var out, hb bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	write(fr, hpack.NewEncoder(&hb), &hb)
	return out.Bytes()
}

func requestBlock(enc *hpack.Encoder, hb *bytes.Buffer, method, path string, extra ...hpack.HeaderField) []byte {
	hb.Reset()
	for _, f := range append([]hpack.HeaderField{{Name: ":method", Value: method}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: path}}, extra...) {
		enc.WriteField(f)
	}
	return append([]byte(nil), hb.Bytes()...)
}

// FuzzServerFrames feeds arbitrary bytes after a valid preface and SETTINGS
// to a server: it must neither panic nor hang.
func FuzzServerFrames(f *testing.F) {
	f.Add(seedFrames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: requestBlock(enc, hb, "GET", "/"), EndStream: true, EndHeaders: true})
	}))
	f.Add(seedFrames(func(fr *http2.Framer, enc *hpack.Encoder, hb *bytes.Buffer) {
		blk := requestBlock(enc, hb, "POST", "/echo", hpack.HeaderField{Name: "content-length", Value: "3"})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:3]})
		fr.WriteContinuation(1, true, blk[3:])
		fr.WriteData(1, false, []byte("abc"))
		hb.Reset()
		enc.WriteField(hpack.HeaderField{Name: "x-trailer", Value: "1"})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		fr.WritePing(false, [8]byte{1})
		fr.WriteWindowUpdate(0, 1000)
		fr.WritePriorityUpdate(3, "u=0, i")
		fr.WriteRSTStream(1, http2.ErrCodeCancel)
		fr.WriteRawFrame(0xf0, 0, 0, []byte("ext"))
		fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	}))
	f.Fuzz(func(t *testing.T, frames []byte) {
		cli, srv := net.Pipe()
		s := &Server{Handler: testHandler()}
		done := make(chan struct{})
		go func() {
			s.ServeConn(context.Background(), srv, nil)
			close(done)
		}()
		go io.Copy(io.Discard, cli)
		var pre bytes.Buffer
		pre.WriteString(http2.ClientPreface)
		http2.NewFramer(&pre, nil).WriteSettings()
		cli.SetWriteDeadline(time.Now().Add(2 * time.Second))
		cli.Write(pre.Bytes())
		cli.Write(frames)
		cli.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("server did not finish after the client closed; input %x", truncate(frames))
		}
	})
}

func truncate(b []byte) []byte {
	if len(b) > 256 {
		return b[:256]
	}
	return b
}

// The engine fuzz corpus covers the Upgrade path too.
func TestUpgrade(t *testing.T) {
	cli, srv := net.Pipe()
	defer cli.Close()
	req, _ := http.NewRequest("GET", "http://localhost/gen/100", nil)
	s := &Server{Handler: testHandler()}
	go s.ServeConn(context.Background(), srv, &Upgrade{Request: req, Settings: AppendSettingsPayload(nil, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})})
	rc := &rawClient{t: t, nc: cli, fr: http2.NewFramer(cli, cli)}
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	go func() {
		cli.Write([]byte(http2.ClientPreface))
		rc.fr.WriteSettings()
	}()
	var body []byte
	f := rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
			body = append(body, d.Data()...)
			return d.StreamEnded()
		}
		return false
	})
	if f == nil || !strings.HasPrefix(string(body), string(genPattern[:100])) || len(body) != 100 {
		t.Fatalf("upgrade response on stream 1: %d bytes", len(body))
	}
}

// The engine's own frame header coding agrees with x/net's Framer both
// ways, and a header parses back to the bytes it came from, the stream
// identifier's reserved bit aside.
func TestFrameHeaderRoundTrip(t *testing.T) {
	for _, h := range []frameHeader{{0, http2.FrameData, 0, 1}, {16384, http2.FrameHeaders, http2.FlagHeadersEndHeaders | http2.FlagHeadersEndStream, 1<<31 - 1}, {1<<24 - 1, 0xfe, 0xff, 0}} {
		b := h.encode()
		if got := parseFrameHeader(b[:]); got != h {
			t.Fatalf("%+v encoded %x parses as %+v", h, b, got)
		}
		xh, err := http2.ReadFrameHeader(bytes.NewReader(b[:]))
		if err != nil || xh.Length != h.length || xh.Type != h.typ || xh.Flags != h.flags || xh.StreamID != h.id {
			t.Fatalf("%+v: x/net reads %x as %+v (%v)", h, b, xh, err)
		}
	}
}

func FuzzFrameHeader(f *testing.F) {
	f.Add([]byte{0, 0, 100, 0, 1, 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < frameHeaderLen {
			return
		}
		h := parseFrameHeader(b)
		want := [frameHeaderLen]byte(b[:frameHeaderLen])
		want[5] &= 0x7f // the reserved bit
		if got := h.encode(); got != want {
			t.Fatalf("%x parses as %+v, encodes as %x", b[:frameHeaderLen], h, got)
		}
		xh, err := http2.ReadFrameHeader(bytes.NewReader(b))
		if err != nil || xh.Length != h.length || xh.Type != h.typ || xh.Flags != h.flags || xh.StreamID != h.id {
			t.Fatalf("%x: ours %+v, x/net's %+v (%v)", b[:frameHeaderLen], h, xh, err)
		}
	})
}
