package h2

import "errors"

// errLateSizeUpdate: a dynamic table size update after a field (RFC 7541
// 4.2: it MUST come at the beginning of a header block). x/net's decoder
// lets it through while its dynamic table is empty, so the engine follows
// the block's representations itself.
var errLateSizeUpdate = errors.New("dynamic table size update after a field, not at the start of the header block (RFC 7541 4.2)")

// blockScan follows a header block's representations (RFC 7541 6)
// fragment by fragment, without decoding them: it reads the integers and
// skips the strings, to see where size updates are. Malformed input is the
// decoder's to report; the scan then stops.
type blockScan struct {
	field  bool // a field representation came before
	need   int  // strings still to come in this representation
	inInt  bool // an integer continues in the next bytes
	kind   intKind
	val    uint64
	shift  uint
	skip   uint64 // string bytes left
	broken bool   // an integer too large: left to the decoder
	// changes: a representation that adds to the dynamic table or
	// resizes it came; the rest (indexed fields, literals not indexed)
	// leave the decoder as it was.
	changes bool
}

type intKind uint8

const (
	intIndex   intKind = iota // an indexed field's index, a size update's size
	intLiteral                // a literal's name index (0: a name string follows)
	intString                 // a string's length
)

// scan reads the next fragment of the block.
func (s *blockScan) scan(p []byte) error {
	for i := 0; i < len(p) && !s.broken; {
		switch {
		case s.skip > 0:
			n := min(s.skip, uint64(len(p)-i))
			s.skip -= n
			i += int(n)
		case s.inInt:
			b := p[i]
			i++
			if s.shift > 56 {
				s.broken = true
				return nil
			}
			s.val += uint64(b&0x7f) << s.shift
			s.shift += 7
			if b&0x80 == 0 {
				s.inInt = false
				s.intDone()
			}
		case s.need > 0: // a string: H bit and a 7-bit prefix length
			s.startInt(p[i], 7, intString)
			i++
		default: // a representation
			b := p[i]
			i++
			switch {
			case b&0x80 != 0: // indexed field
				s.field = true
				s.startInt(b, 7, intIndex)
			case b&0xc0 == 0x40: // literal with incremental indexing
				s.field, s.need, s.changes = true, 1, true
				s.startInt(b, 6, intLiteral)
			case b&0xe0 == 0x20: // dynamic table size update
				if s.field {
					return errLateSizeUpdate
				}
				s.changes = true
				s.startInt(b, 5, intIndex)
			default: // literal without indexing, never indexed
				s.field, s.need = true, 1
				s.startInt(b, 4, intLiteral)
			}
		}
	}
	return nil
}

func (s *blockScan) startInt(b byte, prefix uint, k intKind) {
	max := uint64(1)<<prefix - 1
	s.kind = k
	if v := uint64(b) & max; v < max {
		s.val = v
		s.intDone()
		return
	}
	s.val, s.shift, s.inInt = max, 0, true
}

func (s *blockScan) intDone() {
	switch s.kind {
	case intLiteral:
		if s.val == 0 {
			s.need = 2 // the name, then the value
		}
	case intString:
		s.skip = s.val
		s.need--
	}
}
