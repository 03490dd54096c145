// Package prio implements RFC 9218 extensible priorities: the priority
// parameters, a parser for the Structured Field (RFC 8941) dictionary that
// carries them, and a DATA scheduler. It is pure logic: no I/O, no clock.
package prio

import (
	"fmt"
	"strconv"
)

// Priority is an RFC 9218 priority: urgency 0 (highest) to 7, and whether the
// response may be interleaved with others of the same urgency.
type Priority struct {
	Urgency     uint8
	Incremental bool
}

// Default is the priority of a stream that announced none (RFC 9218 4).
var Default = Priority{Urgency: 3}

// String encodes p as a priority field value; Parse(p.String()) == p.
func (p Priority) String() string {
	s := "u=" + strconv.Itoa(int(p.Urgency))
	if p.Incremental {
		s += ", i"
	}
	return s
}

// Parse reads a priority header or PRIORITY_UPDATE field value. Unknown keys
// and out-of-range values are ignored as RFC 9218 4 requires; a value that is
// not a valid dictionary is an error, and the caller should use Default.
func Parse(s string) (Priority, error) {
	p := Default
	ps := parser{s: s}
	err := ps.dictionary(func(key string, v item) {
		switch key {
		case "u":
			if v.kind == kindInteger && v.n >= 0 && v.n <= 7 {
				p.Urgency = uint8(v.n)
			}
		case "i":
			if v.kind == kindBoolean {
				p.Incremental = v.b
			}
		}
	})
	if err != nil {
		return Default, fmt.Errorf("priority field %q: %w", s, err)
	}
	return p, nil
}

type kind uint8

const (
	kindInteger kind = iota + 1
	kindDecimal
	kindString
	kindToken
	kindBytes
	kindBoolean
	kindInnerList
)

// item is the part of a parsed bare item the priority keys need.
type item struct {
	kind kind
	n    int64
	b    bool
}

type parser struct {
	s string
	i int
}

func (p *parser) eof() bool  { return p.i >= len(p.s) }
func (p *parser) peek() byte { return p.s[p.i] }

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{p.i}, args...)...)
}

func (p *parser) skipSP() {
	for !p.eof() && p.peek() == ' ' {
		p.i++
	}
}

func (p *parser) skipOWS() {
	for !p.eof() && (p.peek() == ' ' || p.peek() == '\t') {
		p.i++
	}
}

// dictionary parses an RFC 8941 3.2 dictionary, calling member for each
// member in order (a later duplicate overrides an earlier one in effect).
func (p *parser) dictionary(member func(key string, v item)) error {
	p.skipSP()
	if p.eof() {
		return nil
	}
	for {
		key, err := p.key()
		if err != nil {
			return err
		}
		v := item{kind: kindBoolean, b: true}
		if !p.eof() && p.peek() == '=' {
			p.i++
			if v, err = p.itemOrInnerList(); err != nil {
				return err
			}
		} else if err := p.parameters(); err != nil {
			return err
		}
		member(key, v)
		p.skipOWS()
		if p.eof() {
			return nil
		}
		if p.peek() != ',' {
			return p.errorf("expected ',' after member %q", key)
		}
		p.i++
		p.skipOWS()
		if p.eof() {
			return p.errorf("trailing comma")
		}
	}
}

func isLCAlpha(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool   { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool   { return isLCAlpha(c) || c >= 'A' && c <= 'Z' }

func isTChar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func (p *parser) key() (string, error) {
	start := p.i
	if p.eof() || !(isLCAlpha(p.peek()) || p.peek() == '*') {
		return "", p.errorf("key must start with a-z or '*'")
	}
	for !p.eof() {
		c := p.peek()
		if !(isLCAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[start:p.i], nil
}

func (p *parser) parameters() error {
	for !p.eof() && p.peek() == ';' {
		p.i++
		p.skipSP()
		if _, err := p.key(); err != nil {
			return err
		}
		if !p.eof() && p.peek() == '=' {
			p.i++
			if _, err := p.bareItem(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *parser) itemOrInnerList() (item, error) {
	if !p.eof() && p.peek() == '(' {
		p.i++
		for {
			p.skipSP()
			if p.eof() {
				return item{}, p.errorf("unterminated inner list")
			}
			if p.peek() == ')' {
				p.i++
				return item{kind: kindInnerList}, p.parameters()
			}
			if _, err := p.bareItem(); err != nil {
				return item{}, err
			}
			if err := p.parameters(); err != nil {
				return item{}, err
			}
			if !p.eof() && p.peek() != ' ' && p.peek() != ')' {
				return item{}, p.errorf("expected ' ' or ')' in inner list")
			}
		}
	}
	v, err := p.bareItem()
	if err != nil {
		return item{}, err
	}
	return v, p.parameters()
}

func (p *parser) bareItem() (item, error) {
	if p.eof() {
		return item{}, p.errorf("missing item")
	}
	switch c := p.peek(); {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		return p.str()
	case c == ':':
		return p.bytes()
	case c == '?':
		p.i++
		if p.eof() || (p.peek() != '0' && p.peek() != '1') {
			return item{}, p.errorf("boolean must be ?0 or ?1")
		}
		b := p.peek() == '1'
		p.i++
		return item{kind: kindBoolean, b: b}, nil
	case isAlpha(c) || c == '*':
		for p.i++; !p.eof() && (isTChar(p.peek()) || p.peek() == ':' || p.peek() == '/'); p.i++ {
		}
		return item{kind: kindToken}, nil
	default:
		return item{}, p.errorf("unexpected character %q", c)
	}
}

// number parses an RFC 8941 3.3.1 integer or 3.3.2 decimal.
func (p *parser) number() (item, error) {
	neg := false
	if p.peek() == '-' {
		neg = true
		p.i++
	}
	if p.eof() || !isDigit(p.peek()) {
		return item{}, p.errorf("number without digits")
	}
	var n int64
	digits, dot, frac := 0, false, 0
	for !p.eof() {
		c := p.peek()
		if c == '.' && !dot {
			if digits > 12 {
				return item{}, p.errorf("decimal integer part too long")
			}
			dot = true
			p.i++
			continue
		}
		if !isDigit(c) {
			break
		}
		if dot {
			frac++
		} else {
			digits++
			n = n*10 + int64(c-'0')
		}
		p.i++
		if !dot && digits > 15 || frac > 3 {
			return item{}, p.errorf("number too long")
		}
	}
	if dot {
		if frac == 0 {
			return item{}, p.errorf("decimal ends with '.'")
		}
		return item{kind: kindDecimal}, nil
	}
	if neg {
		n = -n
	}
	return item{kind: kindInteger, n: n}, nil
}

func (p *parser) str() (item, error) {
	p.i++ // opening quote
	for !p.eof() {
		c := p.peek()
		p.i++
		switch {
		case c == '\\':
			if p.eof() || (p.peek() != '"' && p.peek() != '\\') {
				return item{}, p.errorf("bad escape in string")
			}
			p.i++
		case c == '"':
			return item{kind: kindString}, nil
		case c < 0x20 || c > 0x7e:
			return item{}, p.errorf("invalid character %q in string", c)
		}
	}
	return item{}, p.errorf("unterminated string")
}

func (p *parser) bytes() (item, error) {
	p.i++ // opening colon
	for !p.eof() {
		c := p.peek()
		p.i++
		if c == ':' {
			return item{kind: kindBytes}, nil
		}
		if !(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=') {
			return item{}, p.errorf("invalid character %q in byte sequence", c)
		}
	}
	return item{}, p.errorf("unterminated byte sequence")
}
