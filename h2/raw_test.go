package h2

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawClient speaks HTTP/2 frame by frame with x/net's Framer, to drive the
// server into corners a well-behaved client never reaches.
type rawClient struct {
	t    testing.TB
	nc   net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
}

func dialRaw(t testing.TB, addr string, settings ...http2.Setting) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return rawOver(t, nc, settings...)
}

// dialRawTS dials ts, over TLS (ALPN h2) if it serves TLS.
func dialRawTS(t testing.TB, ts *testServer) *rawClient {
	t.Helper()
	if ts.tls == nil {
		return dialRaw(t, ts.addr)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	nc, err := tls.DialWithDialer(d, "tcp", ts.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	return rawOver(t, nc)
}

// rawOver starts HTTP/2 on nc: the preface and a SETTINGS frame.
func rawOver(t testing.TB, nc net.Conn, settings ...http2.Setting) *rawClient {
	t.Helper()
	t.Cleanup(func() { nc.Close() })
	rc := &rawClient{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	rc.enc = hpack.NewEncoder(&rc.hbuf)
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := nc.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := rc.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	return rc
}

// block encodes a request header block for path.
func (rc *rawClient) block(path string, extra ...hpack.HeaderField) []byte {
	rc.hbuf.Reset()
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "localhost"}, {Name: ":path", Value: path},
	}, extra...) {
		rc.enc.WriteField(f)
	}
	return append([]byte(nil), rc.hbuf.Bytes()...)
}

func (rc *rawClient) request(id uint32, path string, end bool) {
	rc.t.Helper()
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.block(path), EndStream: end, EndHeaders: true}); err != nil {
		rc.t.Fatalf("writing HEADERS on stream %d: %v", id, err)
	}
}

// readUntil reads frames until match returns true, the connection ends, or
// the timeout passes; it returns the matching frame or nil.
func (rc *rawClient) readUntil(timeout time.Duration, match func(http2.Frame) bool) http2.Frame {
	f, _ := rc.readFrameUntil(timeout, match)
	return f
}

// readFrameUntil is readUntil also returning the read error that ended it.
func (rc *rawClient) readFrameUntil(timeout time.Duration, match func(http2.Frame) bool) (http2.Frame, error) {
	rc.nc.SetReadDeadline(time.Now().Add(timeout))
	defer rc.nc.SetReadDeadline(time.Time{})
	for {
		f, err := rc.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		if match(f) {
			return f, nil
		}
	}
}

// useUpWindow spends the server's connection window (65535, never
// replenished here) on a response to stream id.
func (rc *rawClient) useUpWindow(id uint32) {
	rc.t.Helper()
	rc.request(id, "/gen/65535", true)
	if rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		return f.Header().StreamID == id && f.Header().Flags.Has(http2.FlagDataEndStream)
	}) == nil {
		rc.t.Fatal("the response using up the window did not complete")
	}
}

// dataOrder reads frames until n streams have ended their DATA and returns
// the stream of each DATA frame in the order they came.
func (rc *rawClient) dataOrder(n int) []uint32 {
	rc.t.Helper()
	var order []uint32
	ended := 0
	rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			order = append(order, d.StreamID)
			if d.StreamEnded() {
				ended++
			}
		}
		return ended == n
	})
	if ended != n {
		rc.t.Fatalf("%d of %d streams ended, DATA order %v", ended, n, order)
	}
	return order
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func isGoAway(code http2.ErrCode) func(http2.Frame) bool {
	return func(f http2.Frame) bool {
		ga, ok := f.(*http2.GoAwayFrame)
		return ok && ga.ErrCode == code
	}
}

func isRST(id uint32, code http2.ErrCode) func(http2.Frame) bool {
	return func(f http2.Frame) bool {
		r, ok := f.(*http2.RSTStreamFrame)
		return ok && r.StreamID == id && r.ErrCode == code
	}
}

func isStatus(id uint32, status string) func(http2.Frame) bool {
	return func(f http2.Frame) bool {
		h, ok := f.(*http2.MetaHeadersFrame)
		return ok && h.StreamID == id && h.PseudoValue("status") == status
	}
}

// TestUnreadRequestBody: a response sent before the request body ended
// leaves the stream half-closed (local). The client's frames on it are still
// checked, and more body is stopped with RST_STREAM(NO_ERROR) (RFC 9113 §8.1).
func TestUnreadRequestBody(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "done") })
	ts := startServer(t, ok, Config{}, false)

	rc := dialRaw(t, ts.addr)
	rc.request(1, "/", false)
	rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		d, isData := f.(*http2.DataFrame)
		return isData && d.StreamID == 1 && d.StreamEnded()
	})
	if err := rc.fr.WriteData(1, false, []byte("more body")); err != nil {
		t.Fatal(err)
	}
	rc.readUntil(5*time.Second, isRST(1, http2.ErrCodeNo))

	rc.request(3, "/", false)
	rc.readUntil(5*time.Second, isStatus(3, "200"))
	for range 2 {
		if err := rc.fr.WriteWindowUpdate(3, 1<<31-1); err != nil {
			t.Fatal(err)
		}
	}
	rc.readUntil(5*time.Second, isRST(3, http2.ErrCodeFlowControl))
}

// TestGoAwayEndsWithoutReset: after the client's GOAWAY, a connection with
// nothing open ends with a FIN, and the server keeps reading what the client
// still sends (h2spec 3.8/1 sends a PING right behind its GOAWAY), so the
// client never sees a TCP reset for data the server did not read. A close
// without the drain fails this: the PING lands on a closed socket.
func TestGoAwayEndsWithoutReset(t *testing.T) {
	ts := startServer(t, http.NotFoundHandler(), Config{}, false)
	rc := dialRaw(t, ts.addr)
	if err := rc.fr.WriteGoAway(0, http2.ErrCodeNo, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.readFrameUntil(5*time.Second, func(http2.Frame) bool { return false }); err != io.EOF {
		t.Fatalf("after GOAWAY: %v, want the server's FIN (EOF)", err)
	}
	for i := range 3 {
		if err := rc.fr.WritePing(false, [8]byte{byte(i)}); err != nil {
			t.Fatalf("PING %d after the server's FIN: %v", i, err)
		}
		if _, err := rc.readFrameUntil(time.Second, func(http2.Frame) bool { return false }); err != io.EOF {
			t.Fatalf("read after PING %d: %v, want EOF (the server still reads)", i, err)
		}
	}
}
