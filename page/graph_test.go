package page

import (
	"fmt"
	"github.com/shunt-net/shunt/internal/shared"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pagesDir holds the project's graphs: pReplay's examples and the six
// Table IV pages (GPLv3 data, so not copied into this repository).
var pagesDir, _ = shared.Path("pages")

// pageFiles lists the graphs in pagesDir, none if it is missing.
func pageFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(pagesDir, "*.json"))
	if err != nil || len(files) < 10 {
		t.Logf("want the 10 graphs in %s, found %d (%v)", pagesDir, len(files), err)
	}
	return files
}

// loadShared loads a graph from pagesDir, skipping the test without it.
func loadShared(t *testing.T, name string) *Page {
	t.Helper()
	file := filepath.Join(pagesDir, name)
	if _, err := os.Stat(file); err != nil {
		t.Skipf("needs the project's graphs: %v", err)
	}
	p, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadGraphRealPages(t *testing.T) {
	for _, tv := range TableIV {
		p := loadShared(t, tv.Graph+".json")
		if len(p.Objects) != tv.Resources || p.TotalSize() != tv.Bytes() {
			t.Errorf("%s: %d objects, %d bytes; Table IV: %d, %d", tv.Name, len(p.Objects), p.TotalSize(), tv.Resources, tv.Bytes())
		}
		for _, o := range p.Objects {
			if o.SizeFrom != SizeTableIV || o.Size < 1 {
				t.Errorf("%s: object %s: size %d from %q", tv.Name, o.ID, o.Size, o.SizeFrom)
			}
			if o.MIME == "" || o.MIME == "application/octet-stream" {
				t.Errorf("%s: object %s: MIME %q", tv.Name, o.ID, o.MIME)
			}
		}
	}
}

// TestReadGraphMessyValues checks the real files' oddities by example.
func TestReadGraphMessyValues(t *testing.T) {
	p := loadShared(t, "www.amazon.co.jp_.json")
	types := map[string]bool{}
	for _, a := range p.Activities {
		if a.Kind == Computation {
			types[a.CompType] = true
		}
	}
	// Strings, numbers and null, as recorded.
	for _, want := range []string{"evalhtml", "4", "1", "2", ""} {
		if !types[want] {
			t.Errorf("amazon: no computation of type %q among %v", want, types)
		}
	}
	if p.Load != -1 {
		t.Errorf("amazon: load_activity -1 read as %d", p.Load)
	}
	classes := map[Class]int{}
	for _, o := range p.Objects {
		classes[o.Class]++
	}
	// 4 application/x-javascript + 1 text/javascript.
	if classes[ClassJS] != 5 || classes[ClassHTML] != 3 || classes[ClassJPEG] != 23 {
		t.Errorf("amazon classes %v", classes)
	}
	// pReplay's examples say "download" for a type: the extension decides.
	p = loadShared(t, "test1.json")
	if p.Objects[0].MIME != "application/javascript" || p.Objects[0].SizeFrom != SizeDefault {
		t.Errorf("test1 r1: MIME %q, size from %q", p.Objects[0].MIME, p.Objects[0].SizeFrom)
	}
	c, _ := p.ActivityIndex("r2_c1")
	if p.Activities[c].Time != time.Second {
		t.Errorf("test1 r2_c1: %v, want 1s", p.Activities[c].Time)
	}
}

func TestReadGraphDependencies(t *testing.T) {
	p := loadShared(t, "test2.json")
	var got []string
	for _, d := range p.Deps {
		rule := "done"
		if d.OnStart {
			rule = "start"
		}
		got = append(got, p.Activities[d.From].ID+">"+p.Activities[d.To].ID+":"+rule)
	}
	want := []string{
		"r1_c1>r2_d:start", "r2_c1>r1_c2:done", "r1_c2>r3_d:start", // the file's
		"r1_d>r1_c1:done", "r1_c1>r1_c2:done", "r2_d>r2_c1:done", // implicit
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deps %v, want %v", got, want)
	}
}

// minimal is a valid graph the error cases below break one field at a time.
const minimal = `{"name": "mini", "start_activity": "a_d", "load_activity": "b_d",
 "objs": [
  {"id": "a", "path": "/a.html", "download": {"id": "a_d", "type": "text/html"},
   "comps": [{"id": "a_c1", "type": "evalhtml", "time": 10}]},
  {"id": "b", "path": "/b.js", "download": {"id": "b_d", "type": "text/javascript"}, "comps": []}
 ],
 "deps": [{"id": "dep1", "a1": "a_c1", "a2": "b_d", "time": -1}]}`

func TestReadGraphErrors(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{`"a2": "b_d"`, `"a2": "r9_c1"`, `x.json: deps[0].a2: activity "r9_c1" not found`},
		{`"a1": "a_c1"`, `"a1": "nope"`, `x.json: deps[0].a1: activity "nope" not found`},
		{`"start_activity": "a_d"`, `"start_activity": "zz"`, `x.json: start_activity: activity "zz" not found`},
		{`"load_activity": "b_d"`, `"load_activity": {}`, `x.json: load_activity: want an activity ID, got an object`},
		{`"time": -1}]`, `"time": -1}, {"a1": "b_d", "a2": "a_c1", "time": 0}]`,
			`x.json: deps: dependency cycle a_c1 -> b_d -> a_c1 (deps[0], deps[1])`},
		{`"time": -1}]`, `"time": -1}, {"a1": "b_d", "a2": "b_d", "time": -1}]`, `x.json: deps[1]: activity "b_d" depends on itself`},
		{`"time": -1}]`, `"time": -1}, {"a1": "b_d", "a2": "a_d", "time": -1}]`, `x.json: deps[1]: start activity "a_d" cannot depend on "b_d"`},
		{`"time": -1}]`, `"time": "soon"}]`, `x.json: deps[0].time: want a number, got a string "soon"`},
		{`, "time": -1}]`, `}]`, `x.json: deps[0].time: missing: want < 0 (after a1 completes) or >= 0 (once a1 has started)`},
		{`"deps": [{"id": "dep1", "a1": "a_c1", "a2": "b_d", "time": -1}]`, `"deps": []`,
			`x.json: objs[1].download: activity "b_d" depends on nothing and is not the start activity, so it would never start`},
		{`"id": "b_d"`, `"id": "a_c1"`, `x.json: objs[1].download.id: activity "a_c1" already defined at objs[0].comps[0]`},
		{`"id": "b_d"`, `"id": null`, `x.json: objs[1].download.id: want a non-empty string, got null`},
		{`"time": 10`, `"time": -5`, `x.json: objs[0].comps[0].time: -5 ms out of range (0 to 3600000)`},
		{`"path": "/b.js", `, ``, `x.json: objs[1].path: missing, and no url to take it from`},
		{`"path": "/b.js"`, `"path": "/b c.js"`, `x.json: objs[1].path: "/b c.js": control character or space at byte 2`},
		{`"path": "/b.js"`, `"path": "/b.js", "size": 1.5`, `x.json: objs[1].size: 1.5: want a whole number of bytes, 0 to 1099511627776`},
		{`"comps": []`, `"comps": {}`, `x.json: objs[1].comps: want an array, got an object`},
		{`"objs": [`, `"objz": [`, `x.json: objs: missing`},
		{`{"name"`, `[{"name"`, `x.json: not JSON: unexpected EOF`},
	}
	for _, c := range cases {
		if !strings.Contains(minimal, c.from) {
			t.Fatalf("case %q: minimal graph has no %q", c.want, c.from)
		}
		_, err := ReadGraph("x.json", []byte(strings.Replace(minimal, c.from, c.to, 1)))
		if err == nil || err.Error() != c.want {
			t.Errorf("replacing %s with %s:\n got %v\nwant %s", c.from, c.to, err, c.want)
		}
	}
	if _, err := ReadGraph("x.json", []byte(minimal)); err != nil {
		t.Errorf("minimal graph: %v", err)
	}
}

