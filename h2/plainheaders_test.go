package h2

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestPlainHeaders: requests whose HEADERS frame the read loop takes from
// its buffer without the Framer (whole, plain), and those it must leave to
// the Framer (split across writes, padded, with a priority, a block
// continued in CONTINUATION, or a HEADERS frame inside another's block),
// are all answered, or refused, as before.
func TestPlainHeaders(t *testing.T) {
	rc := dialRaw(t, methodPathServer(t).addr)
	want := func(id uint32, path string) {
		t.Helper()
		if got := string(rc.readBody(id)); got != "GET "+path {
			t.Fatalf("stream %d: %q, want GET %s", id, got, path)
		}
	}
	// Ten plain frames in one write.
	var burst []byte
	for i := uint32(0); i < 10; i++ {
		burst = appendFrameHeader(burst, 0, http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1+2*i)
		block := rc.block(fmt.Sprintf("/burst/%d", i))
		burst[len(burst)-9], burst[len(burst)-8], burst[len(burst)-7] = byte(len(block)>>16), byte(len(block)>>8), byte(len(block))
		burst = append(burst, block...)
	}
	if _, err := rc.nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	bodies, ended := map[uint32]string{}, 0
	if rc.readUntil(5*time.Second, func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			bodies[d.StreamID] += string(d.Data())
			if d.StreamEnded() {
				ended++
			}
		}
		return ended == 10
	}) == nil {
		t.Fatalf("%d of 10 responses to a burst", ended)
	}
	for i := uint32(0); i < 10; i++ {
		if got, path := bodies[1+2*i], fmt.Sprintf("/burst/%d", i); got != "GET "+path {
			t.Fatalf("stream %d: %q, want GET %s", 1+2*i, got, path)
		}
	}
	// A plain frame split in two writes: its end arrives after its start.
	block := rc.block("/split")
	frame := appendFrameHeader(nil, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 21)
	frame = append(frame, block...)
	rc.nc.Write(frame[:12])
	time.Sleep(20 * time.Millisecond)
	rc.nc.Write(frame[12:])
	want(21, "/split")
	// Padded, and with a priority: the Framer's.
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 23, BlockFragment: rc.block("/padded"), EndStream: true, EndHeaders: true, PadLength: 7}); err != nil {
		t.Fatal(err)
	}
	want(23, "/padded")
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 25, BlockFragment: rc.block("/prio"), EndStream: true, EndHeaders: true, Priority: http2.PriorityParam{StreamDep: 1, Weight: 15}}); err != nil {
		t.Fatal(err)
	}
	want(25, "/prio")
	// A block continued: HEADERS without END_HEADERS, then CONTINUATION.
	block = rc.block("/continued")
	if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 27, BlockFragment: block[:3], EndStream: true}); err != nil {
		t.Fatal(err)
	}
	if err := rc.fr.WriteContinuation(27, true, block[3:]); err != nil {
		t.Fatal(err)
	}
	want(27, "/continued")
	// A plain HEADERS frame where a CONTINUATION must come is a
	// connection error, in one write with the block it interrupts.
	frame = appendFrameHeader(nil, 3, http2.FrameHeaders, http2.FlagHeadersEndStream, 29)
	frame = append(frame, rc.block("/open")[:3]...)
	block = rc.block("/interloper")
	frame = appendFrameHeader(frame, len(block), http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 31)
	frame = append(frame, block...)
	rc.nc.Write(frame)
	if rc.readUntil(5*time.Second, isGoAway(http2.ErrCodeProtocol)) == nil {
		t.Fatal("no GOAWAY(PROTOCOL_ERROR) for HEADERS inside another block")
	}
}
