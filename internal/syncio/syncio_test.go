package syncio

import (
	"strings"
	"sync"
	"testing"
)

// Concurrent writers each get their whole line in: none is torn or lost.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	w := &Writer{W: &b}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				w.Write([]byte("0123456789\n"))
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if l != "0123456789" {
			t.Fatalf("torn line %q", l)
		}
	}
}