func TestReadGraphTolerance(t *testing.T) {
	g := strings.NewReplacer(
		`"type": "evalhtml", "time": 10`, `"type": 4, "time": "10.5"`, // number type, time as string
		`"type": "text/javascript"`, `"type": "Application/X-JavaScript; charset=UTF-8"`,
		`"load_activity": "b_d"`, `"load_activity": -1`,
		`"comps": []`, `"comps": null`,
		`"path": "/b.js"`, `"path": "b.js", "size": "777"`,
	).Replace(minimal)
	p, err := ReadGraph("x.json", []byte(g))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Activities[p.Objects[0].Comps[0]]
	b := p.Objects[1]
	if c.CompType != "4" || c.Time != 10500*time.Microsecond || p.Load != -1 ||
		b.MIME != "application/javascript" || b.Path != "/b.js" || b.Size != 777 || b.SizeFrom != SizeExplicit {
		t.Errorf("comp %+v, load %d, object b %+v", c, p.Load, b)
	}
}

func TestMarshalGraphRoundTrip(t *testing.T) {
	files := append(pageFiles(t), "testdata/example.har")
	for _, f := range files {
		p, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := p.MarshalGraph()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ReadGraph(filepath.Base(f), data)
		if err != nil {
			t.Fatalf("%s: reading back: %v", f, err)
		}
		if diff := samePage(p, back); diff != "" {
			t.Errorf("%s: round trip: %s", f, diff)
		}
	}
}

// samePage compares two pages but for where sizes came from (a written
// graph records them all), where things were read (Source, Field) and what
// reading left out (Warnings: a written graph holds only what was kept).
func samePage(a, b *Page) string {
	norm := func(p *Page) Page {
		c := *p
		c.Source, c.Warnings = "", nil
		c.Objects = append([]Object(nil), p.Objects...)
		for i := range c.Objects {
			c.Objects[i].SizeFrom = SizeExplicit
		}
		c.Activities = append([]Activity(nil), p.Activities...)
		for i := range c.Activities {
			c.Activities[i].Field = ""
		}
		c.Deps = append([]Dep(nil), p.Deps...)
		for i := range c.Deps {
			c.Deps[i].Field = ""
		}
		return c
	}
	na, nb := norm(a), norm(b)
	if !reflect.DeepEqual(na, nb) {
		for i := range na.Objects {
			if i < len(nb.Objects) && !reflect.DeepEqual(na.Objects[i], nb.Objects[i]) {
				return fmt.Sprintf("object %+v, read back as %+v", na.Objects[i], nb.Objects[i])
			}
		}
		return "pages differ"
	}
	return ""
}

func TestLoadErrorsNameFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(f, []byte(`{"objs": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(f)
	if err == nil || err.Error() != "bad.json: objs: want an array, got a number" {
		t.Errorf("error %v", err)
	}
}
