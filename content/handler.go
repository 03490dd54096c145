// Package content is what `shunt serve` serves: static files from a root
// directory and generated objects of any size at /gen/<size>, both with HTTP
// range requests, validators and conditional requests.
//
// Range, conditional and HEAD handling is net/http's http.ServeContent: single
// ranges, multiple ranges (multipart/byteranges), suffix and open-ended ranges,
// 416 with "Content-Range: bytes */SIZE" when no range overlaps the object,
// If-None-Match, If-Modified-Since and If-Range. Generated objects go through
// the same path as files, as an io.ReadSeeker (see Generated).
package content

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"
)

// GenPrefix is the URL path prefix of generated objects: GenPrefix + "50MB".
const GenPrefix = "/gen/"

// GenSize reports whether urlPath names a generated object and, if so, its
// size. ok is true with a non-nil error for /gen/ paths with a bad size.
func GenSize(urlPath string) (size int64, ok bool, err error) {
	s, ok := strings.CutPrefix(urlPath, GenPrefix)
	if !ok {
		return 0, false, nil
	}
	size, err = ParseSize(s)
	return size, true, err
}

// Handler serves generated objects under GenPrefix and, when it has a root
// directory, the regular files under it. Directories are served as their
// index.html; there are no directory listings.
type Handler struct {
	root  *os.Root // nil: generated objects only
	dir   *os.File // root's directory, kept open for dirfd
	dirfd int      // for fileCache.quick
	cache fileCache
}

// NewHandler returns a Handler serving the files under dir; an empty dir
// serves only generated objects. Close releases the directory.
func NewHandler(dir string) (*Handler, error) {
	if dir == "" {
		return &Handler{}, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("content root: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("content root: %w", err)
	}
	return &Handler{root: root, dir: d, dirfd: int(d.Fd())}, nil
}

// Close releases the root directory.
func (h *Handler) Close() error {
	if h.root == nil {
		return nil
	}
	h.dir.Close()
	return h.root.Close()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if !validPath(p) {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	if size, ok, err := GenSize(p); ok {
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("ETag", GenETag(size))
		http.ServeContent(w, r, "", time.Time{}, NewGenerated(size))
		return
	}
	if h.root == nil {
		http.NotFound(w, r)
		return
	}
	h.serveFile(w, r, fileName(p))
}

// ServeInline answers a GET or HEAD without conditions or ranges of a file
// in the cache, whose stat is fresh, and reports false for everything else
// (h2.InlineHandler): an answer from memory never blocks, so the HTTP/2
// engine serves it on the connection's reader, without a handler goroutine.
func (h *Handler) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	e := h.plainHit(r.Method, r.URL.Path, plainRequest(r.Header))
	if e == nil {
		return false
	}
	e.servePlain(w, r) // plainRequest passed above: its five lookups once a request
	return true
}

// ServeFields is ServeInline for the HTTP/2 engine's decoded request
// fields (h2.FieldHandler): the same 200 responses, from the same cache
// entries, without an http.Request or a ResponseWriter.
func (h *Handler) ServeFields(method, p string, fields []hpack.HeaderField) (status int, header []hpack.HeaderField, body []byte, ok bool) {
	e := h.plainHit(method, p, plainFields(fields))
	if e == nil {
		return 0, nil, nil, false
	}
	return http.StatusOK, e.fields, e.data, true
}

// plainHit returns the cache entry, its stat fresh, that answers a plain
// (no conditions or ranges) GET or HEAD of path p with a 200, or nil.
func (h *Handler) plainHit(method, p string, plain bool) *cachedFile {
	if method != http.MethodGet && method != http.MethodHead || h.root == nil || !validPath(p) ||
		strings.HasPrefix(p, GenPrefix) || !plain {
		return nil
	}
	return h.cache.quick(h.dirfd, fileName(p))
}

// validPath: a request path that starts with a slash and has no ".."
// segment. Rejected rather than cleaned: a request that tries to climb is
// not a request for some other file. os.Root also stops symlinks leaving
// root.
func validPath(p string) bool { return strings.HasPrefix(p, "/") && !hasDotDot(p) }

// fileName is the name under root of the valid request path p.
func fileName(p string) string {
	if !isClean(p) {
		p = path.Clean(p)
	}
	name := strings.TrimPrefix(p, "/")
	if name == "" {
		name = "."
	}
	return name
}

// isClean reports whether path.Clean would return p, which starts with a
// slash, as it is: no empty, "." or ".." element and no trailing slash.
// Nearly every request path is, and the scan costs a tenth of Clean's.
func isClean(p string) bool {
	n := len(p)
	for i := 0; i < n-1; i++ {
		if p[i] != '/' {
			continue
		}
		// p[i+1:] starts an element: not empty, ".", or "..".
		switch c := p[i+1]; {
		case c == '/':
			return false
		case c == '.' && (i+2 == n || p[i+2] == '/' || p[i+2] == '.' && (i+3 == n || p[i+3] == '/')):
			return false
		}
	}
	return n == 1 || p[n-1] != '/'
}

func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	if e := h.cache.quick(h.dirfd, name); e != nil {
		e.serve(w, r, name)
		return
	}
	fi, err := h.root.Stat(name)
	if err == nil && fi.IsDir() {
		name = path.Join(name, "index.html")
		fi, err = h.root.Stat(name)
	}
	if err != nil {
		fileError(w, err)
		return
	}
	if !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	if e := h.cached(name, fi); e != nil {
		e.serve(w, r, name)
		return
	}
	h.serveFromDisk(w, r, name)
}

// serveFromDisk serves the file name as read now, without the cache.
func (h *Handler) serveFromDisk(w http.ResponseWriter, r *http.Request, name string) {
	f, fi, err := h.open(name)
	if err != nil {
		fileError(w, err)
		return
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", fileETag(fi.ModTime(), fi.Size()))
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

func (h *Handler) open(name string) (*os.File, fs.FileInfo, error) {
	f, err := h.root.Open(name)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func fileError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		http.Error(w, "not found", http.StatusNotFound)
	case errors.Is(err, fs.ErrPermission):
		http.Error(w, "forbidden", http.StatusForbidden)
	default:
		// os.Root reports escapes (symlinks out of root) as plain errors;
		// to the client such a path does not exist.
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// hasDotDot reports whether p has a ".." segment; / and \ both separate.
func hasDotDot(p string) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '.' && p[i+1] == '.' && (i == 0 || isSep(p[i-1])) && (i+2 == len(p) || isSep(p[i+2])) {
			return true
		}
	}
	return false
}

func isSep(b byte) bool { return b == '/' || b == '\\' }
