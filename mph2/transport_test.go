package mph2

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
)

// countingHandler serves shunt's content through edit (which may change
// the request or the response headers) and records every request's Range.
type countingHandler struct {
	h      http.Handler
	edit   func(w http.ResponseWriter, r *http.Request) http.ResponseWriter
	mu     sync.Mutex
	ranges []string
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.ranges = append(c.ranges, r.Header.Get("Range"))
	c.mu.Unlock()
	if c.edit != nil {
		w = c.edit(w, r)
	}
	c.h.ServeHTTP(w, r)
}

func (c *countingHandler) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ranges...)
}

// noAcceptRanges drops Accept-Ranges from the response: a server without
// range support as far as the client can tell.
type noAcceptRanges struct{ http.ResponseWriter }

func (w noAcceptRanges) WriteHeader(code int) {
	w.Header().Del("Accept-Ranges")
	w.ResponseWriter.WriteHeader(code)
}

func (w noAcceptRanges) Write(p []byte) (int, error) {
	w.Header().Del("Accept-Ranges")
	return w.ResponseWriter.Write(p)
}

func newCounting(t *testing.T, edit func(w http.ResponseWriter, r *http.Request) http.ResponseWriter) (*countingHandler, string) {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hd.Close() })
	ch := &countingHandler{h: hd, edit: edit}
	return ch, startServer(t, ch)
}

// getSum GETs url through tr and returns the response with its body's
// length and SHA-256 (the body read to its end or error).
func getSum(t *testing.T, tr http.RoundTripper, req *http.Request) (*http.Response, int64, [32]byte, error) {
	t.Helper()
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	var sum [32]byte
	h.Sum(sum[:0])
	return res, n, sum, err
}

func TestTransportSplitsLargeObjects(t *testing.T) {
	ch, base := newCounting(t, nil)
	const size = 2<<20 + 12345
	c := &Client{Paths: []Path{loopPath("a", 8e6, 0), loopPath("b", 3e6, 0)}}
	defer c.Close()
	var mu sync.Mutex
	delivered := map[int]int64{}
	tr := &Transport{Client: c, Options: Options{Progress: func(p int, n int64) { mu.Lock(); delivered[p] = n; mu.Unlock() }}}
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/gen/%d", base, size), nil)
	res, n, sum, err := getSum(t, tr, req)
	if err != nil || res.StatusCode != 200 || res.ContentLength != size || n != size || sum != content.Digest(size) {
		t.Fatalf("status %d, Content-Length %d, body %d bytes (%v), SHA-256 ok %v; want 200 and %d bytes", res.StatusCode, res.ContentLength, n, err, sum == content.Digest(size), size)
	}
	if res.Header.Get("Content-Range") != "" {
		t.Fatalf("a whole object with Content-Range %q", res.Header.Get("Content-Range"))
	}
	mu.Lock()
	defer mu.Unlock()
	if delivered[0] == 0 || delivered[1] == 0 || delivered[0]+delivered[1] != size {
		t.Fatalf("delivered per path %v, want both paths and %d in all", delivered, size)
	}
	if r := ch.requests(); len(r) < 2 || r[0] != "" {
		t.Fatalf("requests' ranges %q: want a whole-object GET, then ranges", r)
	}
}

