package site

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/page"
)

const testGraph = `{"start_activity":"d0","load_activity":"d1","objs":[
 {"id":"o0","path":"/index.html","download":{"id":"d0","type":"text/html"},"size":3000},
 {"id":"o1","path":"/a.png?v=1","download":{"id":"d1","type":"image/png"},"size":5000},
 {"id":"o2","path":"/b.png","download":{"id":"d2","type":"image/png"},"size":5000}],
 "deps":[{"id":"x","a1":"d0","a2":"d1","time":-1},{"id":"y","a1":"d0","a2":"d2","time":-1}]}`

func testPage(t *testing.T, name string) *page.Page {
	t.Helper()
	return graphPage(t, name, testGraph)
}

func graphPage(t *testing.T, name, graph string) *page.Page {
	t.Helper()
	p, err := page.ReadGraph(name+".json", []byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	p.Name = name
	return p
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

func TestHandlerServesVerifiableObjects(t *testing.T) {
	p := testPage(t, "pg")
	h, err := NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 3 {
		t.Fatalf("%d objects, want 3", h.Len())
	}
	bodies := map[string][]byte{}
	for _, o := range p.Objects {
		u := URLPath(p.Name, o.Path)
		w := get(t, h, u)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", u, w.Code)
		}
		if ct := w.Header().Get("Content-Type"); ct != o.MIME {
			t.Errorf("GET %s: Content-Type %q, want %q", u, ct, o.MIME)
		}
		v := NewVerifier(u, o.Size)
		if _, err := v.Write(w.Body.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := v.Finish(w.Header().Get(DigestHeader)); err != nil {
			t.Fatal(err)
		}
		bodies[o.Path] = w.Body.Bytes()
	}
	// Same size, different paths: different bytes, so a swap is caught.
	if bytes.Equal(bodies["/a.png?v=1"], bodies["/b.png"]) {
		t.Error("objects of equal size have equal bodies")
	}
	if w := get(t, h, URLPath(p.Name, "/a.png")); w.Code != http.StatusNotFound {
		t.Errorf("path without its query: %d, want 404", w.Code)
	}
}

func TestVerifierRejects(t *testing.T) {
	p := testPage(t, "pg")
	h, err := NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	a, b := URLPath("pg", "/a.png?v=1"), URLPath("pg", "/b.png")
	wa, wb := get(t, h, a), get(t, h, b)

	// The other object's bytes fail at the first byte.
	if _, err := NewVerifier(a, 5000).Write(wb.Body.Bytes()); !errors.Is(err, content.ErrMismatch) {
		t.Errorf("other object's body: %v, want ErrMismatch", err)
	}
	// Short body.
	v := NewVerifier(a, 5000)
	v.Write(wa.Body.Bytes()[:4999])
	if err := v.Finish(wa.Header().Get(DigestHeader)); err == nil || !strings.Contains(err.Error(), "4999 bytes") {
		t.Errorf("short body: %v", err)
	}
	// Too long.
	if _, err := NewVerifier(a, 4000).Write(wa.Body.Bytes()); err == nil {
		t.Error("body longer than the object accepted")
	}
	// Right bytes, but the server claims another digest.
	v = NewVerifier(a, 5000)
	v.Write(wa.Body.Bytes())
	if err := v.Finish(wb.Header().Get(DigestHeader)); !errors.Is(err, ErrDigest) {
		t.Errorf("wrong digest: %v, want ErrDigest", err)
	}
	v = NewVerifier(a, 5000)
	v.Write(wa.Body.Bytes())
	if err := v.Finish(""); err == nil {
		t.Error("missing digest accepted")
	}
}

func TestNewHandlerRejectsDuplicateNames(t *testing.T) {
	if _, err := NewHandler(testPage(t, "pg"), testPage(t, "pg")); err == nil || !strings.Contains(err.Error(), "already served") {
		t.Errorf("duplicate page names: %v", err)
	}
}

func TestDigestRoundTrip(t *testing.T) {
	d, err := Digest("/page/x/y", 12345)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseDigest("md5=:AAAA:, " + FormatDigest(d))
	if err != nil || got != d {
		t.Errorf("ParseDigest(FormatDigest) = %x, %v; want %x", got, err, d)
	}
	body, _ := io.ReadAll(Body("/page/x/y", 12345))
	if len(body) != 12345 {
		t.Errorf("body %d bytes", len(body))
	}
}

func FuzzParseDigest(f *testing.F) {
	f.Add(FormatDigest([32]byte{1, 2, 3}))
	f.Add("sha-256=:x:")
	f.Fuzz(func(t *testing.T, v string) {
		d, err := ParseDigest(v)
		if err != nil {
			return
		}
		if again, err := ParseDigest(FormatDigest(d)); err != nil || again != d {
			t.Fatalf("round trip of %q: %x, %v", v, again, err)
		}
	})
}
