package page

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestReadHARExample checks testdata/example.har, a hand-written Chrome
// export, against what its entries say:
//
//	r1 https://example.com/            0-100 ms, initiates app.js (at 100), style.css (120), ad.gif (400)
//	r2 https://cdn.example.com/app.js  100-180 (time 0: the timings sum to 80), initiates logo (215), style.css again (500)
//	r3 https://example.com/style.css   120-170, initiates the font (170)
//	r4 font.woff2, r5 logo.png, r6 ad.gif (initiator "other": the root), r7 style.css again
//
// and leaves out the data: URL, the status-0 beacon and page_2's entry.
func TestReadHARExample(t *testing.T) {
	p, err := Load("testdata/example.har")
	if err != nil {
		t.Fatal(err)
	}
	type obj struct {
		path, mime string
		size       int64
	}
	var objs []obj
	for _, o := range p.Objects {
		objs = append(objs, obj{o.Path, o.MIME, o.Size})
	}
	want := []obj{
		{"/example.com/", "text/html", 12000},                            // bodySize
		{"/cdn.example.com/app.js?v=2", "application/javascript", 30000}, // _transferSize - headersSize
		{"/example.com/style.css", "text/css", 8000},
		{"/example.com/font.woff2", "font/woff2", 20000},
		{"/cdn.example.com/img/logo.png", "image/png", 5000}, // content.size: bodySize 0 (cached)
		{"/other.example/ad.gif", "image/gif", 43},
		{"/example.com/style.css~2", "text/css", 8000},
	}
	if !reflect.DeepEqual(objs, want) {
		t.Errorf("objects\n got %v\nwant %v", objs, want)
	}
	var comps []string
	for _, a := range p.Activities {
		if a.Kind == Computation {
			comps = append(comps, fmt.Sprintf("%s %s %v", a.ID, a.CompType, a.Time))
		}
	}
	// Root: gaps 0 (app.js), 20 (style.css), 300 (ad.gif) after its end at 100.
	// app.js: gaps 35 (logo) and 320 (style.css again) after its end at 180.
	wantComps := []string{"r1_c1 evalhtml 20ms", "r1_c2 evalhtml 280ms", "r2_c1 evaljs 35ms", "r2_c2 evaljs 285ms"}
	if !reflect.DeepEqual(comps, wantComps) {
		t.Errorf("computations\n got %v\nwant %v", comps, wantComps)
	}
	var deps []string
	for _, d := range p.Deps {
		if !d.Implicit {
			deps = append(deps, p.Activities[d.From].ID+">"+p.Activities[d.To].ID)
		}
	}
	wantDeps := []string{"r1_d>r2_d", "r1_c1>r3_d", "r3_d>r4_d", "r2_c1>r5_d", "r1_c2>r6_d", "r2_c2>r7_d"}
	if !reflect.DeepEqual(deps, wantDeps) {
		t.Errorf("dependencies\n got %v\nwant %v", deps, wantDeps)
	}

	// The graph it writes, for review.
	graph, err := p.MarshalGraph()
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/example.har.graph.json"
	if *update {
		if err := os.WriteFile(golden, append(graph, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantGraph, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(graph, '\n'), wantGraph) {
		t.Errorf("graph differs from %s (go test -update rewrites it):\n%s", golden, graph)
	}
}

// A WebPageTest export: _initiator is a URL string, there are no pages,
// and an initiator that was never loaded falls back to the root.
const wptHAR = `{"log": {"entries": [
 {"startedDateTime": "2024-05-01T10:00:00Z", "time": 100, "request": {"url": "http://a.test/"},
  "response": {"status": 200, "bodySize": 1000, "headersSize": 100, "content": {"size": 1000, "mimeType": "text/html"}}},
 {"startedDateTime": "2024-05-01T10:00:00.150+00:00", "time": 10, "request": {"url": "http://a.test/x.js"},
  "response": {"status": 200, "bodySize": 200, "headersSize": 100, "content": {"size": 200, "mimeType": "text/javascript"}},
  "_initiator": "http://a.test/"},
 {"startedDateTime": "2024-05-01T10:00:00.160Z", "time": 10, "request": {"url": "http://a.test/y.png"},
  "response": {"status": 200, "bodySize": 300, "headersSize": 100, "content": {"size": 300, "mimeType": "image/png"}},
  "_initiator": "http://elsewhere.test/never-loaded.js"}
]}}`

func TestReadHARWebPageTest(t *testing.T) {
	p, err := ReadHAR("wpt.har", []byte(wptHAR))
	if err != nil {
		t.Fatal(err)
	}
	var deps []string
	for _, d := range p.Deps {
		deps = append(deps, fmt.Sprintf("%s>%s", p.Activities[d.From].ID, p.Activities[d.To].ID))
	}
	// Root ends at 100: x.js 50 ms later, y.png 60 ms later.
	want := []string{"r1_c1>r2_d", "r1_c2>r3_d", "r1_d>r1_c1", "r1_c1>r1_c2"}
	if !reflect.DeepEqual(deps, want) {
		t.Errorf("deps %v, want %v", deps, want)
	}
	if c := p.Activities[p.Objects[0].Comps[1]]; c.Time != 10*time.Millisecond {
		t.Errorf("second gap %v, want 10ms", c.Time)
	}
	if p.Name != "wpt" {
		t.Errorf("name %q", p.Name)
	}
}

func TestReadHARErrors(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{`"2024-05-01T10:00:00Z"`, `"yesterday"`, `h.har: log.entries[0].startedDateTime: "yesterday": want an ISO 8601 time`},
		{`"bodySize": 1000`, `"bodySize": "big"`, `h.har: log.entries.response.bodySize: want float64, got string`},
		{`"_initiator": "http://a.test/"`, `"_initiator": 7`, `h.har: log.entries[1]._initiator: want a URL or an object with url or stack: json: cannot unmarshal number into Go value of type page.harInitiator`},
		{`"time": 100`, `"time": 1e12`, `h.har: log.entries[0].time: 1e+12 ms out of range`},
		{`{"log": {"entries": [`, `{"log": {"entries": [], "x": [`, `h.har: log.entries: no http(s) entries with a response`},
		{`"url": "http://a.test/"}`, `"url": "http://a test/"}`, `h.har: log.entries[0].request.url: parse "http://a test/": invalid character " " in host name`},
	}
	for _, c := range cases {
		if !strings.Contains(wptHAR, c.from) {
			t.Fatalf("case %q: HAR has no %q", c.want, c.from)
		}
		_, err := ReadHAR("h.har", []byte(strings.Replace(wptHAR, c.from, c.to, 1)))
		if err == nil || err.Error() != c.want {
			t.Errorf("replacing %s with %s:\n got %v\nwant %s", c.from, c.to, err, c.want)
		}
	}
}
