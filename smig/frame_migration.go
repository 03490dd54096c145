package smig

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/http2"
)

// MigrationLen is the MIGRATION payload size.
const MigrationLen = CIDLen + 4

// Migration is a MIGRATION frame (docs/smig.md section 4.2). StreamID is the
// stream the frame is sent on; CID and Stream name the other end of the
// move: the destination on the source connection, the source on the
// destination connection.
type Migration struct {
	Flags    http2.Flags
	StreamID uint32
	CID      CID
	Stream   uint32 // 31 bits
}

// EndStream reports whether this is the migration point on the source.
func (m Migration) EndStream() bool { return m.Flags&FlagEndStream != 0 }

// Ack reports whether this answers a request.
func (m Migration) Ack() bool { return m.Flags&FlagAck != 0 }

// Length is the payload length.
func (Migration) Length() int { return MigrationLen }

// Append appends the payload.
func (m Migration) Append(b []byte) []byte {
	b = append(b, m.CID[:]...)
	return binary.BigEndian.AppendUint32(b, m.Stream&(1<<31-1))
}

// ParseMigration parses a MIGRATION frame's header fields and payload. A
// wrong length is FRAME_SIZE_ERROR; the reserved bit is ignored on receipt.
func ParseMigration(flags http2.Flags, streamID uint32, p []byte) (Migration, error) {
	if len(p) != MigrationLen {
		return Migration{}, &FrameError{FrameMigration, http2.ErrCodeFrameSize, fmt.Sprintf("payload of %d bytes, want %d", len(p), MigrationLen)}
	}
	m := Migration{Flags: flags & (FlagAck | FlagEndStream), StreamID: streamID}
	copy(m.CID[:], p)
	m.Stream = binary.BigEndian.Uint32(p[CIDLen:]) & (1<<31 - 1)
	return m, nil
}
