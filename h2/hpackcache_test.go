package h2

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestBlockCache: header blocks encoded with the prepared responses'
// cache decode, in order, to the fields they were made of, whatever mix of
// prepared responses, other blocks (literals, never-indexed fields, other
// statuses) and table size changes comes between; and the cache is used.
func TestBlockCache(t *testing.T) {
	prepared := [][]hpack.HeaderField{
		{{Name: "etag", Value: `"a1"`}, {Name: "content-type", Value: "text/html"}, {Name: "content-length", Value: "1024"}},
		{{Name: "etag", Value: `"b2"`}, {Name: "content-type", Value: "text/html"}, {Name: "content-length", Value: "16384"}, {Name: "last-modified", Value: "Tue, 24 Nov 2026 10:00:00 GMT"}},
		{{Name: "content-length", Value: "0"}},
	}
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		c := &Conn{}
		c.henc = hpack.NewEncoder(&c.hbuf)
		var got []hpack.HeaderField
		dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got = append(got, f) })
		hits := 0
		for i := 0; i < 403; i++ {
			f := wframe{kind: wHeaders, fields: []hpack.HeaderField{{Name: ":status", Value: "200"}}}
			k := r.IntN(10)
			if i >= 400 {
				k = -1 // the last three: one prepared response again and again
			}
			if i == 400 { // with a table that holds its fields
				c.henc.SetMaxDynamicTableSizeLimit(4096)
				c.henc.SetMaxDynamicTableSize(4096) // the limit alone only ever shrinks it
				c.blocks.tableChanged()
			}
			switch {
			case k < 0:
				f.shared = prepared[0]
			case k < 6:
				f.shared = prepared[r.IntN(len(prepared))]
				if r.IntN(8) == 0 {
					f.fields[0].Value = "404"
				}
				if r.IntN(10) == 0 { // a header map's field beside them
					f.fields = append(f.fields, hpack.HeaderField{Name: "x-map", Value: "m"})
				}
			case k < 8:
				f.fields = append(f.fields, hpack.HeaderField{Name: fmt.Sprintf("x-%d", r.IntN(40)), Value: fmt.Sprint(r.IntN(1000))})
			case k < 9:
				f.fields = append(f.fields, hpack.HeaderField{Name: "authorization", Value: "secret", Sensitive: true})
			default:
				size := uint32(r.IntN(4097))
				c.henc.SetMaxDynamicTableSizeLimit(size)
				c.blocks.tableChanged()
				f.shared = prepared[r.IntN(len(prepared))]
			}
			if _, ok := c.blocks.lookup(&f); ok {
				hits++
			} else if i == 402 {
				t.Errorf("seed %d: a prepared response's third encoding in a row did not come from the cache", seed)
			}
			block := c.encodeBlock(&f)
			got = got[:0]
			if _, err := dec.Write(block); err != nil {
				t.Fatalf("seed %d block %d: %v", seed, i, err)
			}
			if err := dec.Close(); err != nil {
				t.Fatalf("seed %d block %d: %v", seed, i, err)
			}
			want := append(slices.Clone(f.fields), f.shared...)
			if !slices.EqualFunc(got, want, func(a, b hpack.HeaderField) bool { return a.Name == b.Name && a.Value == b.Value }) {
				t.Fatalf("seed %d block %d: decoded %v, want %v", seed, i, got, want)
			}
		}
		t.Logf("seed %d: %d of 403 blocks from the cache", seed, hits)
	}
}

func TestAllIndexed(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want bool
	}{
		{nil, true},
		{[]byte{0x88}, true},
		{[]byte{0x88, 0xbe, 0xff, 0x80, 0x01}, true}, // index 127+128
		{[]byte{0xff, 0x80}, false},                  // integer cut short
		{[]byte{0x88, 0x40}, false},                  // literal with indexing
		{[]byte{0x20}, false},                        // size update
		{[]byte{0x10}, false},                        // never indexed
	} {
		if got := allIndexed(c.b); got != c.want {
			t.Errorf("allIndexed(% x) = %v, want %v", c.b, got, c.want)
		}
	}
}
