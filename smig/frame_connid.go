package smig

import (
	"fmt"

	"golang.org/x/net/http2"
)

// ConnectionIDLen is the CONNECTION_ID payload size.
const ConnectionIDLen = CIDLen + TokenLen

// ConnectionID is a CONNECTION_ID frame (docs/smig.md section 4.1), always
// on stream 0. From the server it gives the connection's CID and the
// client's binding token (with ACK: the token the client presented was
// accepted). From the client it presents a token to bind this connection
// to the client's others; CID is zero.
type ConnectionID struct {
	Flags http2.Flags
	CID   CID
	Token Token
}

// Ack reports whether the frame confirms a client's binding.
func (f ConnectionID) Ack() bool { return f.Flags&FlagAck != 0 }

// Length is the payload length.
func (ConnectionID) Length() int { return ConnectionIDLen }

// Append appends the payload.
func (f ConnectionID) Append(b []byte) []byte {
	b = append(b, f.CID[:]...)
	return append(b, f.Token[:]...)
}

// ParseConnectionID parses a CONNECTION_ID frame.
func ParseConnectionID(flags http2.Flags, streamID uint32, p []byte) (ConnectionID, error) {
	if streamID != 0 {
		return ConnectionID{}, &FrameError{FrameConnectionID, http2.ErrCodeProtocol, fmt.Sprintf("on stream %d, want 0", streamID)}
	}
	if len(p) != ConnectionIDLen {
		return ConnectionID{}, &FrameError{FrameConnectionID, http2.ErrCodeFrameSize, fmt.Sprintf("payload of %d bytes, want %d", len(p), ConnectionIDLen)}
	}
	f := ConnectionID{Flags: flags & FlagAck}
	copy(f.CID[:], p)
	copy(f.Token[:], p[CIDLen:])
	return f, nil
}
