package h2

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// stillServes checks that a fresh, well-behaved client gets a response.
func stillServes(t *testing.T, ts *testServer) {
	t.Helper()
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	res, body := get(t, tr, ts.url("/"))
	if res.StatusCode != 200 || !bytes.Equal(body, helloBody) {
		t.Fatalf("after the attack: status %d body %q", res.StatusCode, body)
	}
}

// slowHandler answers "/" at once and holds other paths until the request
// is cancelled, like a handler doing real work.
func slowHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
		w.Write(helloBody)
	})
}

func TestAbuseRapidReset(t *testing.T) {
	ts := startServer(t, slowHandler(), Config{}, false)
	rc := dialRaw(t, ts.addr)
	done := make(chan http2.Frame, 1)
	go func() { done <- rc.readUntil(10*time.Second, isGoAway(http2.ErrCodeEnhanceYourCalm)) }()
	rc.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	for id := uint32(1); id < 20000; id += 2 {
		if rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.block("/slow"), EndStream: true, EndHeaders: true}) != nil ||
			rc.fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
			break // the server hung up
		}
	}
	if <-done == nil {
		t.Fatal("no GOAWAY ENHANCE_YOUR_CALM after 10000 rapid resets")
	}
	stillServes(t, ts)
}

func TestAbuseContinuationFlood(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false)
	for _, frag := range []int{0, 16000} { // empty frames, then big ones
		rc := dialRaw(t, ts.addr)
		done := make(chan http2.Frame, 1)
		go func() { done <- rc.readUntil(10*time.Second, isGoAway(http2.ErrCodeEnhanceYourCalm)) }()
		rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block("/"), EndStream: true})
		rc.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		// Literal fields without indexing, each a fresh name: undecodable
		// into anything small.
		var chunk []byte
		if frag > 0 {
			var b bytes.Buffer
			e := hpack.NewEncoder(&b)
			for b.Len() < frag-1100 {
				e.WriteField(hpack.HeaderField{Name: "x-flood", Value: strings.Repeat("a", 1000), Sensitive: true})
			}
			chunk = b.Bytes()
		}
		for i := 0; i < 100000; i++ {
			if rc.fr.WriteContinuation(1, false, chunk) != nil {
				break
			}
		}
		if <-done == nil {
			t.Fatalf("fragment %d: no GOAWAY ENHANCE_YOUR_CALM for a CONTINUATION flood", frag)
		}
	}
	stillServes(t, ts)
}

func TestAbuseControlFloods(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false, func(ts *testServer) { ts.sndbuf = 4096 })
	for _, kind := range []string{"SETTINGS", "PING"} {
		rc := dialRaw(t, ts.addr)
		// Write without reading: the server's ACKs pile up until it gives up.
		rc.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for i := 0; i < 1000000; i++ {
			var err error
			if kind == "PING" {
				err = rc.fr.WritePing(false, [8]byte{byte(i)})
			} else {
				err = rc.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(i)})
			}
			if err != nil {
				break
			}
		}
		// The server either gets its GOAWAY out or, with its socket full of
		// ACKs the attacker never read, just closes; it must not wait forever.
		if f, err := rc.readFrameUntil(10*time.Second, isGoAway(http2.ErrCodeEnhanceYourCalm)); f == nil && (err == nil || isTimeout(err)) {
			t.Fatalf("%s flood: connection still open after 10 s", kind)
		}
	}
	stillServes(t, ts)
}

func TestAbuseHPACKBomb(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false)
	rc := dialRaw(t, ts.addr)
	// One 4 KB field enters the dynamic table; each reference to it is one
	// byte on the wire but 4 KB decoded.
	rc.hbuf.Reset()
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "localhost"}, {Name: ":path", Value: "/"}} {
		rc.enc.WriteField(f)
	}
	rc.enc.WriteField(hpack.HeaderField{Name: "x-bomb", Value: strings.Repeat("b", 4000)})
	block := append([]byte(nil), rc.hbuf.Bytes()...)
	for i := 0; i < 20000; i++ {
		block = append(block, 0x80|62) // indexed: dynamic table entry 1
	}
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:16000], EndHeaders: false, EndStream: true})
	rc.fr.WriteContinuation(1, true, block[16000:])
	if rc.readUntil(5*time.Second, isStatus(1, "431")) == nil {
		t.Fatal("no 431 for a header list decoding to 40 MB")
	}
	// The connection's HPACK state survived: the next request works.
	rc.request(3, "/", true)
	if rc.readUntil(5*time.Second, isStatus(3, "200")) == nil {
		t.Fatal("connection unusable after the HPACK bomb")
	}
	stillServes(t, ts)
}

