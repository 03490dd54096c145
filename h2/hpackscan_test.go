package h2

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// encodeBlocks encodes field lists with one encoder (so the later blocks
// refer to the dynamic table the earlier ones filled); resize > 0 makes the
// encoder start the second block with a size update.
func encodeBlocks(resize uint32, lists ...[]hpack.HeaderField) [][]byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	var out [][]byte
	for i, fields := range lists {
		if i == 1 && resize > 0 {
			enc.SetMaxDynamicTableSize(resize)
		}
		buf.Reset()
		for _, f := range fields {
			enc.WriteField(f)
		}
		out = append(out, append([]byte(nil), buf.Bytes()...))
	}
	return out
}

// scanSplit scans block cut into fragments at every cut point.
func scanSplit(block []byte, cut int) error {
	var s blockScan
	for len(block) > cut && cut > 0 {
		if err := s.scan(block[:cut]); err != nil {
			return err
		}
		block = block[cut:]
	}
	return s.scan(block)
}

// Every block the encoder writes — indexed fields, literals with and
// without indexing, new and indexed names, Huffman strings, long values,
// a size update where it belongs — scans without error, however it is cut.
func TestBlockScanValid(t *testing.T) {
	lists := [][]hpack.HeaderField{
		{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "text/html"}, {Name: "x-long", Value: strings.Repeat("v", 300)}},
		{{Name: ":status", Value: "200"}, {Name: "x-long", Value: strings.Repeat("v", 300)}, {Name: "set-cookie", Value: "a=b", Sensitive: true}},
		{{Name: "x-new-name", Value: ""}, {Name: "", Value: "empty name"}},
	}
	for _, resize := range []uint32{0, 1024} {
		for i, block := range encodeBlocks(resize, lists...) {
			if resize > 0 && i == 1 && block[0]&0xe0 != 0x20 {
				t.Fatalf("the encoder did not start block 2 with a size update: %x", block[:4])
			}
			for cut := 0; cut <= len(block); cut++ {
				if err := scanSplit(block, cut); err != nil {
					t.Errorf("resize %d block %d cut every %d bytes: %v", resize, i, cut, err)
				}
			}
		}
	}
}

// A size update after a field is found wherever the fragments are cut; two
// at the start are allowed.
func TestBlockScanLateSizeUpdate(t *testing.T) {
	literal := []byte{0x00, 0x03, 'x', '-', 'a', 0x01, 'b'} // x-a: b, without indexing
	for _, tc := range []struct {
		block []byte
		want  error
	}{
		{append([]byte{0x20, 0x3f, 0xe1, 0x1f}, literal...), nil},                                                         // 0, then 4096 (5-bit prefix, continued)
		{append(append([]byte(nil), literal...), 0x20), errLateSizeUpdate},                                                // after a literal
		{[]byte{0x88, 0x3f, 0xe1, 0x1f}, errLateSizeUpdate},                                                               // after an indexed field (:status 200)
		{append([]byte{0x40, 0x01, 'n', 0x7f, 0x05}, append(bytes.Repeat([]byte("v"), 132), 0x20)...), errLateSizeUpdate}, // after a 132-byte value
	} {
		for cut := 0; cut <= len(tc.block); cut++ {
			if err := scanSplit(tc.block, cut); !errors.Is(err, tc.want) {
				t.Errorf("%x cut every %d: %v, want %v", tc.block, cut, err, tc.want)
			}
		}
	}
}

// FuzzBlockScan: the scan never panics, its verdict does not depend on
// where the block is cut, and what the encoder writes always passes.
func FuzzBlockScan(f *testing.F) {
	for _, b := range encodeBlocks(512, []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "x-a", Value: "b"}}, []hpack.HeaderField{{Name: "x-a", Value: "b"}}) {
		f.Add(b, 3, "x-f", "v")
	}
	f.Add([]byte{0x88, 0x20}, 1, "", "")
	f.Fuzz(func(t *testing.T, block []byte, cut int, name, value string) {
		if cut < 0 || cut > len(block) {
			cut = len(block)
		}
		whole, split := scanSplit(block, len(block)), scanSplit(block, cut)
		if (whole == nil) != (split == nil) {
			t.Fatalf("%x: whole %v, cut every %d %v", block, whole, cut, split)
		}
		for _, b := range encodeBlocks(256, []hpack.HeaderField{{Name: name, Value: value}}, []hpack.HeaderField{{Name: name, Value: value}, {Name: value, Value: name}}) {
			if err := scanSplit(b, cut); err != nil {
				t.Fatalf("encoder block %x: %v", b, err)
			}
		}
	})
}
