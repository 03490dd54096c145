// Package smig implements SMig, HTTP/2 stream migration (docs/smig.md): a
// client or server moves the rest of an on-going response to another
// connection of the same client, so that a large body stops blocking small
// responses behind it in the sender's TCP buffer.
//
// The wire format (this file and frame_*.go) and the policies (policy.go,
// pool.go) are pure; server.go and client.go run the mechanism on the h2
// engine through its extension-frame, settings and migration hooks.
package smig

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/net/http2"
)

// Code points (docs/smig.md section 3). All three live only here.
const (
	// FrameMigration is unassigned in the IANA HTTP/2 Frame Type registry;
	// 0x0a (the slides' choice) is ALTSVC since RFC 7838.
	FrameMigration http2.FrameType = 0x0e
	// FrameConnectionID is the next unassigned type.
	FrameConnectionID http2.FrameType = 0x0f
	// SettingSMig is in the settings range reserved for experimental use
	// (0xf000-0xffff). Value 1 announces this version.
	SettingSMig http2.SettingID = 0xf0f5
	// Version is the only defined value of SettingSMig.
	Version = 1
)

// Flags of both frames.
const (
	FlagEndStream http2.Flags = 0x1
	FlagAck       http2.Flags = 0x2
)

// CIDLen is the size of a connection identifier (96 bits).
const CIDLen = 12

// CID identifies one HTTP/2 connection to its peer. The server issues it.
type CID [CIDLen]byte

// TokenLen is the size of a client binding token (128 bits).
const TokenLen = 16

// Token binds the connections of one client (docs/smig.md section 7).
type Token [TokenLen]byte

func (c CID) String() string   { return hex.EncodeToString(c[:]) }
func (t Token) String() string { return hex.EncodeToString(t[:4]) + "…" }

// IsZero reports whether c is the all-zero identifier (no connection).
func (c CID) IsZero() bool { return c == CID{} }

// IsZero reports whether t is the all-zero token (none).
func (t Token) IsZero() bool { return t == Token{} }

func newCID() CID {
	var c CID
	rand.Read(c[:])
	return c
}

func newToken() Token {
	var t Token
	rand.Read(t[:])
	return t
}

// FrameError is a malformed SMig frame: a connection error of type
// PROTOCOL_ERROR or FRAME_SIZE_ERROR (docs/smig.md section 6).
type FrameError struct {
	Type http2.FrameType
	Code http2.ErrCode
	Msg  string
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("smig: %v frame 0x%x: %s", e.Code, uint8(e.Type), e.Msg)
}

// Describe renders an SMig frame for a frame trace, as x/net/http2 renders
// its own ("MIGRATION flags=ACK stream=3 len=16 cid=… dest_stream=2"); ok
// is false for a frame type SMig does not define.
func Describe(h http2.FrameHeader, payload []byte) (s string, ok bool) {
	var name, body string
	switch h.Type {
	case FrameMigration:
		name = "MIGRATION"
		if m, err := ParseMigration(h.Flags, h.StreamID, payload); err != nil {
			body = err.Error()
		} else {
			body = fmt.Sprintf("cid=%v dest_stream=%d", m.CID, m.Stream)
		}
	case FrameConnectionID:
		name = "CONNECTION_ID"
		if c, err := ParseConnectionID(h.Flags, h.StreamID, payload); err != nil {
			body = err.Error()
		} else {
			body = fmt.Sprintf("cid=%v token=%v", c.CID, c.Token)
		}
	default:
		return "", false
	}
	var flags []string
	if h.Flags&FlagAck != 0 {
		flags = append(flags, "ACK")
	}
	if h.Flags&FlagEndStream != 0 {
		flags = append(flags, "END_STREAM")
	}
	s = name
	if len(flags) > 0 {
		s += " flags=" + strings.Join(flags, "|")
	}
	return fmt.Sprintf("%s stream=%d len=%d %s", s, h.StreamID, h.Length, body), true
}
