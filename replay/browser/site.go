// Package browser turns a page graph into a site a real browser loads, and
// drives headless Chromium to load it, so the replay's page load time can be
// set beside a browser's on the same link.
//
// The site (Build) keeps the graph's objects, paths and sizes: each
// download's object is referenced by the object its dependency comes from
// (its parent): the root HTML holds tags for its children, scripts create
// elements for theirs, style sheets @import style sheets and name the rest in
// url()s; other objects cannot reference anything, so their children hang off
// the root HTML's end. Computations become busy loops
// (while (performance.now() < t) {}) in the HTML or script they belong to,
// placed between the references that depend on them. Text objects are padded
// with a comment to their size; images are a 1x1 GIF padded with bytes.
package browser

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/site"
)

// role is what an object is to the browser, which decides how it is made
// and referenced.
type role int

const (
	roleHTML   role = iota // a document: the root, or an iframe
	roleScript             // executed: busy loops and inserted elements
	roleStyle              // a style sheet: @import and url()
	roleImage              // anything else, fetched as an image
)

func roleOf(c page.Class) role {
	switch c {
	case page.ClassHTML:
		return roleHTML
	case page.ClassJS:
		return roleScript
	case page.ClassCSS:
		return roleStyle
	}
	return roleImage
}

var roleMIME = [...]string{roleHTML: "text/html; charset=utf-8", roleScript: "text/javascript", roleStyle: "text/css", roleImage: "image/gif"}

// child is a reference from one resource to another, made after the
// parent's computation Step (-1: as soon as the parent is parsed).
type child struct {
	url  string
	role role
	step int
}

// node is one distinct path of the page.
type node struct {
	url      string
	role     role
	size     int64
	comps    []time.Duration // the computations of the first object with this path
	children []child
}

// Object is a generated object: its body and what it stands for.
type Object struct {
	URL  string // request target, site.URLPath of the object's path
	MIME string
	Body []byte
	// Size is the graph's size; Body is longer when the markup needed to
	// reference the children does not fit in it.
	Size int64
	role role
}

// Site is the generated site of one page.
type Site struct {
	Page    *page.Page
	Root    string // URL path of the root HTML
	Compute bool   // computations became busy loops
	Objects []Object
}

// Grown counts the objects whose body exceeds the graph's size.
func (s *Site) Grown() (n int, extra int64) {
	for _, o := range s.Objects {
		if d := int64(len(o.Body)) - o.Size; d > 0 {
			n++
			extra += d
		}
	}
	return n, extra
}

// Build generates the site of p; with compute, its computations are busy
// loops of their recorded time.
func Build(p *page.Page, compute bool) (*Site, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rootObj := p.Activities[p.Start].Object
	nodes := map[string]*node{}
	var order []*node
	nodeOf := func(oi int) *node {
		o := &p.Objects[oi]
		u := site.URLPath(p.Name, o.Path)
		if n, ok := nodes[u]; ok {
			return n
		}
		n := &node{url: u, role: roleOf(o.Class), size: o.Size}
		if oi == rootObj {
			n.role = roleHTML
		}
		for _, c := range o.Comps {
			n.comps = append(n.comps, p.Activities[c].Time)
		}
		nodes[u] = n
		order = append(order, n)
		return n
	}
	root := nodeOf(rootObj)
	// Objects in activity order, so a parent's node exists before its child's.
	referenced := map[string]bool{root.url: true}
	for _, ai := range topoOrder(p) {
		a := p.Activities[ai]
		if a.Kind != page.Download || ai == p.Start {
			continue
		}
		n := nodeOf(a.Object)
		if referenced[n.url] {
			continue
		}
		referenced[n.url] = true
		parent, step := parentOf(p, ai)
		if parent < 0 {
			parent = rootObj
		}
		pn := nodeOf(parent)
		switch {
		case pn.role == roleHTML || pn.role == roleScript:
		case pn.role == roleStyle && n.role != roleScript && n.role != roleHTML:
		default:
			pn, step = root, len(root.comps)
		}
		pn.children = append(pn.children, child{url: n.url, role: n.role, step: step})
	}
	s := &Site{Page: p, Root: root.url, Compute: compute}
	for _, n := range order {
		body := n.generate(compute)
		s.Objects = append(s.Objects, Object{URL: n.url, MIME: roleMIME[n.role], Body: pad(body, n.role, n.size), Size: n.size, role: n.role})
	}
	return s, nil
}

