package h2

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
)

// connError is a connection error (RFC 9113 5.4.1): GOAWAY with Code, then close.
type connError struct {
	Code   http2.ErrCode
	Reason string
}

func (e connError) Error() string {
	return fmt.Sprintf("h2: connection error %v: %s", e.Code, e.Reason)
}

// streamError is a stream error (RFC 9113 5.4.2): RST_STREAM with Code.
type streamError struct {
	StreamID uint32
	Code     http2.ErrCode
	Reason   string
}

func (e streamError) Error() string {
	return fmt.Sprintf("h2: stream %d error %v: %s", e.StreamID, e.Code, e.Reason)
}

// StreamResetError is returned to the application when a stream was reset.
type StreamResetError struct {
	StreamID uint32
	Code     http2.ErrCode
	Remote   bool // reset by the peer (false: by this side)
}

func (e StreamResetError) Error() string {
	who := "locally"
	if e.Remote {
		who = "by peer"
	}
	return fmt.Sprintf("h2: stream %d reset %s with %v", e.StreamID, who, e.Code)
}

// GoAwayError is returned when the peer sent GOAWAY.
type GoAwayError struct {
	LastStreamID uint32
	Code         http2.ErrCode
	Debug        string
}

func (e GoAwayError) Error() string {
	return fmt.Sprintf("h2: peer sent GOAWAY last-stream %d code %v %q", e.LastStreamID, e.Code, e.Debug)
}

var (
	// ErrConnClosed is returned for operations on a closed connection.
	ErrConnClosed = errors.New("h2: connection closed")
	// ErrNotProcessed marks a request the server never processed (refused
	// or above a GOAWAY's last stream ID), so it can be sent again on another
	// connection (RFC 9113 8.7): errors.Is(err, ErrNotProcessed).
	ErrNotProcessed = errors.New("h2: request not processed by server")
)

// retryableError wraps the reason a request may be retried.
type retryableError struct{ err error }

func (e retryableError) Error() string { return e.err.Error() }
func (e retryableError) Unwrap() error { return ErrNotProcessed }
