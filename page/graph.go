package page

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Load reads a page from a file: a HAR file (by a .har extension, or a
// top-level "log" member) or a pReplay/WProf graph. Errors name the file.
func Load(file string) (*Page, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(file)
	if strings.EqualFold(filepath.Ext(file), ".har") || isHAR(data) {
		return ReadHAR(name, data)
	}
	return ReadGraph(name, data)
}

// isHAR reports whether data is a JSON object with a "log" member.
func isHAR(data []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	_, ok := top["log"]
	return ok
}

// ReadGraph parses a pReplay/WProf JSON dependency graph (file names it in
// errors), validates it and assigns sizes to objects that have none: Table
// IV's total for the six pages of the paper, class defaults otherwise (see
// AssignSizes).
//
// It accepts the messy values recorded graphs hold: computation types as
// strings, numbers or null; MIME types in any spelling (or pReplay's
// placeholder "download"); numbers written as strings; load_activity as -1;
// comps null; duplicate dependencies. An explicit object size may be given
// as objs[].size in bytes.
func ReadGraph(file string, data []byte) (*Page, error) {
	p := &Page{Source: file, Load: -1}
	doc, err := decodeJSON(data)
	if err != nil {
		return nil, p.errorf("", "%v", err)
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, p.errorf("", "want a JSON object, got %s", kindOf(doc))
	}
	r := reader{p: p}
	p.Name = r.optString(top, "", "name")
	if p.Name == "" {
		p.Name = strings.TrimSuffix(file, filepath.Ext(file))
	}
	objs := r.array(top, "", "objs", true)
	for i, v := range objs {
		r.object(fmt.Sprintf("objs[%d]", i), v)
	}
	deps := r.array(top, "", "deps", false)
	for i, v := range deps {
		r.dep(fmt.Sprintf("deps[%d]", i), v)
	}
	if r.err != nil {
		return nil, r.err
	}
	p.addImplicitDeps()
	p.Start = r.activityRef(top, "start_activity", true)
	p.Load = r.activityRef(top, "load_activity", false)
	if r.err != nil {
		return nil, r.err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := p.assignSizesByName(); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeJSON decodes one JSON value, keeping numbers as json.Number.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := d.Token(); err == nil {
		return nil, fmt.Errorf("not JSON: data after the top-level value")
	}
	return v, nil
}

// reader walks a decoded graph, keeping the first error.
type reader struct {
	p      *Page
	err    error
	objIDs map[string]string // object id -> the field that defined it
}

func (r *reader) fail(field, format string, args ...any) {
	if r.err == nil {
		r.err = r.p.errorf(field, format, args...)
	}
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// scalarString returns a string or number as text; ok is false otherwise.
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}

// id reads a required identifier: a non-empty string, or a number.
func (r *reader) id(m map[string]any, parent, key string) string {
	v, ok := m[key]
	if !ok {
		r.fail(join(parent, key), "missing")
		return ""
	}
	s, ok := scalarString(v)
	if !ok || s == "" {
		r.fail(join(parent, key), "want a non-empty string, got %s", kindOf(v))
	}
	return s
}

// optString reads an optional string (a number is taken as its text).
func (r *reader) optString(m map[string]any, parent, key string) string {
	v, ok := m[key]
	if !ok || v == nil {
		return ""
	}
	s, ok := scalarString(v)
	if !ok {
		r.fail(join(parent, key), "want a string, got %s", kindOf(v))
	}
	return s
}

// number reads an optional number, also from a numeric string; present is
// false when it is missing or null.
func (r *reader) number(m map[string]any, parent, key string) (f float64, present bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false
	}
	s, ok := scalarString(v)
	if ok {
		var err error
		f, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
		ok = err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	if !ok {
		r.fail(join(parent, key), "want a number, got %s %q", kindOf(v), fmt.Sprint(v))
		return 0, false
	}
	return f, true
}

func (r *reader) array(m map[string]any, parent, key string, required bool) []any {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			r.fail(join(parent, key), "missing")
		}
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.fail(join(parent, key), "want an array, got %s", kindOf(v))
	}
	return a
}

func (r *reader) asObject(field string, v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		r.fail(field, "want an object, got %s", kindOf(v))
	}
	return m
}

