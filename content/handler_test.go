package content

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fileBody is the content of a.txt in the test root: 100 distinct-ish bytes.
var fileBody = []byte(strings.Repeat("0123456789", 10))

func testRoot(t *testing.T) *Handler {
	t.Helper()
	outside := t.TempDir()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", fileBody)
	write("d/index.html", []byte("<p>index</p>"))
	if err := os.Mkdir(filepath.Join(dir, "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func do(h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func expect(t *testing.T, w *httptest.ResponseRecorder, status int, body []byte, hdr ...string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d (body %q)", w.Code, status, w.Body.Bytes())
	}
	if body != nil && !bytes.Equal(w.Body.Bytes(), body) {
		t.Errorf("body %q, want %q", w.Body.Bytes(), body)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if got := w.Header().Get(hdr[i]); got != hdr[i+1] {
			t.Errorf("%s: %q, want %q", hdr[i], got, hdr[i+1])
		}
	}
}

func TestFileRanges(t *testing.T) {
	h := testRoot(t)
	w := do(h, "GET", "/a.txt")
	expect(t, w, 200, fileBody, "Content-Length", "100", "Accept-Ranges", "bytes")
	etag, lastMod := w.Header().Get("ETag"), w.Header().Get("Last-Modified")
	if !strings.HasPrefix(etag, `"`) || lastMod == "" {
		t.Fatalf("ETag %q, Last-Modified %q: want a strong ETag and a date", etag, lastMod)
	}

	for _, tc := range []struct {
		name, rng    string
		status       int
		body         []byte
		contentRange string
	}{
		{"single", "bytes=0-9", 206, fileBody[0:10], "bytes 0-9/100"},
		{"middle", "bytes=42-42", 206, fileBody[42:43], "bytes 42-42/100"},
		{"suffix", "bytes=-5", 206, fileBody[95:], "bytes 95-99/100"},
		{"open-ended", "bytes=90-", 206, fileBody[90:], "bytes 90-99/100"},
		{"end past size", "bytes=95-1000", 206, fileBody[95:], "bytes 95-99/100"},
		{"start at size", "bytes=100-", 416, nil, "bytes */100"},
		{"start past size", "bytes=500-600", 416, nil, "bytes */100"},
		// net/http answers an invalid range 416 without Content-Range.
		{"malformed", "bytes=9-1", 416, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, "GET", "/a.txt", "Range", tc.rng)
			expect(t, w, tc.status, tc.body, "Content-Range", tc.contentRange)
			if tc.status == 206 {
				expect(t, w, 206, nil, "Content-Length", strconv.Itoa(len(tc.body)))
			}
		})
	}

	t.Run("multiple", func(t *testing.T) {
		w := do(h, "GET", "/a.txt", "Range", "bytes=0-1,5-6,-3")
		expectMultipart(t, w, fileBody, []string{"bytes 0-1/100", "bytes 5-6/100", "bytes 97-99/100"})
	})
	t.Run("if-none-match", func(t *testing.T) {
		expect(t, do(h, "GET", "/a.txt", "If-None-Match", etag), 304, []byte{})
		expect(t, do(h, "GET", "/a.txt", "If-None-Match", `"other"`), 200, fileBody)
	})
	t.Run("if-modified-since", func(t *testing.T) {
		expect(t, do(h, "GET", "/a.txt", "If-Modified-Since", lastMod), 304, []byte{})
	})
	t.Run("if-range", func(t *testing.T) {
		expect(t, do(h, "GET", "/a.txt", "Range", "bytes=0-9", "If-Range", etag), 206, fileBody[:10])
		// A stale validator means the client's partial copy is of another
		// version: the whole object comes back.
		expect(t, do(h, "GET", "/a.txt", "Range", "bytes=0-9", "If-Range", `"stale"`), 200, fileBody)
	})
	t.Run("head", func(t *testing.T) {
		expect(t, do(h, "HEAD", "/a.txt"), 200, []byte{}, "Content-Length", "100", "ETag", etag)
	})
}

func expectMultipart(t *testing.T, w *httptest.ResponseRecorder, object []byte, ranges []string) {
	t.Helper()
	if w.Code != 206 {
		t.Fatalf("status %d, want 206", w.Code)
	}
	mt, params, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
	if err != nil || mt != "multipart/byteranges" {
		t.Fatalf("Content-Type %q: want multipart/byteranges", w.Header().Get("Content-Type"))
	}
	if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
		t.Errorf("Content-Length %s, body is %d bytes", cl, w.Body.Len())
	}
	mr := multipart.NewReader(w.Body, params["boundary"])
	for i, want := range ranges {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		cr := part.Header.Get("Content-Range")
		if cr != want {
			t.Errorf("part %d Content-Range %q, want %q", i, cr, want)
		}
		var first, last int
		fmt.Sscanf(cr, "bytes %d-%d/", &first, &last)
		got, _ := io.ReadAll(part)
		if !bytes.Equal(got, object[first:last+1]) {
			t.Errorf("part %d (%s) body differs", i, cr)
		}
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Errorf("after %d parts: %v, want EOF", len(ranges), err)
	}
}