// parentOf picks the dependency a download hangs off: a computation's over a
// download's (a computation is what discovers a reference in a browser), the
// latest step among computations of one object. The step is the computation
// whose end releases the download: the one before it for a dependency on a
// computation's start. -1 (no computation) for a dependency on a download.
func parentOf(p *page.Page, download int) (obj, step int) {
	obj, step = -1, -2
	for _, d := range p.Deps {
		if d.To != download || d.Implicit {
			continue
		}
		from := p.Activities[d.From]
		s := -1
		if from.Kind == page.Computation {
			for i, c := range p.Objects[from.Object].Comps {
				if c == d.From {
					s = i
					if d.OnStart {
						s--
					}
				}
			}
		}
		if obj < 0 || s > step {
			obj, step = from.Object, s
		}
	}
	return obj, step
}

// topoOrder lists activities so every dependency comes before its
// dependants (Validate has ruled out cycles).
func topoOrder(p *page.Page) []int {
	n := len(p.Activities)
	indeg := make([]int, n)
	out := make([][]int, n)
	for _, d := range p.Deps {
		indeg[d.To]++
		out[d.From] = append(out[d.From], d.To)
	}
	var order, queue []int
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		order = append(order, a)
		for _, b := range out[a] {
			if indeg[b]--; indeg[b] == 0 {
				queue = append(queue, b)
			}
		}
	}
	return order
}

// generate writes the node's markup, scripts or rules, without padding.
func (n *node) generate(compute bool) []byte {
	var b strings.Builder
	// steps[i] are the references made after computation i-1 (steps[0]: before any).
	steps := make([][]child, len(n.comps)+1)
	for _, c := range n.children {
		i := min(c.step+1, len(n.comps))
		steps[i] = append(steps[i], c)
	}
	switch n.role {
	case roleHTML:
		// The empty data: icon keeps Chromium from asking for /favicon.ico
		// after the load, a request that is not in the page's graph.
		b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>replay</title><link rel=\"icon\" href=\"data:,\"></head><body>\n")
		for i, cs := range steps {
			if i > 0 && compute {
				fmt.Fprintf(&b, "<script>%s</script>\n", busyLoop(n.comps[i-1]))
			}
			for _, c := range cs {
				b.WriteString(htmlTag(c))
			}
		}
		b.WriteString("</body></html>\n")
	case roleScript:
		b.WriteString(scriptPrelude)
		for i, cs := range steps {
			if i > 0 && compute {
				b.WriteString(busyLoop(n.comps[i-1]) + "\n")
			}
			for _, c := range cs {
				fmt.Fprintf(&b, "ins(%q,%s);\n", c.role.tag(), jsString(c.url))
			}
		}
		b.WriteString("})();\n")
	case roleStyle:
		var urls []string
		for _, cs := range steps {
			for _, c := range cs {
				if c.role == roleStyle {
					fmt.Fprintf(&b, "@import url(%s);\n", cssString(c.url))
				} else {
					urls = append(urls, "url("+cssString(c.url)+")")
				}
			}
		}
		// The html element always renders, so its backgrounds are fetched
		// before the load event.
		if len(urls) > 0 {
			fmt.Fprintf(&b, "html{background-image:%s}\n", strings.Join(urls, ","))
		}
	case roleImage:
		b.Write(gif1x1)
	}
	return []byte(b.String())
}

// scriptPrelude defines ins(tag, url): insert an element that fetches url.
const scriptPrelude = `(function(){var d=document;function ins(t,u){var e=d.createElement(t);` +
	`if(t==="link"){e.rel="stylesheet";e.href=u}else{e.src=u}(d.body||d.documentElement).appendChild(e)}` + "\n"

