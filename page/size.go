package page

import (
	"fmt"
	"sort"
)

// TableIVPage is one of the six median pages of multistreaming-web.md's
// Table IV, with the graph that holds it.
type TableIVPage struct {
	Name      string // as the paper names it
	Graph     string // the graph's "name"; the file is Graph + ".json"
	Resources int
	SizeKB    int64 // KB of 1000 bytes, as content.ParseSize counts them
}

// Bytes is the page's total size.
func (t TableIVPage) Bytes() int64 { return t.SizeKB * 1000 }

// TableIV lists the paper's pages from smallest to largest.
var TableIV = []TableIVPage{
	{"Google", "www.google.com.hk_", 8, 74},
	{"Dmm", "www.dmm.co.jp_", 21, 330},
	{"Siteadvisor", "www.siteadvisor.com_", 40, 701},
	{"Amazon", "www.amazon.co.jp_", 53, 977},
	{"Pinterest", "pinterest.com_", 6, 1548},
	{"Mediafire", "www.mediafire.com_", 75, 2474},
}

// LookupTableIV finds a Table IV page by its graph name.
func LookupTableIV(graph string) (TableIVPage, bool) {
	for _, t := range TableIV {
		if t.Graph == graph {
			return t, true
		}
	}
	return TableIVPage{}, false
}

// classWeight is each class's default size in bytes, and so also its weight
// when a page total is split. The values are shunt's assumption of typical
// relative sizes (scripts and documents larger than style sheets, photos
// larger than icons, GIFs mostly spacers), not measurements: the graphs
// record no sizes, and only each page's total and count are known.
var classWeight = map[Class]int64{
	ClassHTML:  24000,
	ClassCSS:   16000,
	ClassJS:    24000,
	ClassJPEG:  20000,
	ClassPNG:   12000,
	ClassGIF:   4000,
	ClassImage: 12000,
	ClassFont:  24000,
	ClassFlash: 40000,
	ClassOther: 12000,
}

// maxTotal keeps total*weight within int64.
const maxTotal = 1 << 40

// sizeGroup is the objects without a recorded size that share one path.
type sizeGroup struct {
	objs   []int
	weight int64
	size   int64
	rem    int64 // remainder of the proportional split, for rounding
}

// AssignSizes gives a size to every object whose size was not recorded
// (SizeFrom != SizeExplicit). With total > 0 the recorded sizes are taken
// from total and the rest is split in proportion to the objects' class
// weights: object i gets floor(rest*w_i/W), and the bytes left by rounding
// go one each to the objects with the largest remainders (first object on
// ties), so the sizes sum to total exactly. With total <= 0 each object gets
// its class's default size. Objects sharing a path get one size, that of
// the path's first object's class (or its recorded size).
func (p *Page) AssignSizes(total int64) error {
	var groups []*sizeGroup
	byPath := make(map[string]*sizeGroup)
	fixed := make(map[string]int64) // recorded sizes by path
	var recorded int64
	for _, o := range p.Objects {
		if o.SizeFrom == SizeExplicit {
			fixed[o.Path] = o.Size
			recorded += o.Size
		}
	}
	for i, o := range p.Objects {
		if o.SizeFrom == SizeExplicit {
			continue
		}
		if s, ok := fixed[o.Path]; ok {
			// Shares a path with a recorded object: same bytes on the server.
			p.Objects[i].Size, p.Objects[i].SizeFrom = s, SizeExplicit
			recorded += s
			continue
		}
		g := byPath[o.Path]
		if g == nil {
			g = &sizeGroup{weight: classWeight[o.Class]}
			byPath[o.Path] = g
			groups = append(groups, g)
		}
		g.objs = append(g.objs, i)
	}
	from := SizeDefault
	if total > 0 {
		if total > maxTotal {
			return p.errorf("", "page total %d bytes is more than %d", total, int64(maxTotal))
		}
		rest := total - recorded
		if rest < 0 {
			return p.errorf("", "page total %d bytes is less than the %d bytes recorded", total, recorded)
		}
		if err := splitSizes(groups, rest); err != nil {
			return p.errorf("", "page total %d bytes: %v", total, err)
		}
		from = SizeTableIV
	} else {
		for _, g := range groups {
			g.size = g.weight
		}
	}
	for _, g := range groups {
		for _, i := range g.objs {
			p.Objects[i].Size, p.Objects[i].SizeFrom = g.size, from
		}
	}
	return nil
}

// splitSizes divides rest bytes among the groups (each object of a group
// gets the group's size) in proportion to weight, rounding as AssignSizes
// describes.
func splitSizes(groups []*sizeGroup, rest int64) error {
	var W int64
	for _, g := range groups {
		W += int64(len(g.objs)) * g.weight
	}
	if W == 0 {
		return nil
	}
	left := rest
	for _, g := range groups {
		g.size, g.rem = rest*g.weight/W, rest*g.weight%W
		left -= int64(len(g.objs)) * g.size
	}
	byRem := append([]*sizeGroup(nil), groups...)
	sort.SliceStable(byRem, func(i, j int) bool { return byRem[i].rem > byRem[j].rem })
	// A shared path takes one byte per object; one pass over the largest
	// remainders suffices unless only shared paths are left to take bytes.
	for left > 0 {
		gave := false
		for _, g := range byRem {
			if n := int64(len(g.objs)); n <= left {
				g.size++
				left -= n
				gave = true
			}
			if left == 0 {
				break
			}
		}
		if !gave {
			return fmt.Errorf("%d bytes left over for objects that share paths", left)
		}
	}
	for _, g := range groups {
		if g.size < 1 {
			return fmt.Errorf("%d bytes are too few for %d paths", rest, len(groups))
		}
	}
	return nil
}

// assignSizesByName applies Table IV's total to a Table IV page (checking
// its resource count) and class defaults to any other page.
func (p *Page) assignSizesByName() error {
	t, ok := LookupTableIV(p.Name)
	if !ok {
		return p.AssignSizes(0)
	}
	if len(p.Objects) != t.Resources {
		return p.errorf("objs", "%d objects, but Table IV's %s page (graph %q) has %d", len(p.Objects), t.Name, t.Graph, t.Resources)
	}
	return p.AssignSizes(t.Bytes())
}

func (t TableIVPage) String() string {
	return fmt.Sprintf("%s (%d objects, %d KB)", t.Name, t.Resources, t.SizeKB)
}
