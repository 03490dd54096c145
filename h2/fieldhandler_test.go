package h2

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"golang.org/x/net/http2/hpack"
)

var _ FieldHandler = (*content.Handler)(nil)

// countFields is a FieldHandler that counts the requests ServeFields
// answered.
type countFields struct {
	*content.Handler
	answered atomic.Int32
}

func (h *countFields) ServeFields(method, path string, fields []hpack.HeaderField) (int, []hpack.HeaderField, []byte, bool) {
	status, header, body, ok := h.Handler.ServeFields(method, path, fields)
	if ok {
		h.answered.Add(1)
	}
	return status, header, body, ok
}

// inlineOnly hides ServeFields: the engine answers through ServeInline.
type inlineOnly struct{ InlineHandler }

// handlerOnly hides ServeInline too: every request goes to ServeHTTP.
type handlerOnly struct{ http.Handler }

// TestFieldHandlerSameAnswers: content.Handler's answers through
// ServeFields are those it gives through ServeInline and ServeHTTP, for
// plain requests of cached files and for everything it declines (ranges,
// conditions, other methods, paths with escapes or a query, errors).
func TestFieldHandlerSameAnswers(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	body := bytes.Repeat([]byte("shunt static "), 100)
	for name, data := range map[string][]byte{"obj.txt": body, "sub/index.html": []byte("<p>index</p>"), "empty": nil} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil || os.Chtimes(p, old, old) != nil {
			t.Fatal("writing", name, err)
		}
	}
	h, err := content.NewHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// A request line, then its header lines; a POST carries a body.
	reqs := []string{
		"GET /obj.txt",
		"HEAD /obj.txt",
		"GET /empty",
		"HEAD /empty",
		"GET /obj.txt\nRange: bytes=10-19",
		"GET /obj.txt\nRange: bytes=0-1,5-6",
		"GET /obj.txt\nRange: bytes=9000-",
		"GET /obj.txt\nIf-Modified-Since: " + old.UTC().Format(http.TimeFormat),
		"GET /obj.txt\nIf-Unmodified-Since: Mon, 02 Jan 2006 15:04:05 GMT",
		"GET /obj.txt\nIf-Match: \"nope\"",
		"GET /obj.txt\nIf-None-Match: *",
		"GET /obj.txt\nIf-Range: \"nope\"",
		"GET /obj.txt\nAccept: */*\nUser-Agent: h2load\nPriority: u=1",
		"GET /obj.txt?x=1",
		"GET /%6Fbj.txt",
		"GET /sub/",
		"GET /sub",
		"GET /missing",
		"GET /a/../obj.txt",
		"GET /gen/1KB",
		"GET /gen/1KB\nRange: bytes=0-9",
		"DELETE /obj.txt",
		"POST /obj.txt",
	}
	type answer struct {
		status int
		header http.Header
		body   []byte
	}
	ask := func(tr *Transport, ts *testServer, r string) answer {
		lines := strings.Split(r, "\n")
		method, path, _ := strings.Cut(lines[0], " ")
		var rb io.Reader
		if method == "POST" {
			rb = strings.NewReader("x")
		}
		hr, err := http.NewRequest(method, ts.url("/"), rb)
		if err != nil {
			t.Fatal(err)
		}
		hr.URL.Opaque = path // sent as :path, uncleaned
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ": ")
			hr.Header.Set(k, v)
		}
		res, err := tr.RoundTrip(hr)
		if err != nil {
			t.Fatalf("%q: %v", r, err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("%q: body: %v", r, err)
		}
		// A multipart answer's boundary is random: compare the rest.
		if ct := res.Header.Get("Content-Type"); strings.HasPrefix(ct, "multipart/byteranges; boundary=") {
			b := strings.TrimPrefix(ct, "multipart/byteranges; boundary=")
			got = bytes.ReplaceAll(got, []byte(b), []byte("BOUNDARY"))
			res.Header.Set("Content-Type", "multipart/byteranges; boundary=BOUNDARY")
		}
		return answer{res.StatusCode, res.Header, got}
	}
	for _, useTLS := range []bool{false, true} {
		fh := &countFields{Handler: h}
		servers := map[string]http.Handler{"fields": fh, "inline": inlineOnly{h}, "handler": handlerOnly{h}}
		got := map[string][]answer{}
		for name, sh := range servers {
			ts := startServer(t, sh, Config{}, useTLS)
			tr := newTestTransport(ts)
			for round := 0; round < 2; round++ { // the first loads the cache
				for _, r := range reqs {
					got[name] = append(got[name], ask(tr, ts, r))
				}
			}
			tr.CloseIdleConnections()
		}
		for i, want := range got["handler"] {
			r := reqs[i%len(reqs)]
			for _, name := range []string{"fields", "inline"} {
				if a := got[name][i]; !reflect.DeepEqual(a, want) {
					t.Errorf("tls %v, %q (round %d): %s answered %d %v %q, ServeHTTP %d %v %q", useTLS, r,
						i/len(reqs), name, a.status, a.header, a.body, want.status, want.header, want.body)
				}
			}
		}
		// Plain GETs and HEADs of the cached files, in the second round
		// (and /obj.txt's with other fields in the first).
		if n := fh.answered.Load(); n < 6 {
			t.Errorf("tls %v: ServeFields answered %d requests, want at least 6", useTLS, n)
		}
	}
}