// The body a split response streams to the caller grows at both paths'
// rate, not at the first path's until its share is in: the caller reads
// the first half of the object in about half the whole's time. (With the
// object cut in one share per path, the first half was the primary's share,
// in at the end.)
func TestTransportPrefixGrowsAtBothPaths(t *testing.T) {
	_, base := newCounting(t, nil)
	const size = 4 << 20
	c := &Client{Paths: []Path{loopPath("a", 2e6, 0), loopPath("b", 2e6, 0)}}
	defer c.Close()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/gen/%d", base, size), nil)
	start := time.Now()
	res, err := (&Transport{Client: c}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	h := sha256.New()
	var n int64
	var half time.Duration
	buf := make([]byte, 32<<10)
	for {
		k, err := res.Body.Read(buf)
		h.Write(buf[:k])
		if n += int64(k); n >= size/2 && half == 0 {
			half = time.Since(start)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	whole := time.Since(start)
	if n != size || [32]byte(h.Sum(nil)) != content.Digest(size) {
		t.Fatalf("body %d bytes, SHA-256 ok %v; want /gen/%d", n, [32]byte(h.Sum(nil)) == content.Digest(size), size)
	}
	t.Logf("first half read after %v, the whole after %v", half, whole)
	if half > whole*3/4 {
		t.Fatalf("first half read after %v of %v: the prefix grew at one path's rate", half, whole)
	}
}

// Everything not worth or not possible to split is the first path's
// response, passed through as it came.
func TestTransportPassesThrough(t *testing.T) {
	const big = 3 << 20
	for _, tc := range []struct {
		name   string
		edit   func(w http.ResponseWriter, r *http.Request) http.ResponseWriter
		method string
		path   string
		header string // "Name: value" of the caller's own
		status int
		size   int64 // the body's length; its SHA-256 is /gen/size's, or -1: not checked
		ranges []string
	}{
		{name: "small", path: "/gen/100000", status: 200, size: 100000, ranges: []string{""}},
		{name: "no-accept-ranges", edit: func(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
			r.Header.Del("Range")
			return noAcceptRanges{w}
		}, path: fmt.Sprint("/gen/", big), status: 200, size: big, ranges: []string{""}},
		{name: "not-found", path: "/nothing-here", status: 404, size: -1, ranges: []string{""}},
		{name: "head", method: "HEAD", path: fmt.Sprint("/gen/", big), status: 200, size: -1, ranges: []string{""}},
		{name: "callers-range", path: fmt.Sprint("/gen/", big), header: "Range: bytes=0-99", status: 206, size: 100, ranges: []string{"bytes=0-99"}},
		{name: "conditional", path: fmt.Sprint("/gen/", big), header: "If-None-Match: " + content.GenETag(big), status: 304, size: -1, ranges: []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, base := newCounting(t, tc.edit)
			c := &Client{Paths: []Path{loopPath("a", 0, 0), loopPath("b", 0, 0)}}
			defer c.Close()
			method := tc.method
			if method == "" {
				method = "GET"
			}
			req, _ := http.NewRequest(method, base+tc.path, nil)
			if tc.header != "" {
				k, v, _ := strings.Cut(tc.header, ": ")
				req.Header.Set(k, v)
			}
			res, n, sum, err := getSum(t, &Transport{Client: c}, req)
			if err != nil || res.StatusCode != tc.status {
				t.Fatalf("status %d, body %v; want %d", res.StatusCode, err, tc.status)
			}
			if tc.size >= 0 && (n != tc.size || sum != content.Digest(tc.size)) {
				t.Fatalf("body %d bytes, SHA-256 ok %v; want /gen/%d", n, sum == content.Digest(tc.size), tc.size)
			}
			if r := ch.requests(); fmt.Sprint(r) != fmt.Sprint(tc.ranges) {
				t.Fatalf("server saw ranges %q, want %q", r, tc.ranges)
			}
		})
	}
}

// A server that says it has ranges but answers them with 200s: the split
// falls back to one stream and the body is still the object.
func TestTransportServerIgnoringRanges(t *testing.T) {
	_, base := newCounting(t, func(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
		r.Header.Del("Range")
		return w
	})
	const size = 2 << 20
	c := &Client{Paths: []Path{loopPath("a", 8e6, 0), loopPath("b", 8e6, 0)}}
	defer c.Close()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/gen/%d", base, size), nil)
	res, n, sum, err := getSum(t, &Transport{Client: c}, req)
	if err != nil || res.StatusCode != 200 || res.ContentLength != size || n != size || sum != content.Digest(size) {
		t.Fatalf("status %d, Content-Length %d, body %d bytes (%v), SHA-256 ok %v", res.StatusCode, res.ContentLength, n, err, sum == content.Digest(size))
	}
}

func TestTransportPOST(t *testing.T) {
	base := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%s %d %x", r.Method, n, h.Sum(nil))
	}))
	c := &Client{Paths: []Path{loopPath("a", 0, 0), loopPath("b", 0, 0)}}
	defer c.Close()
	payload := strings.Repeat("shunt", 100000)
	res, err := (&Transport{Client: c}).RoundTrip(mustRequest(t, "POST", base+"/echo", strings.NewReader(payload)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if want := fmt.Sprintf("POST %d %x", len(payload), sha256.Sum256([]byte(payload))); err != nil || string(got) != want {
		t.Fatalf("response %q (%v), want %q", got, err, want)
	}
}

// When every path fails mid-body for good (redials refused until the stall
// timeout), Read says so: the body is never cut short with a clean EOF.
func TestTransportBrokenBody(t *testing.T) {
	_, base := newCounting(t, nil)
	const size = 4 << 20
	c := &Client{Paths: []Path{loopPath("a", 0, 700<<10), loopPath("b", 0, 500<<10)}, StallTimeout: 2 * time.Second}
	defer c.Close()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/gen/%d", base, size), nil)
	res, n, _, err := getSum(t, &Transport{Client: c}, req)
	if res.StatusCode != 200 || err == nil || n >= size {
		t.Fatalf("status %d, body %d of %d bytes, error %v; want a read error before the end", res.StatusCode, n, size, err)
	}
	if errors.Is(err, io.EOF) {
		t.Fatalf("read error %v is EOF", err)
	}
}

func mustRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
