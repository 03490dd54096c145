package conform

import (
	"golang.org/x/net/http2/hpack"
)

// Header blocks are built by hand (RFC 7541), so a case can write any
// representation, valid or not. block() writes only literals without
// indexing, so the client's dynamic table holds nothing a case did not put
// there on purpose.

var status200 = hpack.HeaderField{Name: ":status", Value: "200"}

func hf(name, value string) hpack.HeaderField { return hpack.HeaderField{Name: name, Value: value} }

// hInt appends an HPACK integer (RFC 7541 5.1) with an n-bit prefix; first
// holds the representation's bits above the prefix.
func hInt(b []byte, first byte, n uint, v uint64) []byte {
	max := uint64(1)<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	v -= max
	for v >= 128 {
		b = append(b, byte(v%128)|0x80)
		v /= 128
	}
	return append(b, byte(v))
}

// hStr appends a string literal without Huffman coding (RFC 7541 5.2).
func hStr(b []byte, s string) []byte {
	return append(hInt(b, 0, 7, uint64(len(s))), s...)
}

// hHuff appends a Huffman-coded string literal.
func hHuff(b []byte, s string) []byte {
	return hRawHuff(b, hpack.AppendHuffmanString(nil, s))
}

// hRawHuff appends coded bytes as a Huffman string literal, whatever they hold.
func hRawHuff(b, coded []byte) []byte {
	return append(hInt(b, 0x80, 7, uint64(len(coded))), coded...)
}

// hIndexed appends an indexed field (RFC 7541 6.1).
func hIndexed(b []byte, i uint64) []byte { return hInt(b, 0x80, 7, i) }

// hLiteral appends a literal without indexing with a new name (6.2.2).
func hLiteral(b []byte, name, value string) []byte {
	return hStr(hStr(append(b, 0x00), name), value)
}

// hIncremental appends a literal with incremental indexing with a new name
// (6.2.1): the client adds it to its dynamic table.
func hIncremental(b []byte, name, value string) []byte {
	return hStr(hStr(append(b, 0x40), name), value)
}

// hNeverIndexed appends a never-indexed literal with a new name (6.2.3).
func hNeverIndexed(b []byte, name, value string) []byte {
	return hStr(hStr(append(b, 0x10), name), value)
}

// hNamed appends a literal without indexing whose name is table entry i.
func hNamed(b []byte, i uint64, value string) []byte {
	return hStr(hInt(b, 0x00, 4, i), value)
}

// hSizeUpdate appends a dynamic table size update (6.3).
func hSizeUpdate(b []byte, size uint64) []byte { return hInt(b, 0x20, 5, size) }

// block encodes fields as literals without indexing.
func block(fields ...hpack.HeaderField) []byte {
	var b []byte
	for _, f := range fields {
		b = hLiteral(b, f.Name, f.Value)
	}
	return b
}
