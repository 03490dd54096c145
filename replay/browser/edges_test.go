package browser

import (
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/page"
)

// chainGraph: the HTML's parse (r1_c1) needs script r2 to have run; image
// r3 hangs off the parse's end, image r4 off its start.
const chainGraph = `{"name": "chain", "objs": [
 {"id": "r1", "path": "/index.html", "download": {"id": "r1_d", "type": "download"},
  "comps": [{"id": "r1_c1", "type": "evalhtml", "time": 5}]},
 {"id": "r2", "path": "/a.js", "download": {"id": "r2_d", "type": "download"},
  "comps": [{"id": "r2_c1", "type": "evaljs", "time": 5}]},
 {"id": "r3", "path": "/b.png", "download": {"id": "r3_d", "type": "download"}, "comps": []},
 {"id": "r4", "path": "/c.png", "download": {"id": "r4_d", "type": "download"}, "comps": []}],
 "deps": [
  {"id": "d1", "a1": "r1_d", "a2": "r2_d", "time": -1},
  {"id": "d2", "a1": "r2_c1", "a2": "r1_c1", "time": -1},
  {"id": "d3", "a1": "r1_c1", "a2": "r3_d", "time": -1},
  {"id": "d4", "a1": "r1_c1", "a2": "r4_d", "time": 0}],
 "start_activity": "r1_d"}`

func chainSite(t *testing.T) *Site {
	t.Helper()
	p, err := page.ReadGraph("chain.json", []byte(chainGraph))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AssignSizes(40000); err != nil {
		t.Fatal(err)
	}
	s, err := Build(p, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loadOf is a browser load of s with each object's request and end times
// (ms) by path.
func loadOf(s *Site, times map[string][2]int) Load {
	var l Load
	for _, o := range s.Objects {
		path := o.URL[strings.LastIndex(o.URL, "/"):]
		tm := times[path]
		l.Objects = append(l.Objects, Fetch{Target: o.URL, Request: time.Duration(tm[0]) * time.Millisecond,
			Done: time.Duration(tm[1]) * time.Millisecond, Bytes: int64(len(o.Body))})
	}
	return l
}

func TestEdgesKeptAndBroken(t *testing.T) {
	s := chainSite(t)
	// Edges on completion: r1 -> r2, and r1 -> r3, r2 -> r3, r1 -> r4,
	// r2 -> r4 through the parse: r4 waits only for the parse's start, but
	// that waits for r1's download and r2's run.
	inOrder := loadOf(s, map[string][2]int{"/index.html": {0, 100}, "/a.js": {100, 200}, "/b.png": {200, 300}, "/c.png": {200, 300}})
	e := s.Edges(inOrder)
	if e.Total != 5 || e.Kept != 5 || e.GraphDepth != 3 || e.BrowserDepth != 3 {
		t.Errorf("a load in the graph's order: %+v, want 5 of 5 edges kept, depth 3 and 3", e)
	}
	// A preload scanner: the images requested while the HTML streams in,
	// before the script ran.
	scanned := loadOf(s, map[string][2]int{"/index.html": {0, 100}, "/a.js": {100, 200}, "/b.png": {50, 250}, "/c.png": {60, 260}})
	e = s.Edges(scanned)
	if e.Total != 5 || e.Kept != 1 || e.Broken["html"] != 2 || e.Broken["script"] != 2 {
		t.Errorf("preloaded images: %+v, want 1 of 5 kept, 2 broken on the html and 2 on the script", e)
	}
	if e.GraphDepth != 3 || e.BrowserDepth != 2 {
		t.Errorf("preloaded images: depth %d and %d, want 3 in the graph and 2 kept", e.GraphDepth, e.BrowserDepth)
	}
	if e.Early != 150*time.Millisecond {
		t.Errorf("earliest request %v before its parent's end, want 150ms (b.png at 50 ms, a.js done at 200 ms)", e.Early)
	}
}

func TestCheckLengths(t *testing.T) {
	s := chainSite(t)
	l := loadOf(s, nil)
	if err := s.Check(l); err != nil {
		t.Fatalf("a complete load: %v", err)
	}
	short := loadOf(s, nil)
	short.Objects[1].Bytes--
	if err := s.Check(short); err == nil || !strings.Contains(err.Error(), "received") {
		t.Errorf("a short body: %v, want an error naming the bytes received", err)
	}
	missing := loadOf(s, nil)
	missing.Objects = missing.Objects[:len(missing.Objects)-1]
	if err := s.Check(missing); err == nil || !strings.Contains(err.Error(), "did not fetch") {
		t.Errorf("a missing object: %v, want an error naming it", err)
	}
}
