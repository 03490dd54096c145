package browser

import (
	"fmt"
	"time"

	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/site"
)

// Check verifies a browser's load of the site: every object fetched, with
// its body's full length. Resource timing shows sizes but no content, so
// the browser's bytes are checked by length only.
func (s *Site) Check(l Load) error {
	got := map[string]Fetch{}
	for _, f := range l.Objects {
		got[canonical(f.Target)] = f
	}
	for _, o := range s.Objects {
		f, ok := got[canonical(o.URL)]
		if !ok {
			return fmt.Errorf("page %s: the browser did not fetch %s", s.Page.Name, o.URL)
		}
		if f.Bytes != int64(len(o.Body)) {
			return fmt.Errorf("page %s: the browser received %d bytes of %s, want %d", s.Page.Name, f.Bytes, o.URL, len(o.Body))
		}
	}
	return nil
}

// Edges says how much of the graph's download order a browser's load kept.
// An edge is a dependency of one download on the completion of another,
// directly or through computations; the browser kept it if it requested
// the child no earlier than the parent's response ended. Timings show order,
// not cause: a child the browser found without waiting counts as kept when
// its parent happened to end first, so Broken is a lower bound.
type Edges struct {
	Total int `json:"total"`
	Kept  int `json:"kept"`
	// Broken counts the edges not kept by the role of the parent: html
	// (a streaming parser and preload scanner request before the document
	// ends), script, style, image (objects that cannot reference anything:
	// the site hangs their children off the root HTML).
	Broken map[string]int `json:"broken"`
	// GraphDepth is the most downloads on one chain of edges: the rounds
	// (each at least a round trip) the replay needs. BrowserDepth is the
	// same over the kept edges only.
	GraphDepth   int `json:"graph_depth"`
	BrowserDepth int `json:"browser_depth"`
	// Early is the most time the browser requested a child before its
	// parent's response ended.
	Early time.Duration `json:"early_ns"`
}

func (e Edges) String() string {
	return fmt.Sprintf("%d of %d download edges kept (broken by parent: %d html, %d script, %d style, %d image); download depth %d in the graph, %d over the kept edges",
		e.Kept, e.Total, e.Broken["html"], e.Broken["script"], e.Broken["style"], e.Broken["image"], e.GraphDepth, e.BrowserDepth)
}

var roleName = [...]string{roleHTML: "html", roleScript: "script", roleStyle: "style", roleImage: "image"}

// Edges compares the browser's load l of the site with its graph. Objects
// that share a path are one URL to the browser, and are one here.
func (s *Site) Edges(l Load) Edges {
	p := s.Page
	fetched := map[string]Fetch{}
	for _, f := range l.Objects {
		fetched[canonical(f.Target)] = f
	}
	roles := map[string]role{}
	for _, o := range s.Objects {
		roles[canonical(o.URL)] = o.role
	}
	urlOf := func(obj int) string { return canonical(site.URLPath(p.Name, p.Objects[obj].Path)) }
	// into[a]: the downloads activity a waits for, and whether on their
	// completion; computations are looked through.
	type in struct {
		download   int
		completion bool
	}
	memo := map[int][]in{}
	var into func(a int) []in
	into = func(a int) []in {
		if r, ok := memo[a]; ok {
			return r
		}
		memo[a] = nil // Validate ruled out cycles; this only stops re-entry
		var r []in
		for _, d := range p.Deps {
			if d.To != a {
				continue
			}
			if p.Activities[d.From].Kind == page.Download {
				r = append(r, in{d.From, !d.OnStart})
			} else {
				r = append(r, into(d.From)...)
			}
		}
		memo[a] = r
		return r
	}
	e := Edges{Broken: map[string]int{}}
	graphDepth, browserDepth := map[string]int{}, map[string]int{}
	seen := map[[2]string]bool{}
	for _, a := range topoOrder(p) {
		act := p.Activities[a]
		if act.Kind != page.Download {
			continue
		}
		child := urlOf(act.Object)
		g, b := max(graphDepth[child], 1), max(browserDepth[child], 1)
		for _, i := range into(a) {
			parent := urlOf(p.Activities[i.download].Object)
			if parent == child {
				continue
			}
			kept := true
			if i.completion {
				pf, cf := fetched[parent], fetched[child]
				kept = cf.Request >= pf.Done
				if k := [2]string{parent, child}; !seen[k] {
					seen[k] = true
					e.Total++
					if kept {
						e.Kept++
					} else {
						e.Broken[roleName[roles[parent]]]++
						e.Early = max(e.Early, pf.Done-cf.Request)
					}
				}
			}
			// A round more after a completion; none after a start, or
			// after a completion the browser did not wait for.
			inc := 0
			if i.completion {
				inc = 1
			}
			g = max(g, graphDepth[parent]+inc)
			if !kept {
				inc = 0
			}
			b = max(b, browserDepth[parent]+inc)
		}
		graphDepth[child], browserDepth[child] = g, b
		e.GraphDepth, e.BrowserDepth = max(e.GraphDepth, g), max(e.BrowserDepth, b)
	}
	return e
}

// ObjectIndex is the index in s.Page.Objects of the first object a request
// for target fetches; -1 if none.
func (s *Site) ObjectIndex(target string) int {
	t := canonical(target)
	for i, o := range s.Page.Objects {
		if canonical(site.URLPath(s.Page.Name, o.Path)) == t {
			return i
		}
	}
	return -1
}
