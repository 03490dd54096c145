// Package page is the page model of shunt's replay: a web page as objects
// (what is downloaded), activities (downloads and computations) and the
// dependencies between activities, as pReplay and WProf describe a page load.
//
// It reads pReplay/WProf JSON graphs (ReadGraph) and HTTP Archive files
// (ReadHAR), writes graphs back (MarshalGraph), and assigns object sizes to
// graphs that record none (AssignSizes, TableIV).
package page

import (
	"fmt"
	"strings"
	"time"
)

// Kind says whether an activity downloads an object or computes on one.
type Kind int

const (
	Download Kind = iota
	Computation
)

func (k Kind) String() string {
	switch k {
	case Download:
		return "download"
	case Computation:
		return "computation"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Where an object's size came from.
const (
	SizeExplicit = "explicit" // the graph or HAR file recorded it
	SizeTableIV  = "table-iv" // the page's Table IV total, split by AssignSizes
	SizeDefault  = "default"  // the per-class default of AssignSizes
)

// Object is one resource of the page.
type Object struct {
	ID   string
	URL  string // as recorded; may be empty
	Host string // as recorded; may be empty
	// Path is the request target the replay sends (the :path of an HTTP/2
	// request, query included, never with spaces): servers look objects up
	// by the request's RequestURI. Objects may share a path.
	Path     string
	MIME     string // normalised (NormalizeMIME), from the path's extension if unrecorded
	Class    Class
	Size     int64  // body bytes
	SizeFrom string // SizeExplicit, SizeTableIV, SizeDefault, or "" while unassigned
	Download int    // index in Page.Activities of the object's download
	Comps    []int  // indices in Page.Activities of its computations, in order
}

// Activity is a download of an object or a computation on it.
type Activity struct {
	ID       string
	Kind     Kind
	Object   int           // index in Page.Objects
	CompType string        // computation type as recorded ("evalhtml", "4"); "" when null
	Time     time.Duration // computation time; 0 for downloads
	Field    string        // where it was read, for errors ("objs[2].comps[0]")
}

// Dep says that activity To depends on activity From.
type Dep struct {
	ID   string
	From int // a1, index in Page.Activities
	To   int // a2
	// OnStart: To may start once From has started (recorded time >= 0);
	// otherwise To may start only once From has completed (time < 0). pReplay
	// once waited Time ms more after From's start; its released version, and
	// shunt, do not.
	OnStart bool
	Time    float64 // recorded time in ms, kept so the graph can be written back
	// Implicit deps are not in the file: every computation depends on the
	// completion of the activity before it on its object (the download for
	// the first), as pReplay adds them.
	Implicit bool
	Field    string // where it was read, for errors ("deps[3]")
}

// Page is a page load's dependency graph.
type Page struct {
	Name       string
	Source     string // file it was read from, for errors
	Objects    []Object
	Activities []Activity
	Deps       []Dep // file deps first, then implicit ones
	Start      int   // activity that starts the load (the root HTML download)
	Load       int   // activity marking the load event, or -1
	// Warnings say what of the input was left out and why (a HAR's aborted
	// requests, data: URLs), for commands to print.
	Warnings []string

	index map[string]int // activity ID -> index
}

// ActivityIndex returns the index of the activity with the given ID.
func (p *Page) ActivityIndex(id string) (int, bool) {
	i, ok := p.index[id]
	return i, ok
}

// TotalSize is the sum of the objects' sizes.
func (p *Page) TotalSize() int64 {
	var n int64
	for i := range p.Objects {
		n += p.Objects[i].Size
	}
	return n
}

// Resource is what a server must hold for a page: one per distinct path.
type Resource struct {
	Path string
	MIME string
	Size int64
}

// Resources lists the page's distinct paths in the order objects first use
// them. Objects that share a path share its size (Validate checks it).
func (p *Page) Resources() []Resource {
	seen := make(map[string]bool)
	var rs []Resource
	for _, o := range p.Objects {
		if seen[o.Path] {
			continue
		}
		seen[o.Path] = true
		rs = append(rs, Resource{Path: o.Path, MIME: o.MIME, Size: o.Size})
	}
	return rs
}

// FieldError is an error in an input file, naming the file and the field.
type FieldError struct {
	File  string
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Field + ": " + e.Msg
}

func (p *Page) errorf(field, format string, args ...any) error {
	return &FieldError{File: p.Source, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// addActivity appends an activity and indexes it; IDs must be unique.
func (p *Page) addActivity(a Activity) (int, error) {
	if p.index == nil {
		p.index = make(map[string]int)
	}
	if j, dup := p.index[a.ID]; dup {
		return 0, p.errorf(a.Field+".id", "activity %q already defined at %s", a.ID, p.Activities[j].Field)
	}
	p.index[a.ID] = len(p.Activities)
	p.Activities = append(p.Activities, a)
	return len(p.Activities) - 1, nil
}

// addImplicitDeps chains each object's computations after its download.
func (p *Page) addImplicitDeps() {
	for _, o := range p.Objects {
		prev := o.Download
		for _, c := range o.Comps {
			p.Deps = append(p.Deps, Dep{
				ID: "implicit:" + p.Activities[c].ID, From: prev, To: c,
				Time: -1, Implicit: true, Field: p.Activities[c].Field,
			})
			prev = c
		}
	}
}

// Validate checks that the graph can be walked to completion: every
// activity but the start has a dependency, the start has none, there is no
// dependency cycle, and objects sharing a path agree on its size.
func (p *Page) Validate() error {
	n := len(p.Activities)
	if p.Start < 0 || p.Start >= n {
		return p.errorf("start_activity", "no start activity")
	}
	if p.Load >= n {
		return p.errorf("load_activity", "activity index %d out of range", p.Load)
	}
	indeg := make([]int, n)
	out := make([][]int, n) // dep indices by From
	for i, d := range p.Deps {
		if d.From < 0 || d.From >= n || d.To < 0 || d.To >= n {
			return p.errorf(d.Field, "activity index out of range")
		}
		if d.To == p.Start {
			return p.errorf(d.Field, "start activity %q cannot depend on %q", p.Activities[d.To].ID, p.Activities[d.From].ID)
		}
		indeg[d.To]++
		out[d.From] = append(out[d.From], i)
	}
	for i, a := range p.Activities {
		if i != p.Start && indeg[i] == 0 {
			return p.errorf(a.Field, "activity %q depends on nothing and is not the start activity, so it would never start", a.ID)
		}
	}
	// Kahn's algorithm: whatever is never freed lies on or behind a cycle.
	left := append([]int(nil), indeg...)
	queue := []int{}
	for i := range left {
		if left[i] == 0 {
			queue = append(queue, i)
		}
	}
	freed := 0
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		freed++
		for _, di := range out[a] {
			t := p.Deps[di].To
			if left[t]--; left[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	if freed < n {
		return p.cycleError(left)
	}
	sizes := make(map[string]int)
	for i, o := range p.Objects {
		if o.SizeFrom == "" {
			continue
		}
		if j, ok := sizes[o.Path]; ok && p.Objects[j].Size != o.Size {
			return p.errorf(fmt.Sprintf("objs[%d].size", i), "%d bytes, but %s (same path %s) has %d", o.Size, p.Objects[j].ID, o.Path, p.Objects[j].Size)
		}
		sizes[o.Path] = i
	}
	return nil
}

// cycleError names one cycle among the activities Kahn's algorithm left.
func (p *Page) cycleError(left []int) error {
	// Every activity left has a predecessor left, so walking predecessors
	// backwards from any of them must revisit one: that closes a cycle.
	pred := make(map[int]int) // activity -> dep index into it from a left activity
	for i, d := range p.Deps {
		if left[d.From] > 0 && left[d.To] > 0 {
			pred[d.To] = i
		}
	}
	var a int
	for a = range left {
		if left[a] > 0 {
			break
		}
	}
	pos := map[int]int{}
	var chain []int // dep indices, walking backwards
	for {
		if _, seen := pos[a]; seen {
			break
		}
		pos[a] = len(chain)
		di := pred[a]
		chain = append(chain, di)
		a = p.Deps[di].From
	}
	chain = chain[pos[a]:]
	// Print it forwards: a1 -> a2 -> ... -> a1, naming the file's deps.
	ids := []string{p.Activities[a].ID}
	var fields []string
	for i := len(chain) - 1; i >= 0; i-- {
		d := p.Deps[chain[i]]
		ids = append(ids, p.Activities[d.To].ID)
		fields = append(fields, d.Field)
	}
	return p.errorf("deps", "dependency cycle %s (%s)", strings.Join(ids, " -> "), strings.Join(fields, ", "))
}
