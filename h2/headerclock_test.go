package h2

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// deadlineConn records the read deadline the clock sets.
type deadlineConn struct {
	net.Conn
	deadline time.Time
	sets     int
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.deadline = t
	c.sets++
	return nil
}

// arrivals is a socket in miniature: r's bytes come in segments of the
// given sizes (cycled); a Read returns from the current segment, and only
// a Read that finds it empty waits for the next one. onWait sees each wait.
type arrivals struct {
	r      *bytes.Reader
	sizes  []byte
	i      int
	seg    int // bytes of the current segment not yet read
	onWait func()
}

func (a *arrivals) Read(p []byte) (int, error) {
	if a.seg == 0 {
		if a.r.Len() == 0 {
			return 0, io.EOF
		}
		if a.onWait != nil {
			a.onWait()
		}
		a.seg = 1
		if len(a.sizes) > 0 {
			a.seg = int(a.sizes[a.i%len(a.sizes)])%64 + 1
			a.i++
		}
		a.seg = min(a.seg, a.r.Len())
	}
	n, err := a.r.Read(p[:min(a.seg, len(p))])
	a.seg -= n
	return n, err
}

func (a *arrivals) Buffered() int { return a.seg }

// timed is whether h is inside a span it bounds, from its parser's state.
func (h *headerClock) timed() bool { return h.block || h.hn > 0 && (h.hn < 9 || h.inHdr) }

// FuzzHeaderClock builds frames from the input (type, flags, length per
// triple), reads them through the clock in segments of fuzzed sizes and
// checks that it follows the frame boundaries (at the end it is between
// frames, inside a header block exactly when the last header frame lacked
// END_HEADERS, its deadline set exactly then), and that every wait for a
// segment inside a header frame or block has the deadline set and no wait
// outside one has.
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
		src := &arrivals{r: bytes.NewReader(buf.Bytes()), sizes: sizes}
		h := &headerClock{r: src, nc: nc, limit: time.Second}
		src.onWait = func() {
			if h.timed() != !nc.deadline.IsZero() {
				t.Fatalf("a wait inside a header span %v with a deadline %v", h.timed(), !nc.deadline.IsZero())
			}
		}
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

// TestHeaderClockWholeBlock: HEADERS frames that arrive whole (one a segment), each read as
// the framer reads (9-byte header, then payload), set no deadline at all;
// one whose payload comes in a later segment sets it for that wait and
// clears it after.
func TestHeaderClockWholeBlock(t *testing.T) {
	frame := append([]byte{0, 0, 20, byte(http2.FrameHeaders), byte(http2.FlagHeadersEndHeaders), 0, 0, 0, 1}, make([]byte, 20)...)
	read := func(sizes []byte) *deadlineConn {
		nc := &deadlineConn{}
		in := bytes.Repeat(frame, 10)
		h := &headerClock{r: &arrivals{r: bytes.NewReader(in), sizes: sizes}, nc: nc, limit: time.Second}
		for range 10 {
			var hdr [9]byte
			var payload [20]byte
			if _, err := io.ReadFull(h, hdr[:]); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(h, payload[:]); err != nil {
				t.Fatal(err)
			}
		}
		return nc
	}
	if nc := read([]byte{29 - 1}); nc.sets != 0 {
		t.Errorf("a HEADERS frame per segment: %d deadline changes, want 0", nc.sets)
	}
	// Segments of 14 bytes: each frame's payload straddles a segment.
	if nc := read([]byte{14 - 1}); nc.sets == 0 || !nc.deadline.IsZero() {
		t.Errorf("HEADERS frames split across segments: %d deadline changes, deadline %v at the end; want some, none left", nc.sets, nc.deadline)
	}
}
