package content

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
)

// oldFile writes name under dir with a modification time outside the racy
// window, so the handler caches it.
func oldFile(t *testing.T, dir, name string, data []byte, mtime time.Time) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func ctimeOf(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ctim.Nano()
}

func cachedHandler(t *testing.T) (*Handler, string) {
	t.Helper()
	dir := t.TempDir()
	h, err := NewHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, dir
}

// A cached file answers every kind of request exactly as http.ServeContent
// does from the disk.
func TestCachedFileMatchesServeContent(t *testing.T) {
	h, dir := cachedHandler(t)
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	body := bytes.Repeat([]byte("<html>shunt</html>\n"), 100)
	oldFile(t, dir, "p.html", body, mtime)
	oldFile(t, dir, "noext", whole(3000), mtime)
	etag := fileETag(mtime, int64(len(body)))
	reqs := [][]string{
		{"GET", "/p.html"},
		{"HEAD", "/p.html"},
		{"GET", "/noext"},
		{"GET", "/p.html", "Range", "bytes=10-19"},
		{"GET", "/p.html", "Range", "bytes=0-1,5-6"},
		{"GET", "/p.html", "Range", "bytes=99999-"},
		{"GET", "/p.html", "If-None-Match", etag},
		{"GET", "/p.html", "If-Modified-Since", mtime.UTC().Format(http.TimeFormat)},
		{"GET", "/p.html", "If-Match", `"other"`},
		{"GET", "/p.html", "If-Unmodified-Since", mtime.Add(-time.Hour).UTC().Format(http.TimeFormat)},
	}
	for _, rq := range reqs {
		first := do(h, rq[0], rq[1], rq[2:]...) // loads the cache
		if !h.cache.holds(rq[1][1:]) {
			t.Fatalf("%v: %s not cached", rq, rq[1])
		}
		cached := do(h, rq[0], rq[1], rq[2:]...)
		fromDisk := httptest.NewRecorder()
		req := httptest.NewRequest(rq[0], rq[1], nil)
		for i := 2; i+1 < len(rq); i += 2 {
			req.Header.Set(rq[i], rq[i+1])
		}
		h.serveFromDisk(fromDisk, req, rq[1][1:])
		for name, rec := range map[string]*httptest.ResponseRecorder{"first": first, "cached": cached} {
			got, want := rec.Result(), fromDisk.Result()
			if got.StatusCode != want.StatusCode {
				t.Errorf("%v %s: status %d, from disk %d", rq, name, got.StatusCode, want.StatusCode)
			}
			for k, v := range want.Header {
				if k == "Content-Type" && strings.HasPrefix(v[0], "multipart/") {
					continue // random boundary
				}
				if !slices.Equal(got.Header[k], v) {
					t.Errorf("%v %s: %s %q, from disk %q", rq, name, k, got.Header[k], v)
				}
			}
			if len(got.Header) != len(want.Header) {
				t.Errorf("%v %s: headers %v, from disk %v", rq, name, got.Header, want.Header)
			}
		}
		multipart := strings.HasPrefix(fromDisk.Header().Get("Content-Type"), "multipart/")
		if !multipart && !bytes.Equal(cached.Body.Bytes(), fromDisk.Body.Bytes()) {
			t.Errorf("%v: cached body differs from the disk's", rq)
		}
	}
}

