package content

import (
	"fmt"
	"math"
	"strings"
)

// Size units accepted by ParseSize: decimal (SI) units are powers of 1000 and
// binary (IEC) units powers of 1024, so /gen/1MB is 1,000,000 bytes and
// /gen/1MiB is 1,048,576. Units are case-insensitive; no unit means bytes.
var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kb":  1000,
	"kib": 1 << 10,
	"mb":  1000 * 1000,
	"mib": 1 << 20,
	"gb":  1000 * 1000 * 1000,
	"gib": 1 << 30,
	"tb":  1000 * 1000 * 1000 * 1000,
	"tib": 1 << 40,
}

// ParseSize parses a size such as "123", "10KB", "1MiB" or "50MB": a decimal
// integer followed by an optional unit (B, KB, KiB, MB, MiB, GB, GiB, TB, TiB).
func ParseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a number then an optional unit (B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)", s)
	}
	mult, ok := sizeUnits[strings.ToLower(s[i:])]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (want B, KB, KiB, MB, MiB, GB, GiB, TB or TiB)", s, s[i:])
	}
	var n int64
	for _, c := range s[:i] {
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("size %q: too large", s)
		}
		n = n*10 + d
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mult, nil
}
