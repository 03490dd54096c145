// Package site is what a server holds for replayed pages and how a client
// checks what it received.
//
// Every object of a page is served at Prefix + page name + the object's
// path (URLPath), so several pages share one server without their paths
// colliding. Its body is size bytes of content's generated keystream, taken
// from an offset derived from that URL path (Offset): objects of equal size
// still differ, so a server answering with the wrong object fails the check.
// Each response carries the body's SHA-256 in a Repr-Digest header (RFC
// 9530), computed by the server from what it holds; the client's Verifier
// compares every byte with the keystream, the length with the page's size
// and the SHA-256 of what arrived with the header.
package site

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/page"
)

// Prefix is the URL path under which pages are served.
const Prefix = "/page/"

// DigestHeader carries the SHA-256 of a response body, as RFC 9530 writes it.
const DigestHeader = "Repr-Digest"

// URLPath is where the object with request target objPath of the named page
// is served. The name is one path segment, escaped: a graph named after a
// URL with a query ("example.com/?src=feed") is served as well as any.
func URLPath(pageName, objPath string) string {
	if !strings.HasPrefix(objPath, "/") {
		objPath = "/" + objPath
	}
	return Prefix + url.PathEscape(pageName) + objPath
}

// offsetBits bounds offsets well below int64, so offset+size cannot overflow.
const offsetBits = 44

// Offset is where the object at urlPath starts in the generated keystream: an
// FNV-1a hash of the path, so every path has its own bytes.
func Offset(urlPath string) int64 {
	h := fnv.New64a()
	io.WriteString(h, urlPath)
	return int64(h.Sum64() >> (64 - offsetBits))
}

// Body returns the object's bytes as a seekable reader.
func Body(urlPath string, size int64) *io.SectionReader {
	off := Offset(urlPath)
	return io.NewSectionReader(content.NewGenerated(off+size), off, size)
}

// Digest is the SHA-256 of the object's bytes.
func Digest(urlPath string, size int64) ([32]byte, error) {
	var d [32]byte
	h := sha256.New()
	if _, err := io.Copy(h, Body(urlPath, size)); err != nil {
		return d, err
	}
	h.Sum(d[:0])
	return d, nil
}

// heldMax bounds the bytes a Handler holds in memory to answer inline; the
// objects past it are generated per request. The six Table IV pages hold
// 6.2 MB.
const heldMax = 64 << 20

// FormatDigest writes a SHA-256 as a Repr-Digest value.
func FormatDigest(d [32]byte) string {
	return "sha-256=:" + base64.StdEncoding.EncodeToString(d[:]) + ":"
}

// ParseDigest reads the sha-256 member of a Repr-Digest value.
func ParseDigest(v string) ([32]byte, error) {
	var d [32]byte
	for _, member := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok || k != "sha-256" {
			continue
		}
		if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
			return d, fmt.Errorf("%s %q: sha-256 is not a byte sequence", DigestHeader, v)
		}
		b, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
		if err != nil || len(b) != len(d) {
			return d, fmt.Errorf("%s %q: sha-256 is not 32 bytes of base64", DigestHeader, v)
		}
		copy(d[:], b)
		return d, nil
	}
	return d, fmt.Errorf("%s %q: no sha-256", DigestHeader, v)
}

type object struct {
	mime   string
	size   int64
	digest string // Repr-Digest value
	// fields and body answer a plain GET or HEAD inline (ServeInline); body
	// is nil for an object not held (heldMax).
	fields []hpack.HeaderField
	body   []byte
}

// Handler serves the objects of a set of pages.
type Handler struct {
	objs map[string]object // by URL path (query included)
}

// NewHandler holds the pages' objects; page names must be distinct.
func NewHandler(pages ...*page.Page) (*Handler, error) {
	h := &Handler{objs: make(map[string]object)}
	names := make(map[string]string)
	var held int64
	for _, p := range pages {
		if p.Name == "" {
			return nil, fmt.Errorf("page %s: no name", p.Source)
		}
		if src, dup := names[p.Name]; dup {
			return nil, fmt.Errorf("page %s: name %q already served from %s", p.Source, p.Name, src)
		}
		names[p.Name] = p.Source
		for _, r := range p.Resources() {
			u := URLPath(p.Name, r.Path)
			o := object{mime: r.MIME, size: r.Size}
			if held+r.Size <= heldMax {
				o.body = make([]byte, r.Size)
				if _, err := io.ReadFull(Body(u, r.Size), o.body); err != nil {
					return nil, fmt.Errorf("page %s: %s: %w", p.Source, r.Path, err)
				}
				held += r.Size
				o.digest = FormatDigest(sha256.Sum256(o.body))
			} else {
				d, err := Digest(u, r.Size)
				if err != nil {
					return nil, fmt.Errorf("page %s: %s: %w", p.Source, r.Path, err)
				}
				o.digest = FormatDigest(d)
			}
			o.fields = []hpack.HeaderField{
				{Name: "content-type", Value: o.mime},
				{Name: "repr-digest", Value: o.digest},
				{Name: "cache-control", Value: "no-store"},
				{Name: "accept-ranges", Value: "bytes"},
				{Name: "content-length", Value: strconv.FormatInt(o.size, 10)},
			}
			h.objs[u] = o
		}
	}
	return h, nil
}

