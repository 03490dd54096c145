// Package hints is the hinted multipath scheduler of the talk behind issue
// 19 ("Optimised cooperation of HTTP/2 and Multipath TCP"), at the HTTP
// layer: every request carries a hint (its resource class, size and
// urgency), every path a state (RTT, bandwidth, loss, cost per byte), and a
// Policy turns both and a clock into decisions: which path, whether a
// latency-critical request also goes on a second path, when the tail of a
// response is asked for again on the other path, and how many bytes a path
// may carry.
//
// The package is pure: no sockets and no clock of its own. Policies ship as
// named presets (Preset) and as a small rule file (Parse), so a user writes
// one without recompiling, as the talk's scriptable scheduler allowed.
package hints

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/shunt-net/shunt/page"
)

// Class is a request's resource class, as a browser sees it.
type Class string

const (
	Document    Class = "document"     // the page and its frames
	Style       Class = "style"        // style sheets
	Script      Class = "script"       // parser-blocking scripts (in the head)
	AsyncScript Class = "async-script" // scripts the parser does not wait for
	Image       Class = "image"
	Font        Class = "font"
	Media       Class = "media"
	Other       Class = "other"
)

// Classes lists every class, in the order rule files and tables print them.
var Classes = []Class{Document, Style, Script, AsyncScript, Image, Font, Media, Other}

// Urgent reports whether the class holds up the first render: the talk's
// urgent resources are the document, style sheets and scripts in the head.
func (c Class) Urgent() bool { return c == Document || c == Style || c == Script }

func validClass(s string) bool {
	for _, c := range Classes {
		if string(c) == s {
			return true
		}
	}
	return false
}

// Hint describes one request to the scheduler.
type Hint struct {
	Class Class
	Size  int64 // body bytes; -1 unknown
	// Urgency is the RFC 9218 urgency (0 most urgent .. 7); -1 unknown.
	Urgency int
}

// Urgent reports whether the request is latency-critical.
func (h Hint) Urgent() bool { return h.Class.Urgent() }

// FromPage gives every object of p its hint: the class from its MIME type,
// and for scripts from their position in the graph (a script whose download
// or evaluation some computation of an HTML object waits for blocks the
// parser); the size is the page's. The urgency is Chromium's for the class
// (UrgencyOf).
func FromPage(p *page.Page) []Hint {
	blocking := make([]bool, len(p.Objects))
	for _, d := range p.Deps {
		from, to := p.Activities[d.From], p.Activities[d.To]
		if to.Kind == page.Computation && p.Objects[to.Object].Class == page.ClassHTML && from.Object != to.Object {
			blocking[from.Object] = true
		}
	}
	hs := make([]Hint, len(p.Objects))
	for i, o := range p.Objects {
		c := classOfPage(o.Class)
		if c == Script && !blocking[i] {
			c = AsyncScript
		}
		hs[i] = Hint{Class: c, Size: o.Size, Urgency: UrgencyOf(c)}
	}
	return hs
}

func classOfPage(c page.Class) Class {
	switch c {
	case page.ClassHTML:
		return Document
	case page.ClassCSS:
		return Style
	case page.ClassJS:
		return Script
	case page.ClassJPEG, page.ClassPNG, page.ClassGIF, page.ClassImage:
		return Image
	case page.ClassFont:
		return Font
	case page.ClassFlash:
		return Media
	}
	return Other
}

// UrgencyOf is the urgency Chromium sends for a class (as replay's
// "browser" schedule): documents, style sheets and fonts 0, blocking
// scripts 1, images 2, the rest 3.
func UrgencyOf(c Class) int {
	switch c {
	case Document, Style, Font:
		return 0
	case Script:
		return 1
	case Image:
		return 2
	}
	return 3
}

// FromHeaders classifies a browser's request by its Sec-Fetch-Dest header,
// else by Accept, and reads the urgency from its Priority header. A script
// is parser-blocking when its urgency is 2 or less: Chromium 156 asks for
// parser-blocking scripts at u=1, or u=2 once the parser has passed an
// image, and for async, deferred and script-inserted ones with no Priority
// (u=3). The size is unknown.
func FromHeaders(h http.Header) Hint {
	return withPriority(classOfRequest(h), h.Get("Priority"), -1)
}

// FromResponse is a server's hint for a response (issue 19's server-side
// steering): the class from the request as FromHeaders reads it or, when
// the request does not say (no Sec-Fetch-Dest, no telling Accept), from
// the response's Content-Type, the page model's MIME classes; the urgency
// from the request's Priority, as FromHeaders; the size from the
// response's Content-Length (-1 unknown).
func FromResponse(req, resp http.Header) Hint {
	c := classOfRequest(req)
	if c == Other {
		c = classOfPage(page.ClassOf(page.NormalizeMIME(resp.Get("Content-Type"))))
	}
	size, err := strconv.ParseInt(resp.Get("Content-Length"), 10, 64)
	if err != nil || size < 0 {
		size = -1
	}
	return withPriority(c, req.Get("Priority"), size)
}

// withPriority completes a class into a hint: a script whose Priority
// urgency is above 2 is an async one (FromHeaders), and without a Priority
// the urgency is the class's.
func withPriority(c Class, priority string, size int64) Hint {
	u := ParseUrgency(priority)
	if c == Script && u > 2 {
		c = AsyncScript
	}
	if u < 0 {
		u = UrgencyOf(c)
	}
	return Hint{Class: c, Size: size, Urgency: u}
}

// classOfRequest reads a request's Sec-Fetch-Dest, else its Accept.
func classOfRequest(h http.Header) Class {
	switch dest := strings.ToLower(h.Get("Sec-Fetch-Dest")); dest {
	case "document", "iframe", "frame":
		return Document
	case "style":
		return Style
	case "script", "worker", "sharedworker", "serviceworker":
		return Script
	case "image":
		return Image
	case "font":
		return Font
	case "audio", "video", "track":
		return Media
	case "", "empty":
		return classOfAccept(h.Get("Accept"))
	}
	return Other
}

// classOfAccept reads the first media range a browser prefers.
func classOfAccept(accept string) Class {
	first, _, _ := strings.Cut(strings.ToLower(accept), ",")
	first, _, _ = strings.Cut(strings.TrimSpace(first), ";")
	switch {
	case first == "text/html" || first == "application/xhtml+xml":
		return Document
	case first == "text/css":
		return Style
	case strings.Contains(first, "javascript"):
		return Script
	case strings.HasPrefix(first, "image/"):
		return Image
	case strings.HasPrefix(first, "font/"):
		return Font
	case strings.HasPrefix(first, "video/") || strings.HasPrefix(first, "audio/"):
		return Media
	}
	return Other
}

// ParseUrgency reads u=N from an RFC 9218 Priority field; -1 if absent or
// malformed.
func ParseUrgency(v string) int {
	for _, m := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(m), "=")
		if !ok || k != "u" {
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > 7 {
			return -1
		}
		return n
	}
	return -1
}
