package pageload

import (
	"testing"
	"time"

	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
)

// A document parsed in two chunks, a style sheet, a script the second
// chunk waits for, a script nothing waits for and an image.
const graph = `{"name": "t", "start_activity": "d0", "load_activity": "d0", "objs": [
 {"id": "r1", "path": "/index.html", "download": {"id": "d0", "type": "text/html"}, "comps": [{"id": "c1", "time": 1}, {"id": "c2", "time": 1}]},
 {"id": "r2", "path": "/a.css", "download": {"id": "d1", "type": "text/css"}, "comps": [{"id": "c3", "time": 1}]},
 {"id": "r3", "path": "/b.js", "download": {"id": "d2", "type": "application/javascript"}, "comps": [{"id": "c4", "time": 1}]},
 {"id": "r4", "path": "/async.js", "download": {"id": "d3", "type": "application/javascript"}, "comps": [{"id": "c5", "time": 1}]},
 {"id": "r5", "path": "/i.jpg", "download": {"id": "d4", "type": "image/jpeg"}, "comps": []}],
 "deps": [
 {"id": "e1", "a1": "c1", "a2": "d1", "time": -1},
 {"id": "e2", "a1": "c1", "a2": "d2", "time": -1},
 {"id": "e3", "a1": "c4", "a2": "c2", "time": -1},
 {"id": "e4", "a1": "c1", "a2": "d3", "time": -1},
 {"id": "e5", "a1": "c2", "a2": "d4", "time": -1}]}`

func TestPageMetrics(t *testing.T) {
	p, err := page.ReadGraph("t.json", []byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	// Every object ready at 10 ms; urgent ones (r1..r3) done at 100, 200,
	// 300 ms; the async script at 900, the image at 1000; the document's
	// last computation ends at 450 ms, the async script's at 950.
	r := &replay.Result{PLT: 1000 * ms}
	for i, done := range []time.Duration{100, 200, 300, 900, 1000} {
		r.Objects = append(r.Objects, replay.ObjectTiming{ID: p.Objects[i].ID, Ready: 10 * ms, Done: done * ms})
	}
	r.Comps = []replay.CompTiming{{Object: "r1", Done: 450 * ms}, {Object: "r4", Done: 950 * ms}, {Object: "r3", Done: 320 * ms}}
	m := pageMetrics(p, r)
	if got := urgentObjects(p); got != "r1,r2,r3" {
		t.Errorf("urgent objects %q, want r1,r2,r3", got)
	}
	want := map[string]float64{"plt": 1, "dcl": 0.45, "last_urgent": 0.3, "urgent_p95": 0.29}
	for k, v := range want {
		if d := m[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
}
