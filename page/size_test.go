package page

import (
	"slices"
	"strings"
	"testing"
)

// sizedPage is a page of objects with the given paths and classes, for
// AssignSizes; explicit sizes where size > 0.
func sizedPage(objs ...Object) *Page {
	p := &Page{Source: "t.json"}
	for _, o := range objs {
		if o.Size > 0 {
			o.SizeFrom = SizeExplicit
		}
		p.Objects = append(p.Objects, o)
	}
	return p
}

func sizes(p *Page) []int64 {
	var s []int64
	for _, o := range p.Objects {
		s = append(s, o.Size)
	}
	return s
}

func TestAssignSizesProportional(t *testing.T) {
	p := sizedPage(
		Object{Path: "/a", Class: ClassHTML}, // weight 24000
		Object{Path: "/b", Class: ClassGIF},  // 4000
		Object{Path: "/c", Class: ClassPNG},  // 12000
	)
	// W = 40000: 1001 bytes split 600.6, 100.1, 300.3; the one byte left
	// goes to the largest remainder, /a.
	if err := p.AssignSizes(1001); err != nil {
		t.Fatal(err)
	}
	if got := sizes(p); got[0] != 601 || got[1] != 100 || got[2] != 300 {
		t.Errorf("sizes %v, want [601 100 300]", got)
	}
	if p.Objects[0].SizeFrom != SizeTableIV {
		t.Errorf("size from %q", p.Objects[0].SizeFrom)
	}
	if err := p.AssignSizes(0); err != nil {
		t.Fatal(err)
	}
	if got := sizes(p); got[0] != 24000 || got[1] != 4000 || got[2] != 12000 || p.Objects[0].SizeFrom != SizeDefault {
		t.Errorf("default sizes %v from %q", got, p.Objects[0].SizeFrom)
	}
}

func TestAssignSizesSharedPathsAndExplicit(t *testing.T) {
	p := sizedPage(
		Object{Path: "/a", Class: ClassJS},
		Object{Path: "/a", Class: ClassJS},
		Object{Path: "/b", Class: ClassJS},
		Object{Path: "/c", Class: ClassCSS, Size: 500},
		Object{Path: "/c", Class: ClassCSS}, // shares /c's recorded size
	)
	// 10000 - 2*500 recorded = 9000 over /a (x2) and /b, equal weights: 3000 each.
	if err := p.AssignSizes(10000); err != nil {
		t.Fatal(err)
	}
	if got := sizes(p); got[0] != 3000 || got[1] != 3000 || got[2] != 3000 || got[3] != 500 || got[4] != 500 {
		t.Errorf("sizes %v", got)
	}
	// 9001 bytes to split: 3000 each and one left, which only /b can take.
	if err := p.AssignSizes(10001); err != nil {
		t.Fatal(err)
	}
	if got := sizes(p); got[0] != 3000 || got[2] != 3001 {
		t.Errorf("sizes %v", got)
	}
	// Only the shared path left to take an odd byte: no exact split.
	q := sizedPage(Object{Path: "/a", Class: ClassJS}, Object{Path: "/a", Class: ClassJS})
	if err := q.AssignSizes(1001); err == nil {
		t.Errorf("odd total over one shared path: sizes %v, no error", sizes(q))
	}
	if err := p.AssignSizes(999); err == nil {
		t.Error("total below the recorded sizes: no error")
	}
	if err := p.AssignSizes(1002); err == nil {
		t.Error("2 bytes for 3 objects: no error")
	}
}

func TestAssignSizesTableIV(t *testing.T) {
	for _, tv := range TableIV {
		p := loadShared(t, tv.Graph+".json")
		first := sizes(p)
		if err := p.AssignSizes(tv.Bytes()); err != nil {
			t.Fatal(err)
		}
		if got := sizes(p); !slices.Equal(got, first) {
			t.Errorf("%s: sizes not deterministic: %v then %v", tv.Name, first, got)
		}
		// A page's classes order its sizes as their weights do.
		for _, a := range p.Objects {
			for _, b := range p.Objects {
				if classWeight[a.Class] > classWeight[b.Class] && a.Size <= b.Size {
					t.Errorf("%s: %s (%s) %d bytes <= %s (%s) %d", tv.Name, a.ID, a.Class, a.Size, b.ID, b.Class, b.Size)
				}
			}
		}
	}
}

func TestSharedPathSizesMustAgree(t *testing.T) {
	g := strings.NewReplacer(`"path": "/a.html"`, `"path": "/x", "size": 1`, `"path": "/b.js"`, `"path": "/x", "size": 2`).Replace(minimal)
	_, err := ReadGraph("g.json", []byte(g))
	want := `g.json: objs[1].size: 2 bytes, but a (same path /x) has 1`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	// One recorded size is shared with the other object on its path.
	g = strings.NewReplacer(`"path": "/a.html"`, `"path": "/x"`, `"path": "/b.js"`, `"path": "/x", "size": 2`).Replace(minimal)
	p, err := ReadGraph("g.json", []byte(g))
	if err != nil {
		t.Fatal(err)
	}
	if got := sizes(p); got[0] != 2 || got[1] != 2 {
		t.Errorf("sizes %v, want [2 2]", got)
	}
}

func TestTableIVCountMismatch(t *testing.T) {
	g := strings.Replace(minimal, `"name": "mini"`, `"name": "www.google.com.hk_"`, 1)
	_, err := ReadGraph("g.json", []byte(g))
	want := `g.json: objs: 2 objects, but Table IV's Google page (graph "www.google.com.hk_") has 8`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestResources(t *testing.T) {
	p := loadShared(t, "www.mediafire.com_.json")
	rs := p.Resources()
	// Four of the 75 objects share /pages/mediafire.com/cdn.mediafire.com/blank.html/index.html.
	var total int64
	for _, r := range rs {
		total += r.Size
	}
	shared := "/pages/mediafire.com/cdn.mediafire.com/blank.html/index.html"
	var sharedSize int64
	for _, o := range p.Objects {
		if o.Path == shared {
			sharedSize = o.Size
		}
	}
	if want := p.TotalSize() - 3*sharedSize; len(rs) != 72 || total != want {
		t.Errorf("%d resources of %d bytes; want 72 of %d", len(rs), total, want)
	}
}