// Len is the number of objects served.
func (h *Handler) Len() int { return len(h.objs) }

// Has reports whether urlPath is one of the objects.
func (h *Handler) Has(urlPath string) bool {
	_, ok := h.objs[urlPath]
	return ok
}

// Target is the key of the object r asks for: the recorded paths carry
// queries, so the whole RequestURI is the key.
func Target(r *http.Request) string {
	if t := r.RequestURI; t != "" && strings.HasPrefix(t, "/") {
		return t
	}
	return r.URL.RequestURI()
}

// ServeHTTP serves an object by its request target (Target).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := Target(r)
	o, ok := h.objs[target]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", o.mime)
	w.Header().Set(DigestHeader, o.digest)
	w.Header().Set("Cache-Control", "no-store")
	var body io.ReadSeeker = Body(target, o.size)
	if o.body != nil {
		body = bytes.NewReader(o.body)
	}
	http.ServeContent(w, r, "", time.Time{}, body)
}

// ServeInline answers a plain GET or HEAD of an object held in memory with
// the 200 ServeHTTP would give, and reports false for everything else (a
// range, a condition, an object not held): h2.InlineHandler. HTTP/2 then
// answers it on the connection's reader, as a static server answers a file
// (h2o, nginx): responses asked for together are ready in the order they
// were asked, and the scheduler sends them by urgency. From handler
// goroutines they were ready in whatever order the goroutines ran, and a
// u=2 image could fill the first round trip ahead of a u=1 script asked
// for before it.
func (h *Handler) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, k := range conditional {
		if _, ok := r.Header[k]; ok {
			return false
		}
	}
	o, ok := h.objs[Target(r)]
	pw, prepared := w.(h2.PreparedWriter)
	if !ok || o.body == nil || !prepared {
		return false
	}
	pw.WritePrepared(http.StatusOK, o.fields, o.body) // never modified
	return true
}

// conditional are the request fields that make ServeContent answer other
// than a plain 200.
var conditional = []string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"}

// ErrDigest is wrapped by the error of a body whose SHA-256 differs from the
// server's Repr-Digest.
var ErrDigest = errors.New("body SHA-256 differs from the server's " + DigestHeader)

// Verifier checks a body as it arrives: every byte against the object's
// keystream, then (Finish) the length and the SHA-256.
type Verifier struct {
	path string
	size int64
	gen  *content.Verifier
	sum  hash.Hash
	n    int64
}

// NewVerifier expects the object at urlPath of size bytes.
func NewVerifier(urlPath string, size int64) *Verifier {
	off := Offset(urlPath)
	return &Verifier{path: urlPath, size: size, gen: content.NewVerifier(off), sum: sha256.New()}
}

// Write fails at the first byte that differs from the object or lies past
// its end.
func (v *Verifier) Write(p []byte) (int, error) {
	if v.n+int64(len(p)) > v.size {
		return 0, fmt.Errorf("%s: more than the object's %d bytes", v.path, v.size)
	}
	n, err := v.gen.Write(p)
	v.sum.Write(p[:n])
	v.n += int64(n)
	if err != nil {
		return n, fmt.Errorf("%s: %w", v.path, err)
	}
	return n, nil
}

// Bytes is how many bytes were written.
func (v *Verifier) Bytes() int64 { return v.n }

// Finish checks the length and that the body's SHA-256 equals the server's
// digest header value.
func (v *Verifier) Finish(digestHeader string) error {
	if v.n != v.size {
		return fmt.Errorf("%s: %d bytes, want %d", v.path, v.n, v.size)
	}
	want, err := ParseDigest(digestHeader)
	if err != nil {
		return fmt.Errorf("%s: %w", v.path, err)
	}
	if got := v.sum.Sum(nil); !bytes.Equal(got, want[:]) {
		return fmt.Errorf("%s: %w", v.path, ErrDigest)
	}
	return nil
}
