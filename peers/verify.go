package peers

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// VerifyFile checks that the file at path holds exactly want, by length and
// SHA-256, and says which differ.
func VerifyFile(path string, want []byte) error {
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d bytes, want %d", path, len(got), len(want))
	}
	if g, w := sha256.Sum256(got), sha256.Sum256(want); g != w {
		at := 0
		for at < len(got) && got[at] == want[at] {
			at++
		}
		return fmt.Errorf("%s: sha256 %x, want %x (first difference at byte %d)", path, g, w, at)
	}
	return nil
}

// RangeOf returns the part of obj a byte range selects ("A-B", "A-" or "-N",
// as in Fetch.Range), and the Content-Range header a server must send with it.
func RangeOf(obj []byte, r string) ([]byte, string, error) {
	a, b, ok := strings.Cut(r, "-")
	if !ok {
		return nil, "", fmt.Errorf("range %q: no '-'", r)
	}
	size := int64(len(obj))
	var first, last int64
	var err error
	switch {
	case a == "" && b == "":
		return nil, "", fmt.Errorf("range %q: no bounds", r)
	case a == "": // the last N bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return nil, "", fmt.Errorf("range %q: bad suffix length", r)
		}
		first, last = max(size-n, 0), size-1
	default:
		if first, err = strconv.ParseInt(a, 10, 64); err != nil || first < 0 {
			return nil, "", fmt.Errorf("range %q: bad first byte", r)
		}
		last = size - 1
		if b != "" {
			if last, err = strconv.ParseInt(b, 10, 64); err != nil || last < first {
				return nil, "", fmt.Errorf("range %q: bad last byte", r)
			}
			last = min(last, size-1)
		}
	}
	if first >= size {
		return nil, "", fmt.Errorf("range %q: not satisfiable for %d bytes", r, size)
	}
	return bytes.Clone(obj[first : last+1]), fmt.Sprintf("bytes %d-%d/%d", first, last, size), nil
}
