package h2

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/net/http2"
)

// headerClock sits between a server connection's frame reader and its
// socket and bounds how long a header block may take (slowloris: HEADERS,
// then CONTINUATION frames, or their bytes, trickled to hold a connection
// and its memory): from when the reader first has to wait for more of a
// HEADERS or CONTINUATION frame (or of a frame header) until the frame
// that ends the block, at most limit. DATA and other frames keep no clock
// (a slow link may take long to bring a large DATA frame). It follows the
// frames by their 9-byte headers.
//
// The read deadline is set only when the reader is about to wait on the
// socket inside a timed span: a header block that arrives whole, as nearly
// every request's does, costs no deadline set and clear (1.4 % of the
// server's CPU under h2load when every HEADERS frame set and cleared one),
// nor a clock read. The buffered input ahead of a wait is consumed at CPU
// speed, so starting the clock at the wait rather than at the frame's
// first byte gives a peer nothing.
type headerClock struct {
	r     bufferedReader
	nc    net.Conn
	limit time.Duration

	hdr   [9]byte
	hn    int  // bytes of the current frame header seen
	left  int  // payload bytes of the current frame still to come
	inHdr bool // the current frame is HEADERS, CONTINUATION or PUSH_PROMISE
	block bool // a header block has begun and not ended
	armed bool // we set the read deadline
}

// bufferedReader is a reader that says how much it returns without waiting.
type bufferedReader interface {
	io.Reader
	Buffered() int
}

func (h *headerClock) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		if h.hn < 9 {
			k := copy(h.hdr[h.hn:], b)
			h.hn += k
			b = b[k:]
			if h.hn == 9 {
				h.frameHeader()
				if h.left == 0 {
					h.frameEnd() // an empty frame
				}
			}
			continue
		}
		k := min(len(b), h.left)
		h.left -= k
		b = b[k:]
		if h.left == 0 {
			h.frameEnd()
		}
	}
	timed := h.block || h.hn > 0 && (h.hn < 9 || h.inHdr)
	switch {
	case timed && !h.armed && h.r.Buffered() == 0:
		// The next read of this span waits on the socket.
		h.nc.SetReadDeadline(time.Now().Add(h.limit))
		h.armed = true
	case !timed && h.armed:
		h.nc.SetReadDeadline(time.Time{})
		h.armed = false
	}
	if err != nil && h.armed && errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("h2: header block not complete within %v (--header-timeout): %w", h.limit, err)
	}
	return n, err
}

func (h *headerClock) frameHeader() {
	h.left = int(h.hdr[0])<<16 | int(h.hdr[1])<<8 | int(h.hdr[2])
	t, flags := http2.FrameType(h.hdr[3]), http2.Flags(h.hdr[4])
	h.inHdr = t == http2.FrameHeaders || t == http2.FrameContinuation || t == http2.FramePushPromise
	if h.inHdr {
		h.block = !flags.Has(http2.FlagHeadersEndHeaders)
	}
}

// frameEnd is called once a frame's last byte has arrived.
func (h *headerClock) frameEnd() {
	h.hn, h.left, h.inHdr = 0, 0, false
}
