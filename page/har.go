package page

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The parts of an HTTP Archive 1.2 file that ReadHAR uses.
type (
	harFile struct {
		Log struct {
			Pages []struct {
				ID string `json:"id"`
			} `json:"pages"`
			Entries []harEntry `json:"entries"`
		} `json:"log"`
	}
	harEntry struct {
		Pageref         string             `json:"pageref"`
		StartedDateTime string             `json:"startedDateTime"`
		Time            float64            `json:"time"` // ms, the sum of timings
		Timings         map[string]float64 `json:"timings"`
		Request         *struct {
			URL string `json:"url"`
		} `json:"request"`
		Response *struct {
			Status  int `json:"status"`
			Content struct {
				Size     float64 `json:"size"`
				MimeType string  `json:"mimeType"`
			} `json:"content"`
			BodySize     float64  `json:"bodySize"`
			HeadersSize  float64  `json:"headersSize"`
			TransferSize *float64 `json:"_transferSize"` // Chrome
		} `json:"response"`
		Initiator json.RawMessage `json:"_initiator"` // Chrome: object; WebPageTest: URL string
	}
	// harInitiator is Chrome's _initiator: a parser's document URL, or a
	// script's call stack.
	harInitiator struct {
		Type  string    `json:"type"`
		URL   string    `json:"url"`
		Stack *harStack `json:"stack"`
	}
	harStack struct {
		CallFrames []struct {
			URL string `json:"url"`
		} `json:"callFrames"`
		Parent *harStack `json:"parent"`
	}
)

// harObject is an entry being turned into an object.
type harObject struct {
	field      string // log.entries[i]
	url        *url.URL
	start, end time.Time
	size       int64
	mime       string
	initiator  string // URL, or "" for none
	parent     int    // index into the sorted objects; -1 for the root
}

// ReadHAR builds a page from an HTTP Archive 1.2 file (file names it in
// errors), so a user can replay a page they recorded:
//
//   - Objects are the entries of the first page (all entries if none name a
//     page), in startedDateTime order; entries that are not http(s) or got no
//     response (status 0) are left out. The first is the start activity.
//   - Size is response.bodySize (the body's bytes on the wire), else
//     _transferSize less headersSize, else content.size: the server serves
//     bodies unencoded, so the wire size is what loads the link.
//   - Each object depends on the earlier entry its _initiator names (Chrome's
//     parser URL or the first URL on a script's stack; WebPageTest's URL
//     string), or on the root document if it names none that was loaded.
//   - Computation gaps: the time from a parent's completion (startedDateTime
//   - time) to a child's startedDateTime, in whole ms, is computation on
//     the parent. A parent's children with distinct gaps g1 < g2 < ... get a
//     chain of computations of g1, g2-g1, ... ms, each child depending on the
//     end of its gap (children with no gap depend on the download itself).
//     A child that started before its parent completed (a streaming parser)
//     is given no gap, so the replay starts it later than the recording did.
//   - Objects get distinct paths /host/path; a repeated one gets ~2, ~3, ...
func ReadHAR(file string, data []byte) (*Page, error) {
	p := &Page{Source: file, Load: -1, Name: strings.TrimSuffix(file, filepath.Ext(file))}
	var h harFile
	if err := json.Unmarshal(data, &h); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, p.errorf(te.Field, "want %s, got %s", te.Type, te.Value)
		}
		return nil, p.errorf("", "not a HAR file: %v", err)
	}
	objs, err := p.harObjects(&h)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, p.errorf("log.entries", "no http(s) entries with a response")
	}
	if err := p.harGraph(objs); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// harObjects selects, parses and sorts the entries.
func (p *Page) harObjects(h *harFile) ([]*harObject, error) {
	pageID := ""
	if len(h.Log.Pages) > 0 {
		pageID = h.Log.Pages[0].ID
	}
	var objs []*harObject
	for i, e := range h.Log.Entries {
		field := fmt.Sprintf("log.entries[%d]", i)
		if pageID != "" && e.Pageref != "" && e.Pageref != pageID {
			continue
		}
		switch {
		case e.Request == nil:
			return nil, p.errorf(field+".request", "missing")
		case e.Request.URL == "":
			return nil, p.errorf(field+".request.url", "missing")
		case e.Response == nil:
			return nil, p.errorf(field+".response", "missing")
		}
		u, err := url.Parse(e.Request.URL)
		if err != nil {
			return nil, p.errorf(field+".request.url", "%v", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %s URL left out (not http or https)", field, u.Scheme))
			continue
		}
		if e.Response.Status == 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %s left out: no response (status 0, an aborted or blocked request)", field, e.Request.URL))
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		start, err := time.Parse(time.RFC3339Nano, e.StartedDateTime)
		if err != nil {
			return nil, p.errorf(field+".startedDateTime", "%q: want an ISO 8601 time", e.StartedDateTime)
		}
		total := e.Time
		if total <= 0 {
			for _, t := range e.Timings {
				total += max(t, 0) // -1: not applicable
			}
		}
		if math.IsNaN(total) || total < 0 || total > 1e9 {
			return nil, p.errorf(field+".time", "%v ms out of range", total)
		}
		o := &harObject{field: field, url: u, start: start, end: start.Add(msDuration(total)),
			mime: e.Response.Content.MimeType, parent: -1}
		switch ts := e.Response.TransferSize; {
		case e.Response.BodySize > 0:
			o.size = int64(e.Response.BodySize)
		case ts != nil && *ts > 0 && e.Response.HeadersSize >= 0 && *ts > e.Response.HeadersSize:
			o.size = int64(*ts - e.Response.HeadersSize)
		case e.Response.Content.Size > 0:
			o.size = int64(e.Response.Content.Size)
		}
		if o.size > maxTotal {
			return nil, p.errorf(field+".response", "size %d bytes out of range", o.size)
		}
		if o.initiator, err = harInitiatorURL(e.Initiator); err != nil {
			return nil, p.errorf(field+"._initiator", "%v", err)
		}
		objs = append(objs, o)
	}
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].start.Before(objs[j].start) })
	return objs, nil
}