func TestFilePaths(t *testing.T) {
	h := testRoot(t)
	for _, tc := range []struct {
		target string
		status int
		body   string
	}{
		{"/d/", 200, "<p>index</p>"},
		{"/d", 200, "<p>index</p>"},
		{"/e/", 404, ""},
		{"/nope", 404, ""},
		{"/inside", 200, string(fileBody)},
		{"/escape", 404, ""},
		{"/../etc/passwd", 400, ""},
		{"/d/../../a.txt", 400, ""},
		{"/%2e%2e/etc/passwd", 400, ""},
		{"/d/..%2f..%2fa.txt", 400, ""},
		{"/d/..%5c..%5ca.txt", 400, ""},
	} {
		w := do(h, "GET", tc.target)
		if w.Code != tc.status || (tc.body != "" && w.Body.String() != tc.body) {
			t.Errorf("GET %s = %d %q, want %d %q", tc.target, w.Code, w.Body.String(), tc.status, tc.body)
		}
		if strings.Contains(w.Body.String(), "secret") {
			t.Errorf("GET %s leaked a file outside the root", tc.target)
		}
	}
	expect(t, do(h, "POST", "/a.txt"), 405, nil, "Allow", "GET, HEAD")
}

func TestGenerated(t *testing.T) {
	h, err := NewHandler("") // generated objects need no root
	if err != nil {
		t.Fatal(err)
	}
	ref := whole(1 << 20)
	w := do(h, "GET", "/gen/123")
	expect(t, w, 200, ref[:123], "Content-Length", "123", "ETag", GenETag(123),
		"Content-Type", "application/octet-stream", "Accept-Ranges", "bytes")
	expect(t, do(h, "GET", "/gen/0"), 200, []byte{}, "Content-Length", "0")
	expect(t, do(h, "GET", "/gen/1MiB", "Range", "bytes=1000-1999"), 206, ref[1000:2000], "Content-Range", "bytes 1000-1999/1048576")
	expect(t, do(h, "GET", "/gen/1MiB", "Range", "bytes=-10"), 206, ref[1<<20-10:], "Content-Range", "bytes 1048566-1048575/1048576")
	expect(t, do(h, "GET", "/gen/10KB", "Range", "bytes=10000-"), 416, nil, "Content-Range", "bytes */10000")
	expectMultipart(t, do(h, "GET", "/gen/10KB", "Range", "bytes=1-2,9000-"), ref[:10000],
		[]string{"bytes 1-2/10000", "bytes 9000-9999/10000"})
	expect(t, do(h, "GET", "/gen/10KB", "If-None-Match", GenETag(10000)), 304, []byte{})
	expect(t, do(h, "GET", "/gen/10KB", "Range", "bytes=0-9", "If-Range", GenETag(10000)), 206, ref[:10])
	expect(t, do(h, "GET", "/gen/10KB", "Range", "bytes=0-9", "If-Range", GenETag(10001)), 200, ref[:10000])
	expect(t, do(h, "HEAD", "/gen/50MB"), 200, []byte{}, "Content-Length", "50000000")
	expect(t, do(h, "GET", "/gen/50XB"), 400, nil)
	expect(t, do(h, "GET", "/gen/"), 400, nil)
	expect(t, do(h, "GET", "/a.txt"), 404, nil)
}

// Over a real connection: the body streams from the generator through
// net/http and verifies byte for byte.
func TestGeneratedOverHTTP(t *testing.T) {
	h, _ := NewHandler("")
	srv := httptest.NewServer(h)
	defer srv.Close()
	const size = 8 << 20
	resp, err := http.Get(srv.URL + "/gen/8MiB")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != size {
		t.Fatalf("Content-Length %d, want %d", resp.ContentLength, size)
	}
	n, err := io.Copy(NewVerifier(0), resp.Body)
	if err != nil || n != size {
		t.Fatalf("verified %d bytes: %v", n, err)
	}
}

func BenchmarkServeGenerated(b *testing.B) {
	h, _ := NewHandler("")
	r := httptest.NewRequest("GET", "/gen/16MiB", nil)
	b.SetBytes(16 << 20)
	for b.Loop() {
		h.ServeHTTP(discardWriter{make(http.Header)}, r)
	}
}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header       { return d.h }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

// isClean agrees with path.Clean on every path of up to 7 bytes from '/',
// '.' and 'a' that starts with a slash.
func TestIsClean(t *testing.T) {
	var walk func(p string)
	walk = func(p string) {
		if got, want := isClean(p), path.Clean(p) == p; got != want {
			t.Fatalf("isClean(%q) = %v, path.Clean gives %q", p, got, path.Clean(p))
		}
		if len(p) < 7 {
			for _, c := range "/.a" {
				walk(p + string(c))
			}
		}
	}
	walk("/")
}
