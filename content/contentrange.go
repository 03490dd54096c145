package content

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseContentRange parses "bytes FIRST-LAST/SIZE" (RFC 9110 14.4); SIZE
// "*" is -1.
func ParseContentRange(s string) (first, last, size int64, err error) {
	bad := fmt.Errorf("Content-Range %q: want bytes FIRST-LAST/SIZE", s)
	spec, ok := strings.CutPrefix(s, "bytes ")
	rng, total, ok2 := strings.Cut(spec, "/")
	a, b, ok3 := strings.Cut(rng, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, 0, bad
	}
	num := func(x string) (int64, bool) {
		if x == "" || strings.TrimLeft(x, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	first, ok = num(a)
	last, ok2 = num(b)
	size, ok3 = -1, total == "*"
	if !ok3 {
		size, ok3 = num(total)
	}
	if !ok || !ok2 || !ok3 || last < first || (size >= 0 && last >= size) {
		return 0, 0, 0, bad
	}
	return first, last, size, nil
}
