package content

import (
	"fmt"
	"testing"
)

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in                string
		first, last, size int64
		ok                bool
	}{
		{"bytes 0-9/100", 0, 9, 100, true},
		{"bytes 99-99/100", 99, 99, 100, true},
		{"bytes 0-9/*", 0, 9, -1, true},
		{"bytes 0-100/100", 0, 0, 0, false},
		{"bytes */100", 0, 0, 0, false},
		{"bytes 9-0/100", 0, 0, 0, false},
		{"bits 0-9/100", 0, 0, 0, false},
		{"bytes 0-9", 0, 0, 0, false},
		{"bytes -1-9/100", 0, 0, 0, false},
		{"bytes 0-9/100 ", 0, 0, 0, false},
	} {
		first, last, size, err := ParseContentRange(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (first != tc.first || last != tc.last || size != tc.size)) {
			t.Errorf("ParseContentRange(%q) = %d, %d, %d, %v", tc.in, first, last, size, err)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/100", "bytes 0-9/*", "bytes */100", "bytes 9-0/100"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, last, size, err := ParseContentRange(s)
		if err != nil {
			return
		}
		if first < 0 || last < first || (size >= 0 && last >= size) || size < -1 {
			t.Fatalf("%q: accepted %d-%d/%d", s, first, last, size)
		}
		total := "*"
		if size >= 0 {
			total = fmt.Sprint(size)
		}
		canon := fmt.Sprintf("bytes %d-%d/%s", first, last, total)
		f2, l2, s2, err := ParseContentRange(canon)
		if err != nil || f2 != first || l2 != last || s2 != size {
			t.Fatalf("%q -> %q -> %d-%d/%d, %v", s, canon, f2, l2, s2, err)
		}
	})
}
