package h2

import "golang.org/x/net/http2/hpack"

// blockCache keeps the HPACK encoding of a response made of :status and a
// PreparedWriter's fields, for the connection's next response with the
// same ones (a cached file served again). Encoding costs a search of
// HPACK's tables per field, two map lookups hashing name and value: 10 %
// of the server's CPU under BenchmarkInlineBurst at 1 KB. An encoding
// holds while the encoder's dynamic table is as it was: one made only of
// indexed fields (RFC 7541 6.1) changed nothing in it, and the same fields
// encode the same way again until a header block that may have changed
// the table (a literal, a size update, or a size change still to be
// announced) moves gen on. Owned by the write goroutine.
type blockCache struct {
	gen    uint64             // moved on by every block that may have changed the dynamic table
	at     uint64             // gen when block was encoded
	status string             // the response's :status
	key    *hpack.HeaderField // the prepared fields' first (they never change: PreparedWriter)
	n      int                // and their count
	block  []byte
}

// cacheable reports whether f is a response HEADERS made of :status and
// prepared fields only.
func cacheable(f *wframe) bool {
	return f.kind == wHeaders && len(f.shared) > 0 && len(f.fields) == 1 && f.fields[0].Name == ":status"
}

// lookup returns the encoding of f if it holds.
func (bc *blockCache) lookup(f *wframe) ([]byte, bool) {
	if !cacheable(f) || bc.at != bc.gen || bc.key != &f.shared[0] || bc.n != len(f.shared) || bc.status != f.fields[0].Value {
		return nil, false
	}
	return bc.block, true
}

// encoded records the encoding of f that the encoder just made.
func (bc *blockCache) encoded(f *wframe, block []byte) {
	if !allIndexed(block) {
		bc.gen++
		return
	}
	if cacheable(f) {
		bc.at, bc.status, bc.key, bc.n = bc.gen, f.fields[0].Value, &f.shared[0], len(f.shared)
		bc.block = append(bc.block[:0], block...)
	}
}

// tableChanged records that the encoder's table size was changed: its
// next block announces it.
func (bc *blockCache) tableChanged() { bc.gen++ }

// allIndexed reports whether an encoder's header block is made only of
// indexed field representations: a 1 bit, then an integer with a 7-bit
// prefix (RFC 7541 5.1, 6.1).
func allIndexed(b []byte) bool {
	for len(b) > 0 {
		if b[0]&0x80 == 0 {
			return false
		}
		i := 1
		if b[0]&0x7f == 0x7f { // the integer goes on: bytes with the top bit set, then one without
			for i < len(b) && b[i]&0x80 != 0 {
				i++
			}
			if i == len(b) {
				return false
			}
			i++
		}
		b = b[i:]
	}
	return true
}
