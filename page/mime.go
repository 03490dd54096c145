package page

import (
	"path"
	"strings"
)

// Class is the kind of resource a MIME type names, which sets the share of
// the page's bytes an object gets (AssignSizes).
type Class string

const (
	ClassHTML  Class = "html"
	ClassCSS   Class = "css"
	ClassJS    Class = "js"
	ClassJPEG  Class = "jpeg"
	ClassPNG   Class = "png"
	ClassGIF   Class = "gif"
	ClassImage Class = "image" // any other image
	ClassFont  Class = "font"
	ClassFlash Class = "flash"
	ClassOther Class = "other"
)

// mimeAliases maps the spellings found in recorded pages to one name.
var mimeAliases = map[string]string{
	"application/x-javascript": "application/javascript",
	"text/javascript":          "application/javascript",
	"application/ecmascript":   "application/javascript",
	"text/ecmascript":          "application/javascript",
	"text/x-javascript":        "application/javascript",
	"application/x-js":         "application/javascript",
	"image/jpg":                "image/jpeg",
	"image/pjpeg":              "image/jpeg",
	"image/x-png":              "image/png",
	"application/font-woff":    "font/woff",
	"application/x-font-woff":  "font/woff",
	"font/x-woff":              "font/woff",
	"application/font-woff2":   "font/woff2",
	"application/x-font-ttf":   "font/ttf",
	"application/x-font-otf":   "font/otf",
	"application/xhtml+xml":    "text/html",
	"image/vnd.microsoft.icon": "image/x-icon",
}

// extMIME gives a MIME type to objects recorded without one (pReplay's test
// graphs say "download"). A fixed table, not the system's mime.types, so
// the result is the same on every machine.
var extMIME = map[string]string{
	".html": "text/html", ".htm": "text/html",
	".css": "text/css",
	".js":  "application/javascript", ".mjs": "application/javascript",
	".json": "application/json",
	".jpg":  "image/jpeg", ".jpeg": "image/jpeg",
	".png": "image/png", ".gif": "image/gif", ".webp": "image/webp",
	".svg": "image/svg+xml", ".ico": "image/x-icon",
	".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf",
	".swf": "application/x-shockwave-flash",
}

// NormalizeMIME lowercases a MIME type, drops its parameters and maps alias
// spellings (application/x-javascript, image/jpg, ...) to one name. Values
// that are not a type/subtype (pReplay's placeholder "download", "") give "".
func NormalizeMIME(s string) string {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexByte(s, '/'); i <= 0 || i == len(s)-1 || strings.ContainsAny(s, " \t\"") {
		return ""
	}
	if a, ok := mimeAliases[s]; ok {
		return a
	}
	return s
}

// mimeFor returns the normalised recorded type, or the one the path's
// extension suggests, or application/octet-stream.
func mimeFor(recorded, p string) string {
	if m := NormalizeMIME(recorded); m != "" {
		return m
	}
	if m, ok := extMIME[strings.ToLower(path.Ext(p))]; ok {
		return m
	}
	return "application/octet-stream"
}

// ClassOf returns the class of a normalised MIME type.
func ClassOf(mime string) Class {
	switch {
	case mime == "text/html":
		return ClassHTML
	case mime == "text/css":
		return ClassCSS
	case mime == "application/javascript":
		return ClassJS
	case mime == "image/jpeg":
		return ClassJPEG
	case mime == "image/png":
		return ClassPNG
	case mime == "image/gif":
		return ClassGIF
	case strings.HasPrefix(mime, "image/"):
		return ClassImage
	case strings.HasPrefix(mime, "font/"):
		return ClassFont
	case mime == "application/x-shockwave-flash":
		return ClassFlash
	}
	return ClassOther
}
