package replay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shunt-net/shunt/internal/shared"
	"github.com/shunt-net/shunt/page"
)

// FuzzWalk walks every graph page.ReadGraph accepts, on a slow and a fast
// link, and checks each activity ran once, when its dependencies allowed.
func FuzzWalk(f *testing.F) {
	pagesDir, _ := shared.Path("pages")
	files, err := filepath.Glob(filepath.Join(pagesDir, "*.json"))
	if err != nil || len(files) == 0 {
		f.Skipf("needs the project's graphs in %s: %v", pagesDir, err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, slots uint8, compute bool) {
		p, err := page.ReadGraph("f.json", data)
		if err != nil {
			return
		}
		l := testLink
		l.slots = int(slots%8) + 1
		checkWalk(t, simulate(t, p, l, Options{Compute: compute}))
	})
}
