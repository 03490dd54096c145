// Package testpages loads the shared page graphs for tests, skipping the
// test when the shared data directory is not there.
package testpages

import (
	"testing"

	"github.com/shunt-net/shunt/internal/shared"
	"github.com/shunt-net/shunt/page"
)

// Load reads the graph file name (e.g. "test1.json") from the shared pages.
func Load(t testing.TB, name string) *page.Page {
	t.Helper()
	file, err := shared.Path("pages", name)
	if err != nil {
		t.Skipf("shared pages: %v", err)
	}
	p, err := page.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