func (r role) tag() string {
	return [...]string{roleHTML: "iframe", roleScript: "script", roleStyle: "link", roleImage: "img"}[r]
}

func htmlTag(c child) string {
	u := html.EscapeString(c.url)
	switch c.role {
	case roleStyle:
		return `<link rel="stylesheet" href="` + u + "\">\n"
	case roleHTML:
		return `<iframe src="` + u + "\"></iframe>\n"
	}
	return "<" + c.role.tag() + ` src="` + u + "\"></" + c.role.tag() + ">\n"
}

func busyLoop(d time.Duration) string {
	return fmt.Sprintf("{const t=performance.now()+%.3f;while(performance.now()<t){}}", float64(d)/float64(time.Millisecond))
}

// jsString quotes s for a script; %q's escapes are valid JavaScript for the
// printable ASCII that request targets hold.
func jsString(s string) string { return fmt.Sprintf("%q", s) }

// cssString quotes s for a url() or @import.
func cssString(s string) string {
	r := strings.NewReplacer(`\`, `\5c `, `"`, `\22 `, "\n", `\a `)
	return `"` + r.Replace(s) + `"`
}

// gif1x1 is a transparent 1x1 GIF; decoders stop at its trailer, so padding
// after it is ignored.
var gif1x1 = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// pad fills body to size with a comment the role's syntax ignores (bytes
// after an image's trailer); a body already that long is left as is.
func pad(body []byte, r role, size int64) []byte {
	open, close := "<!--", "-->"
	switch r {
	case roleScript, roleStyle:
		open, close = "/*", "*/"
	case roleImage:
		open, close = "", ""
	}
	n := size - int64(len(body)) - int64(len(open)+len(close))
	if n < 0 {
		return body
	}
	out := make([]byte, 0, size)
	out = append(append(out, body...), open...)
	for range n {
		out = append(out, 'x')
	}
	return append(out, close...)
}

// Handler serves the generated sites of a set of pages.
type Handler struct {
	objs map[string]served // by canonical request target
}

type served struct {
	*Object
	fields []hpack.HeaderField // ServeHTTP's, for ServeInline
}

// NewHandler serves the sites; their pages' names must be distinct.
func NewHandler(sites ...*Site) (*Handler, error) {
	h := &Handler{objs: map[string]served{}}
	seen := map[string]bool{}
	for _, s := range sites {
		if seen[s.Page.Name] {
			return nil, fmt.Errorf("page %s: name %q already served", s.Page.Source, s.Page.Name)
		}
		seen[s.Page.Name] = true
		for i := range s.Objects {
			o := &s.Objects[i]
			h.objs[canonical(o.URL)] = served{o, []hpack.HeaderField{
				{Name: "content-type", Value: o.MIME},
				{Name: "cache-control", Value: "no-store"},
				{Name: "content-length", Value: strconv.Itoa(len(o.Body))},
			}}
		}
	}
	return h, nil
}

// canonical unescapes a request target: a browser percent-encodes
// characters of a recorded path that the graph holds raw, and the other way
// round.
func canonical(target string) string {
	p, q, hasQ := strings.Cut(target, "?")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	if u, err := url.PathUnescape(q); err == nil {
		q = u
	}
	if hasQ {
		return p + "?" + q
	}
	return p
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o, ok := h.objs[canonical(site.Target(r))]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", o.MIME)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", fmt.Sprint(len(o.Body)))
	w.Write(o.Body)
}

// ServeInline answers a GET or HEAD of an object from memory on the HTTP/2
// connection's reader (h2.InlineHandler), as a static server answers files:
// requests that arrive together are ready in the order they were asked, and
// the engine sends them by urgency (site.Handler.ServeInline says why).
func (h *Handler) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	pw, prepared := w.(h2.PreparedWriter)
	if r.Method != http.MethodGet && r.Method != http.MethodHead || !prepared {
		return false
	}
	o, ok := h.objs[canonical(site.Target(r))]
	if !ok {
		return false
	}
	pw.WritePrepared(http.StatusOK, o.fields, o.Body) // never modified
	return true
}
