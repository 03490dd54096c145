package site

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"golang.org/x/net/http2/hpack"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/page"
)

// google's first requests on the cheap path in hints-latency (h75): a u=1
// script asked for just before three u=2 incremental images, in one packet.
const urgencyGraph = `{"start_activity":"d0","load_activity":"d1","objs":[
 {"id":"o0","path":"/s.js","download":{"id":"d0","type":"application/javascript"},"size":12333},
 {"id":"o1","path":"/1.png","download":{"id":"d1","type":"image/png"},"size":6167},
 {"id":"o2","path":"/2.png","download":{"id":"d2","type":"image/png"},"size":6167},
 {"id":"o3","path":"/3.png","download":{"id":"d3","type":"image/png"},"size":6167}],
 "deps":[{"id":"x","a1":"d0","a2":"d1","time":-1},{"id":"y","a1":"d0","a2":"d2","time":-1},{"id":"z","a1":"d0","a2":"d3","time":-1}]}`

// Requests that arrive together are answered by urgency: every DATA byte of
// the u=1 script comes before any of the u=2 images asked for after it in
// the same write. With the objects served from handler goroutines the
// images often came first (whichever goroutine ran first was ready first).
func TestRequestsTogetherAnsweredByUrgency(t *testing.T) {
	p := graphPage(t, "u", urgencyGraph)
	_, srv := serveLocal(t, p)
	var reqs []testpages.Request
	for i, r := range p.Resources() {
		reqs = append(reqs, testpages.Request{Path: URLPath(p.Name, r.Path), Size: r.Size, Priority: "u=2, i"})
		if i == 0 {
			reqs[0].Priority = "u=1"
		}
	}
	for rep := range 20 {
		if order := testpages.DataOrder(t, srv.Addr, reqs); testpages.Interleaved(order, 1) {
			t.Fatalf("repetition %d: DATA frames by stream %v: an image's bytes before the script's end", rep, order)
		}
	}
}

// serveLocal serves p over h2c on loopback until the test ends.
func serveLocal(t *testing.T, p *page.Page) (*Handler, *Running) {
	t.Helper()
	h, err := NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(ServeConfig{Handler: h, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return h, srv
}

// ServeInline gives what ServeHTTP gives: the same 200, fields and body
// over HTTP/2, and declines ranges and conditions.
func TestServeInlineAnswersAsServeHTTP(t *testing.T) {
	p := testPage(t, "pg")
	h, srv := serveLocal(t, p)
	c := &http.Client{Transport: &h2.Transport{AllowHTTP: true}}
	for _, o := range p.Objects {
		u := URLPath(p.Name, o.Path)
		want := get(t, h, u) // ServeHTTP
		res, err := c.Get("http://" + srv.Addr + u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Equal(body, want.Body.Bytes()) {
			t.Errorf("GET %s: %d, %d bytes; ServeHTTP: %d bytes", u, res.StatusCode, len(body), want.Body.Len())
		}
		for _, k := range []string{"Content-Type", DigestHeader, "Cache-Control", "Accept-Ranges", "Content-Length"} {
			if res.Header.Get(k) != want.Header().Get(k) {
				t.Errorf("GET %s: %s %q, ServeHTTP %q", u, k, res.Header.Get(k), want.Header().Get(k))
			}
		}
	}
	w := &preparedRecorder{}
	r, _ := http.NewRequest(http.MethodGet, URLPath(p.Name, p.Objects[0].Path), nil)
	r.RequestURI = r.URL.RequestURI()
	if !h.ServeInline(w, r) || w.body == nil {
		t.Fatal("a plain GET not answered inline")
	}
	for _, k := range conditional {
		w := &preparedRecorder{}
		r.Header = http.Header{k: {"bytes=0-1"}}
		if h.ServeInline(w, r) || w.body != nil {
			t.Errorf("a GET with %s answered inline", k)
		}
	}
}

type preparedRecorder struct {
	http.ResponseWriter
	body []byte
}

func (w *preparedRecorder) WritePrepared(status int, fields []hpack.HeaderField, body []byte) error {
	w.body = body
	return nil
}