// harInitiatorURL returns the URL an _initiator names, or "".
func harInitiatorURL(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var in harInitiator
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("want a URL or an object with url or stack: %v", err)
	}
	if in.URL != "" {
		return in.URL, nil
	}
	for st, depth := in.Stack, 0; st != nil && depth < 1000; st, depth = st.Parent, depth+1 {
		for _, f := range st.CallFrames {
			if f.URL != "" {
				return f.URL, nil
			}
		}
	}
	return "", nil
}

// harGraph turns the sorted entries into objects, activities and deps.
func (p *Page) harGraph(objs []*harObject) error {
	first := make(map[string]int) // URL -> first object with it
	paths := make(map[string]bool)
	children := make([][]int, len(objs))
	for i, h := range objs {
		key := h.url.String()
		if _, ok := first[key]; !ok {
			first[key] = i
		}
		if i > 0 {
			h.parent = 0
			if j, ok := first[strings.SplitN(h.initiator, "#", 2)[0]]; ok && j < i {
				h.parent = j
			}
			children[h.parent] = append(children[h.parent], i)
		}
		path := "/" + h.url.Host + h.url.EscapedPath()
		if h.url.RawQuery != "" {
			path += "?" + h.url.RawQuery
		}
		for n, base := 2, path; paths[path]; n++ {
			path = fmt.Sprintf("%s~%d", base, n)
		}
		paths[path] = true
		mime := mimeFor(h.mime, h.url.Path)
		p.Objects = append(p.Objects, Object{ID: fmt.Sprintf("r%d", i+1), URL: key, Host: h.url.Host, Path: path,
			MIME: mime, Class: ClassOf(mime), Size: h.size, SizeFrom: SizeExplicit})
	}
	// Activities object by object, as a graph lists them; a parent comes
	// before its children, so each child's dependency is known in time.
	after := make([]int, len(objs)) // activity each object's download waits for
	for i := range objs {
		if err := p.harActivities(i, objs, children[i], after); err != nil {
			return err
		}
	}
	for k := 1; k < len(objs); k++ {
		p.Deps = append(p.Deps, Dep{ID: fmt.Sprintf("dep%d", k), From: after[k], To: p.Objects[k].Download,
			Time: -1, Field: objs[k].field + "._initiator"})
	}
	p.Start = 0
	p.addImplicitDeps()
	return nil
}

// harActivities adds object i's download and the computations that separate
// its completion from the starts of its children, and records in after
// which activity each child waits for.
func (p *Page) harActivities(i int, objs []*harObject, kids []int, after []int) error {
	o := &p.Objects[i]
	// IDs r<n>_d and r<n>_c<m> are unique by construction.
	from, _ := p.addActivity(Activity{ID: o.ID + "_d", Kind: Download, Object: i, Field: objs[i].field})
	o.Download = from
	var gapDone time.Duration // end of the last computation, after completion
	for _, k := range kids {
		gap := objs[k].start.Sub(objs[i].end).Round(time.Millisecond)
		if gap > maxCompMs*time.Millisecond {
			return p.errorf(objs[k].field+".startedDateTime", "starts %v after its initiator %s completed: more than the %v a computation may take",
				gap, objs[i].field, maxCompMs*time.Millisecond)
		}
		if gap > gapDone {
			from, _ = p.addActivity(Activity{ID: fmt.Sprintf("%s_c%d", o.ID, len(o.Comps)+1), Kind: Computation, Object: i,
				CompType: compType(o.Class), Time: gap - gapDone, Field: objs[i].field})
			o.Comps = append(o.Comps, from)
			gapDone = gap
		}
		after[k] = from
	}
	return nil
}

// compType names a computation on a class the way WProf graphs do.
func compType(c Class) string {
	switch c {
	case ClassHTML:
		return "evalhtml"
	case ClassCSS:
		return "evalcss"
	case ClassJS:
		return "evaljs"
	}
	return "compute"
}
