package h2

import (
	"bytes"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// deadlineConn records the read deadline the clock sets.
type deadlineConn struct {
	net.Conn
	deadline time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	return nil
}

// chunked reads r in pieces of the given sizes (cycled).
type chunked struct {
	r     *bytes.Reader
	sizes []byte
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)])%64 + 1
		c.i++
	}
	return c.r.Read(p[:min(n, len(p))])
}

// FuzzHeaderClock builds frames from the input (type, flags, length per
// triple), reads them through the clock in chunks of fuzzed sizes and
// checks that it follows the frame boundaries: at the end it is between
// frames, inside a header block exactly when the last header frame lacked
// END_HEADERS, and its deadline is set exactly then.
func FuzzHeaderClock(f *testing.F) {
	f.Add([]byte{1, 0, 10, 9, 0, 5, 9, 4, 0}, []byte{3})
	f.Add([]byte{0, 1, 200, 1, 4, 3}, []byte{1, 2, 60})
	f.Add([]byte{1, 0, 0, 4, 0, 6}, []byte{})
	f.Fuzz(func(t *testing.T, spec, sizes []byte) {
		var buf bytes.Buffer
		block := false
		for i := 0; i+3 <= len(spec); i += 3 {
			typ, flags, n := http2.FrameType(spec[i]%10), http2.Flags(spec[i+1]), int(spec[i+2])
			buf.Write([]byte{0, 0, byte(n), byte(typ), byte(flags), 0, 0, 0, 1})
			buf.Write(make([]byte, n))
			if typ == http2.FrameHeaders || typ == http2.FrameContinuation || typ == http2.FramePushPromise {
				block = !flags.Has(http2.FlagHeadersEndHeaders)
			}
		}
		nc := &deadlineConn{}
		h := &headerClock{r: &chunked{r: bytes.NewReader(buf.Bytes()), sizes: sizes}, nc: nc, limit: time.Second}
		p := make([]byte, 100)
		for {
			if _, err := h.Read(p); err != nil {
				break
			}
		}
		if h.hn != 0 || h.left != 0 {
			t.Fatalf("after whole frames: %d header bytes, %d payload bytes pending", h.hn, h.left)
		}
		if h.block != block || h.armed != block || nc.deadline.IsZero() == block {
			t.Fatalf("in a block: clock %v, want %v; deadline set %v", h.block, block, !nc.deadline.IsZero())
		}
	})
}
