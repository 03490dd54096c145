package content

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"123", 123},
		{"123B", 123},
		{"10KB", 10000},
		{"10kb", 10000},
		{"1KiB", 1024},
		{"50MB", 50000000},
		{"1MiB", 1048576},
		{"2GB", 2000000000},
		{"2GiB", 2147483648},
		{"1TB", 1000000000000},
		{"1TiB", 1 << 40},
		{"9223372036854775807", math.MaxInt64},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "MB", "-1", "+1", "1.5MB", "1 MB", "10XB", "10K", "10MBx",
		"9223372036854775808", "9223372036854775807KB", "10000000TiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "123", "10KB", "1MiB", "50MB", "2GiB", "1TiB", "9223372036854775807", "99999999999TB", "1.5MB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSize(s)
		// Reference: digits times unit in arbitrary precision.
		i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if i < 0 {
			i = len(s)
		}
		mult, unitOK := sizeUnits[strings.ToLower(s[i:])]
		if i == 0 || !unitOK {
			if err == nil {
				t.Fatalf("ParseSize(%q) = %d, want an error", s, got)
			}
			return
		}
		n, _ := new(big.Int).SetString(s[:i], 10)
		n.Mul(n, big.NewInt(mult))
		if !n.IsInt64() {
			if err == nil {
				t.Fatalf("ParseSize(%q) = %d, want an overflow error", s, got)
			}
			return
		}
		if err != nil || got != n.Int64() {
			t.Fatalf("ParseSize(%q) = %d, %v; want %d", s, got, err, n.Int64())
		}
	})
}
