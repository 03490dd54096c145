package smig

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

var sampleMigrations = []Migration{
	{Flags: 0, StreamID: 1, CID: CID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Stream: 0},
	{Flags: FlagEndStream, StreamID: 3, CID: CID{0xff}, Stream: 2},
	{Flags: FlagEndStream | FlagAck, StreamID: 1<<31 - 1, CID: CID{}, Stream: 1<<31 - 1},
	{Flags: 0, StreamID: 0, CID: CID{}, Stream: 0},
}

func TestMigrationRoundTrip(t *testing.T) {
	for _, m := range sampleMigrations {
		b := m.Append(nil)
		if len(b) != m.Length() {
			t.Fatalf("%+v: Append wrote %d bytes, Length says %d", m, len(b), m.Length())
		}
		got, err := ParseMigration(m.Flags, m.StreamID, b)
		if err != nil || got != m {
			t.Fatalf("round trip of %+v: %+v, %v", m, got, err)
		}
	}
}

func TestMigrationReservedBitAndSize(t *testing.T) {
	b := Migration{Stream: 5}.Append(nil)
	b[CIDLen] |= 0x80
	m, err := ParseMigration(0, 1, b)
	if err != nil || m.Stream != 5 {
		t.Fatalf("reserved bit not ignored: %+v %v", m, err)
	}
	var fe *FrameError
	if _, err := ParseMigration(0, 1, b[:15]); !errors.As(err, &fe) || fe.Code != http2.ErrCodeFrameSize {
		t.Fatalf("short payload: %v", err)
	}
}

func TestConnectionIDRoundTrip(t *testing.T) {
	for _, f := range []ConnectionID{
		{CID: CID{9, 8, 7}, Token: Token{1, 2, 3}},
		{Flags: FlagAck, CID: newCID(), Token: newToken()},
	} {
		got, err := ParseConnectionID(f.Flags, 0, f.Append(nil))
		if err != nil || got != f {
			t.Fatalf("round trip of %+v: %+v %v", f, got, err)
		}
	}
	var fe *FrameError
	if _, err := ParseConnectionID(0, 1, make([]byte, ConnectionIDLen)); !errors.As(err, &fe) || fe.Code != http2.ErrCodeProtocol {
		t.Fatalf("stream 1: %v", err)
	}
	if _, err := ParseConnectionID(0, 0, make([]byte, 3)); !errors.As(err, &fe) || fe.Code != http2.ErrCodeFrameSize {
		t.Fatalf("short: %v", err)
	}
}

func FuzzParseMigration(f *testing.F) {
	for _, m := range sampleMigrations {
		f.Add(uint8(m.Flags), m.StreamID, m.Append(nil))
	}
	f.Fuzz(func(t *testing.T, flags uint8, sid uint32, p []byte) {
		m, err := ParseMigration(http2.Flags(flags), sid, p)
		if err != nil {
			return
		}
		if b := m.Append(nil); len(p) != len(b) || !bytes.Equal(b[:CIDLen], p[:CIDLen]) {
			t.Fatalf("re-encoding %x gave %x", p, b)
		}
	})
}

func FuzzParseConnectionID(f *testing.F) {
	f.Add(uint8(0), uint32(0), ConnectionID{CID: CID{1}, Token: Token{2}}.Append(nil))
	f.Add(uint8(FlagAck), uint32(0), ConnectionID{}.Append(nil))
	f.Fuzz(func(t *testing.T, flags uint8, sid uint32, p []byte) {
		c, err := ParseConnectionID(http2.Flags(flags), sid, p)
		if err != nil {
			return
		}
		if b := c.Append(nil); !bytes.Equal(b, p) {
			t.Fatalf("re-encoding %x gave %x", p, b)
		}
	})
}

func TestDescribe(t *testing.T) {
	var cid CID
	cid[0] = 0xab
	m := Migration{Flags: FlagAck | FlagEndStream, StreamID: 3, CID: cid, Stream: 2}
	h := http2.FrameHeader{Type: FrameMigration, Flags: m.Flags, StreamID: 3, Length: uint32(m.Length())}
	got, ok := Describe(h, m.Append(nil))
	want := "MIGRATION flags=ACK|END_STREAM stream=3 len=16 cid=" + cid.String() + " dest_stream=2"
	if !ok || got != want {
		t.Errorf("Describe(migration) = %q, %v; want %q", got, ok, want)
	}
	// A malformed payload is still named, with the reason.
	if got, ok := Describe(http2.FrameHeader{Type: FrameConnectionID, Length: 3}, []byte{1, 2, 3}); !ok || !strings.HasPrefix(got, "CONNECTION_ID stream=0 len=3 ") || !strings.Contains(got, "payload of 3 bytes") {
		t.Errorf("Describe(short CONNECTION_ID) = %q, %v", got, ok)
	}
	if _, ok := Describe(http2.FrameHeader{Type: 0x20}, nil); ok {
		t.Error("Describe named a frame type SMig does not define")
	}
}
