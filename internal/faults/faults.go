// Package faults keeps the books of fault tests: downloads broken on
// purpose (a connection killed, a server restarted, a path gone) must each
// end either complete and verified (length and SHA-256) or with an error
// that says what happened, never cut short or altered without one.
package faults

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/shunt-net/shunt/content"
)

// Outcome is how one download ended.
type Outcome int

const (
	Verified Outcome = iota // every byte, length and SHA-256 as expected
	Failed                  // an error, after a correct prefix
	Corrupt                 // short or wrong bytes without an error, or wrong bytes at all
)

func (o Outcome) String() string {
	return [...]string{"completed verified", "failed with a clear error", "corrupt"}[o]
}

// Want is the body a download must deliver: Size bytes read by At.
type Want struct {
	Size int64
	At   io.ReaderAt
}

// Gen is the generated object /gen/<size> (content's keystream), or its
// bytes from off on.
func Gen(size, off int64) Want { return Want{Size: size - off, At: genAt(off)} }

type genAt int64

func (g genAt) ReadAt(p []byte, off int64) (int, error) {
	content.GenAt(p, int64(g)+off)
	return len(p), nil
}

// Bytes is a body known in full.
func Bytes(b []byte) Want { return Want{Size: int64(len(b)), At: bytes.NewReader(b)} }

// Tally counts the outcomes of one test's downloads; it logs them when the
// test ends ("faults: NAME: ...") and fails the test on any corrupt one.
type Tally struct {
	mu                                     sync.Mutex
	interrupted, verified, failed, corrupt int
}

// New returns a tally that reports under t's name.
func New(t testing.TB) *Tally {
	ta := &Tally{}
	t.Cleanup(func() {
		ta.mu.Lock()
		defer ta.mu.Unlock()
		t.Logf("faults: %s: %d interrupted, %d completed verified, %d failed with a clear error, %d corrupt",
			t.Name(), ta.interrupted, ta.verified, ta.failed, ta.corrupt)
		if ta.corrupt > 0 {
			t.Errorf("%d downloads delivered wrong or short bodies without an error", ta.corrupt)
		}
	})
	return ta
}

// Interrupted counts a download that a fault hit.
func (ta *Tally) Interrupted() {
	ta.mu.Lock()
	ta.interrupted++
	ta.mu.Unlock()
}

// Read reads body to its end, checks it against want and counts the
// outcome; err is the error the body ended with (nil when verified). A
// failure's error must say something: an empty message counts as corrupt.
func (ta *Tally) Read(body io.Reader, want Want) (Outcome, int64, error) {
	o, n, err := check(body, want)
	ta.Count(o)
	return o, n, err
}

// Count records an outcome judged elsewhere (a whole command's result).
func (ta *Tally) Count(o Outcome) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	switch o {
	case Verified:
		ta.verified++
	case Failed:
		ta.failed++
	default:
		ta.corrupt++
	}
}

// check compares body with want as it arrives.
func check(body io.Reader, want Want) (Outcome, int64, error) {
	got, exp := sha256.New(), sha256.New()
	buf, ref := make([]byte, 64<<10), make([]byte, 64<<10)
	var n int64
	for {
		k, err := body.Read(buf)
		if k > 0 {
			if n+int64(k) > want.Size {
				return Corrupt, n + int64(k), fmt.Errorf("body longer than %d bytes", want.Size)
			}
			if _, rerr := want.At.ReadAt(ref[:k], n); rerr != nil && !errors.Is(rerr, io.EOF) {
				return Corrupt, n, rerr
			}
			if !bytes.Equal(buf[:k], ref[:k]) {
				return Corrupt, n, fmt.Errorf("bytes %d-%d differ from the object", n, n+int64(k)-1)
			}
			got.Write(buf[:k])
			exp.Write(ref[:k])
			n += int64(k)
		}
		switch {
		case err == nil:
			continue
		case err == io.EOF:
			if n != want.Size || !bytes.Equal(got.Sum(nil), exp.Sum(nil)) {
				return Corrupt, n, fmt.Errorf("body ended without an error after %d of %d bytes", n, want.Size)
			}
			return Verified, n, nil
		case err.Error() == "":
			return Corrupt, n, fmt.Errorf("body ended after %d of %d bytes with an empty error", n, want.Size)
		default:
			return Failed, n, err
		}
	}
}
