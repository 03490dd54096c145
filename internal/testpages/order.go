package testpages

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Request is one GET of DataOrder: the path, the body's length expected
// and the RFC 9218 Priority field sent with it.
type Request struct {
	Path     string
	Size     int64
	Priority string
}

// DataOrder sends reqs, in order, in one write on a new h2c connection to
// addr and returns the stream of every non-empty DATA frame as it came
// (request i is stream 2i+1); every response must be a 200 of its size.
func DataOrder(t testing.TB, addr string, reqs []Request) []uint32 {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	var out, hb bytes.Buffer
	out.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&out, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
	fr.WriteWindowUpdate(0, 1<<30)
	enc := hpack.NewEncoder(&hb)
	for i, r := range reqs {
		hb.Reset()
		for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: addr}, {Name: ":path", Value: r.Path}, {Name: "priority", Value: r.Priority}} {
			enc.WriteField(f)
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	}
	if _, err := nc.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	in := http2.NewFramer(io.Discard, nc)
	var status string
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == ":status" {
			status = f.Value
		}
	})
	var order []uint32
	got := map[uint32]int64{}
	for done := 0; done < len(reqs); {
		f, err := in.ReadFrame()
		if err != nil {
			t.Fatalf("after DATA of streams %v: %v", order, err)
		}
		switch f := f.(type) {
		case *http2.HeadersFrame:
			status = ""
			dec.Write(f.HeaderBlockFragment())
			if status != "200" {
				t.Fatalf("stream %d: status %q", f.StreamID, status)
			}
			if f.StreamEnded() {
				done++
			}
		case *http2.DataFrame:
			if len(f.Data()) > 0 {
				order = append(order, f.StreamID)
			}
			got[f.StreamID] += int64(len(f.Data()))
			if f.StreamEnded() {
				done++
			}
		case *http2.GoAwayFrame, *http2.RSTStreamFrame:
			t.Fatalf("%v", f)
		}
	}
	for i, r := range reqs {
		if n := got[uint32(2*i+1)]; n != r.Size {
			t.Errorf("%s: %d bytes, want %d", r.Path, n, r.Size)
		}
	}
	return order
}

// Interleaved reports whether a frame of stream id comes after a frame of
// another stream in order: false when id's bytes all came first.
func Interleaved(order []uint32, id uint32) bool {
	other := false
	for _, s := range order {
		if s != id {
			other = true
		} else if other {
			return true
		}
	}
	return false
}