// object reads objs[i]: the object, its download and its computations.
func (r *reader) object(field string, v any) {
	m := r.asObject(field, v)
	if m == nil {
		return
	}
	p := r.p
	o := Object{ID: r.id(m, field, "id"), URL: r.optString(m, field, "url"), Host: r.optString(m, field, "host")}
	if prev, dup := r.objIDs[o.ID]; dup {
		r.fail(join(field, "id"), "object %q already defined at %s", o.ID, prev)
	}
	if r.objIDs == nil {
		r.objIDs = map[string]string{}
	}
	r.objIDs[o.ID] = field
	o.Path = r.optString(m, field, "path")
	if o.Path == "" && o.URL != "" {
		if u, err := url.Parse(o.URL); err == nil {
			o.Path = u.EscapedPath()
		}
	}
	if o.Path == "" {
		r.fail(join(field, "path"), "missing, and no url to take it from")
	} else if !strings.HasPrefix(o.Path, "/") {
		o.Path = "/" + o.Path
	}
	if i := strings.IndexFunc(o.Path, func(c rune) bool { return c <= ' ' || c == 0x7f }); i >= 0 {
		r.fail(join(field, "path"), "%q: control character or space at byte %d", o.Path, i)
	}
	if size, ok := r.number(m, field, "size"); ok {
		if size < 0 || size != math.Trunc(size) || size > maxTotal {
			r.fail(join(field, "size"), "%v: want a whole number of bytes, 0 to %d", size, int64(maxTotal))
		}
		o.Size, o.SizeFrom = int64(size), SizeExplicit
	}
	dfield := join(field, "download")
	dv, ok := m["download"]
	if !ok {
		r.fail(dfield, "missing")
		return
	}
	dm := r.asObject(dfield, dv)
	if r.err != nil {
		return
	}
	o.MIME = mimeFor(r.optString(dm, dfield, "type"), o.Path)
	o.Class = ClassOf(o.MIME)
	oi := len(p.Objects)
	di, err := p.addActivity(Activity{ID: r.id(dm, dfield, "id"), Kind: Download, Object: oi, Field: dfield})
	if r.err != nil {
		return
	}
	if err != nil {
		r.err = err
		return
	}
	o.Download = di
	for j, cv := range r.array(m, field, "comps", false) {
		cfield := fmt.Sprintf("%s.comps[%d]", field, j)
		cm := r.asObject(cfield, cv)
		if cm == nil {
			return
		}
		a := Activity{ID: r.id(cm, cfield, "id"), Kind: Computation, Object: oi, Field: cfield}
		a.CompType = r.optString(cm, cfield, "type")
		ms, _ := r.number(cm, cfield, "time") // missing or null: no compute time
		if ms < 0 || ms > maxCompMs {
			r.fail(join(cfield, "time"), "%v ms out of range (0 to %d)", ms, maxCompMs)
		}
		a.Time = msDuration(ms)
		if r.err != nil {
			return
		}
		ci, err := p.addActivity(a)
		if err != nil {
			r.err = err
			return
		}
		o.Comps = append(o.Comps, ci)
	}
	p.Objects = append(p.Objects, o)
}

// activityIndex resolves an activity reference, failing on unknown IDs.
func (r *reader) activityIndex(field, id string) int {
	i, ok := r.p.ActivityIndex(id)
	if !ok && r.err == nil {
		r.fail(field, "activity %q not found", id)
	}
	return i
}

// dep reads deps[i].
func (r *reader) dep(field string, v any) {
	m := r.asObject(field, v)
	if m == nil {
		return
	}
	d := Dep{ID: r.optString(m, field, "id"), Field: field}
	a1, a2 := r.id(m, field, "a1"), r.id(m, field, "a2")
	t, ok := r.number(m, field, "time")
	if !ok {
		r.fail(join(field, "time"), "missing: want < 0 (after a1 completes) or >= 0 (once a1 has started)")
	}
	if r.err != nil {
		return
	}
	d.From = r.activityIndex(join(field, "a1"), a1)
	d.To = r.activityIndex(join(field, "a2"), a2)
	d.Time, d.OnStart = t, t >= 0
	if d.From == d.To && r.err == nil {
		r.fail(field, "activity %q depends on itself", a1)
	}
	r.p.Deps = append(r.p.Deps, d)
}

// activityRef reads start_activity or load_activity: an activity ID, or
// (for load_activity) -1, null or missing for none.
func (r *reader) activityRef(m map[string]any, key string, required bool) int {
	v, ok := m[key]
	s, isScalar := scalarString(v)
	if !ok || v == nil || (!required && s == "-1") {
		if required {
			r.fail(key, "missing")
		}
		return -1
	}
	if !isScalar {
		r.fail(key, "want an activity ID, got %s", kindOf(v))
		return -1
	}
	return r.activityIndex(key, s)
}

// maxCompMs bounds a computation's time: an hour is far beyond any page.
const maxCompMs = 3600 * 1000

// msDuration converts milliseconds to a Duration, to the nanosecond.
func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}