// A file rewritten in place with the same size and modification time, or
// replaced by a rename, is served anew once the last stat has expired
// (statValid).
func TestCachedFileChanges(t *testing.T) {
	h, dir := cachedHandler(t)
	mtime := time.Now().Add(-time.Hour)
	oldFile(t, dir, "f", []byte("version 1"), mtime)
	expect(t, do(h, "GET", "/f"), 200, []byte("version 1"))
	if !h.cache.holds("f") {
		t.Fatal("f not cached")
	}
	// Rewrite until the change time moves on (its clock ticks coarsely):
	// the file then differs from the cached one by its change time alone.
	before := ctimeOf(t, filepath.Join(dir, "f"))
	for i := 0; ctimeOf(t, filepath.Join(dir, "f")) == before; i++ {
		if i == 1e6 {
			t.Fatal("the file's change time never moved")
		}
		oldFile(t, dir, "f", []byte("version 2"), mtime)
	}
	time.Sleep(statValid)
	expect(t, do(h, "GET", "/f"), 200, []byte("version 2"))

	oldFile(t, dir, "g", []byte("version 3"), mtime)
	if err := os.Rename(filepath.Join(dir, "g"), filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(statValid)
	expect(t, do(h, "GET", "/f"), 200, []byte("version 3"))
	if err := os.Remove(filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(statValid)
	expect(t, do(h, "GET", "/f"), 404, nil)
}

// A file modified just now is not cached: a second write within the same
// timestamp tick would go unnoticed.
func TestRecentFileNotCached(t *testing.T) {
	h, dir := cachedHandler(t)
	if err := os.WriteFile(filepath.Join(dir, "new"), []byte("fresh"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(t, do(h, "GET", "/new"), 200, []byte("fresh"))
	if h.cache.holds("new") {
		t.Fatal("a file modified within the racy window was cached")
	}
}

// The cache stays within its byte budget.
func TestFileCacheBudget(t *testing.T) {
	var c fileCache
	for i := range 3 * maxCacheBytes / maxCachedFile {
		c.put(string(rune('a'+i%26))+string(rune('a'+i/26)), &cachedFile{data: make([]byte, maxCachedFile)})
		if c.bytes > maxCacheBytes {
			t.Fatalf("after %d files: %d bytes cached, budget %d", i+1, c.bytes, maxCacheBytes)
		}
	}
	var sum int64
	for _, e := range c.entries {
		sum += int64(len(e.data))
	}
	if sum != c.bytes {
		t.Fatalf("entries hold %d bytes, accounted %d", sum, c.bytes)
	}
}

func TestHasDotDot(t *testing.T) {
	for p, want := range map[string]bool{
		"/a/b": false, "/..": true, "/a/../b": true, "/a/..": true, "..": true, "/a..b": false,
		"/..a": false, "/a\\..\\b": true, "/.../": false, "/a/.": false, "": false,
	} {
		if got := hasDotDot(p); got != want {
			t.Errorf("hasDotDot(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestRacy(t *testing.T) {
	now := time.Now()
	fine := func(d time.Duration) time.Time { // a time with a fraction of a second
		t := now.Add(-d)
		if t.Nanosecond() == 0 {
			t = t.Add(-time.Nanosecond)
		}
		return t
	}
	for _, tc := range []struct {
		name  string
		mtime time.Time
		want  bool
	}{
		{"fine, 10ms old", fine(10 * time.Millisecond), true},
		{"fine, 1s old", fine(time.Second), false},
		{"whole second, this second", now.Truncate(time.Second), true},
		{"whole second, 2s old", now.Add(-2 * time.Second).Truncate(time.Second), false},
		{"in the future", fine(-time.Minute), true},
	} {
		if got := racy(tc.mtime); got != tc.want {
			t.Errorf("%s: racy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// ServeInline answers plain GETs and HEADs of cached files as ServeHTTP
// does, and declines everything else without touching the response.
func TestServeInline(t *testing.T) {
	h, dir := cachedHandler(t)
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	body := bytes.Repeat([]byte("<html>shunt</html>\n"), 100)
	oldFile(t, dir, "p.html", body, mtime)
	inline := func(method, target string, hdr ...string) (*httptest.ResponseRecorder, bool) {
		r := httptest.NewRequest(method, target, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		return w, h.ServeInline(w, r)
	}
	declined := func(method, target string, hdr ...string) {
		t.Helper()
		w, ok := inline(method, target, hdr...)
		if ok || len(w.Header()) != 0 || w.Body.Len() != 0 {
			t.Errorf("%s %s %v: answered %v, headers %v, %d body bytes; want declined, untouched", method, target, hdr, ok, w.Header(), w.Body.Len())
		}
	}
	declined("GET", "/p.html") // not cached yet
	do(h, "GET", "/p.html")    // now it is
	for _, method := range []string{"GET", "HEAD"} {
		w, ok := inline(method, "/p.html")
		want := do(h, method, "/p.html")
		if !ok || w.Code != want.Code || !bytes.Equal(w.Body.Bytes(), want.Body.Bytes()) || len(w.Header()) != len(want.Header()) {
			t.Fatalf("%s: answered %v, status %d, %d bytes, headers %v; ServeHTTP: %d, %d bytes, %v", method, ok, w.Code, w.Body.Len(), w.Header(), want.Code, want.Body.Len(), want.Header())
		}
		for k, v := range want.Header() {
			if !slices.Equal(w.Header()[k], v) {
				t.Errorf("%s: %s %q, ServeHTTP %q", method, k, w.Header()[k], v)
			}
		}
	}
	declined("GET", "/p.html", "Range", "bytes=0-9")
	declined("GET", "/p.html", "If-None-Match", fileETag(mtime, int64(len(body))))
	declined("GET", "/p.html", "Accept", "*/*", "If-Match", "*", "User-Agent", "t")
	declined("GET", "/p.html", "If-Modified-Since", mtime.Format(http.TimeFormat))
	declined("GET", "/p.html", "If-Unmodified-Since", mtime.Format(http.TimeFormat))
	declined("POST", "/p.html")
	declined("GET", "/gen/10")
	declined("GET", "/missing")
	declined("GET", "/../p.html")
	gen, _ := NewHandler("")
	if gen.ServeInline(httptest.NewRecorder(), httptest.NewRequest("GET", "/p.html", nil)) {
		t.Error("a handler without a root answered inline")
	}
}

// preparedRecorder is a ResponseRecorder that is a preparedWriter too, as
// the HTTP/2 engine's ResponseWriter is; it keeps what WritePrepared got.
type preparedRecorder struct {
	*httptest.ResponseRecorder
	status int
	fields []hpack.HeaderField
	body   []byte
}

func (p *preparedRecorder) WritePrepared(status int, fields []hpack.HeaderField, body []byte) error {
	p.status, p.fields, p.body = status, fields, body
	return nil
}

// A cached file's prepared response to a ResponseWriter that takes one
// carries the headers and body ServeHTTP's map path sends, as HTTP/2
// fields (lower-case names); one that does not take one gets the map.
func TestServePrepared(t *testing.T) {
	h, dir := cachedHandler(t)
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	body := bytes.Repeat([]byte("shunt prepared\n"), 70)
	oldFile(t, dir, "p.txt", body, mtime)
	do(h, "GET", "/p.txt") // cache it
	for _, method := range []string{"GET", "HEAD"} {
		want := do(h, method, "/p.txt")
		w := &preparedRecorder{ResponseRecorder: httptest.NewRecorder()}
		if !h.ServeInline(w, httptest.NewRequest(method, "/p.txt", nil)) {
			t.Fatalf("%s: declined", method)
		}
		if w.status != want.Code || len(w.Header()) != 0 || w.Body.Len() != 0 || !bytes.Equal(w.body, body) {
			t.Errorf("%s: status %d, map %v, %d bytes written, prepared body equal %v; want %d through WritePrepared alone",
				method, w.status, w.Header(), w.Body.Len(), bytes.Equal(w.body, body), want.Code)
		}
		got := http.Header{}
		for _, f := range w.fields {
			if f.Name != strings.ToLower(f.Name) {
				t.Errorf("%s: field name %q is not lower-case", method, f.Name)
			}
			got.Add(f.Name, f.Value)
		}
		if !reflect.DeepEqual(got, want.Header()) {
			t.Errorf("%s: prepared fields %v, ServeHTTP's headers %v", method, got, want.Header())
		}
	}
	// Conditions and ranges still take http.ServeContent, through the map.
	w := &preparedRecorder{ResponseRecorder: httptest.NewRecorder()}
	r := httptest.NewRequest("GET", "/p.txt", nil)
	r.Header.Set("Range", "bytes=0-4")
	h.ServeHTTP(w, r)
	if w.fields != nil || w.Code != http.StatusPartialContent || w.Body.String() != "shunt" {
		t.Errorf("range: prepared %v, status %d, body %q", w.fields != nil, w.Code, w.Body.String())
	}
}
