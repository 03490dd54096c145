package h2

import (
	"context"
	"fmt"
	"net/http"

	"golang.org/x/net/http2"
)

// StreamOptions control the stream of one client request.
type StreamOptions struct {
	// ReceiveWindow, if above the connection's initial window, opens the
	// stream's receive window to this many bytes right after HEADERS. It
	// cannot be below the initial window (lower that with
	// Conn.SetInitialWindowSize).
	ReceiveWindow uint32
	// ManualWindow turns off automatic WINDOW_UPDATEs for this stream: the
	// peer may send exactly the initial (or ReceiveWindow) bytes plus what
	// the application grants with Stream.GrowWindow. MP-H2 uses it to make a
	// server stop exactly at a byte offset.
	ManualWindow bool
}

// Stream is the application's handle on one HTTP/2 stream.
type Stream struct{ st *stream }

// StreamOf returns the stream that carried a response from this package's
// client, or nil.
func StreamOf(res *http.Response) *Stream {
	if res == nil {
		return nil
	}
	if b, ok := res.Body.(*streamBody); ok {
		return &Stream{b.st}
	}
	return nil
}

// StreamFromContext returns the stream of a request served by this
// package's server (use r.Context()), or nil.
func StreamFromContext(ctx context.Context) *Stream {
	if st, ok := ctx.Value(streamContextKey).(*stream); ok {
		return &Stream{st}
	}
	return nil
}

// ID returns the stream identifier.
func (s *Stream) ID() uint32 { return s.st.id }

// Conn returns the connection carrying the stream.
func (s *Stream) Conn() *Conn { return s.st.c }

// GrowWindow lets the peer send n more bytes on this stream (a WINDOW_UPDATE).
func (s *Stream) GrowWindow(n uint32) error {
	c := s.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.st.state == stateClosed || s.st.recv.closedByPeer() {
		return fmt.Errorf("h2: GrowWindow on finished stream %d", s.st.id)
	}
	if inc := s.st.recvWin.Grow(n); inc > 0 {
		c.queueLocked(wframe{kind: wWindowUpdate, id: s.st.id, val: inc})
	}
	return nil
}

// ReceiveWindow returns how many more bytes the peer may send on the stream.
func (s *Stream) ReceiveWindow() int64 {
	c := s.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.st.recvWin.Avail()
}

// Credited returns how many bytes of DATA the peer may send on the stream
// in all: those it sent (padding and a frame still being read included)
// and the receive window left. No credit is given after a Reset, so from
// then on it bounds the body bytes the stream can carry.
func (s *Stream) Credited() int64 {
	c := s.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.st.recvWin.Credited()
}

// Received returns the body bytes received on the stream so far.
func (s *Stream) Received() int64 {
	c := s.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.st.gotLen
}

// Sent returns the body bytes sent on the stream so far.
func (s *Stream) Sent() int64 {
	c := s.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.st.send.sent
}

// Fail sends RST_STREAM with code and fails the stream for the application
// with err (readers get it once the bytes received are read).
func (s *Stream) Fail(code http2.ErrCode, err error) {
	s.st.c.failStream(s.st, code, err)
}

// Reset sends RST_STREAM with code and fails the stream locally.
func (s *Stream) Reset(code http2.ErrCode) {
	c := s.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.st.state != stateClosed {
		c.resetStreamLocked(s.st.id, code)
	}
}