func TestAbuseTooManyStreams(t *testing.T) {
	ts := startServer(t, slowHandler(), Config{MaxConcurrentStreams: 10}, false)
	rc := dialRaw(t, ts.addr)
	for id := uint32(1); id <= 21; id += 2 {
		rc.request(id, "/slow", false) // open: the body never comes
	}
	if rc.readUntil(5*time.Second, isRST(21, http2.ErrCodeRefusedStream)) == nil {
		t.Fatal("11th concurrent stream not refused with REFUSED_STREAM")
	}
	stillServes(t, ts)
}

func TestServerPush(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			if err := w.(http.Pusher).Push("/style.css", nil); err != nil {
				w.Header().Set("X-Push-Error", err.Error())
			}
		}
		w.Write([]byte(r.URL.Path))
	})
	ts := startServer(t, h, Config{}, false)

	rc := dialRaw(t, ts.addr)
	rc.request(1, "/", true)
	pp := rc.readUntil(5*time.Second, func(f http2.Frame) bool { _, ok := f.(*http2.PushPromiseFrame); return ok })
	if pp == nil {
		t.Fatal("no PUSH_PROMISE")
	}
	promised := pp.(*http2.PushPromiseFrame).PromiseID
	if promised%2 != 0 || pp.Header().StreamID != 1 {
		t.Fatalf("PUSH_PROMISE on stream %d promising %d", pp.Header().StreamID, promised)
	}
	data := rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		d, ok := f.(*http2.DataFrame)
		return ok && d.StreamID == promised && string(d.Data()) == "/style.css"
	})
	if data == nil {
		t.Fatal("pushed response body not received")
	}

	// A client that disables push gets none, and the handler learns why.
	rc = dialRaw(t, ts.addr, http2.Setting{ID: http2.SettingEnablePush, Val: 0})
	rc.request(1, "/", true)
	f := rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.PushPromiseFrame:
			return true
		case *http2.MetaHeadersFrame:
			return f.StreamID == 1
		}
		return false
	})
	h1, ok := f.(*http2.MetaHeadersFrame)
	if !ok {
		t.Fatalf("got %v with push disabled", f)
	}
	found := false
	for _, hf := range h1.Fields {
		found = found || hf.Name == "x-push-error" && strings.Contains(hf.Value, "not supported")
	}
	if !found {
		t.Fatalf("response headers %v lack the push error", h1.Fields)
	}
}

// TestOversizedFieldGets431: one field larger than MaxHeaderListSize (64
// KiB) is a request the server refuses with 431, as RFC 9113 10.5.1 allows,
// not a COMPRESSION_ERROR that ends the connection: its HPACK state stays in
// step and the next request works.
func TestOversizedFieldGets431(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false)
	rc := dialRaw(t, ts.addr)
	blk := rc.block("/", hpack.HeaderField{Name: "x-big", Value: strings.Repeat("v", 70000)})
	rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:16000], EndStream: true})
	for off := 16000; off < len(blk); off += 16000 {
		end := min(off+16000, len(blk))
		rc.fr.WriteContinuation(1, end == len(blk), blk[off:end])
	}
	if rc.readUntil(5*time.Second, isStatus(1, "431")) == nil {
		t.Fatal("no 431 for a 70 KB header field")
	}
	rc.request(3, "/", true)
	if rc.readUntil(5*time.Second, isStatus(3, "200")) == nil {
		t.Fatal("connection unusable after the oversized field")
	}
}
