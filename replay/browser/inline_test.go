package browser

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/replay/site"
)

// A generated site's objects asked for together are answered by urgency
// (ServeInline), and as ServeHTTP answers them: from handler goroutines the
// last request asked for was often the first answered.
func TestSiteAnsweredByUrgencyInline(t *testing.T) {
	s, err := Build(testpages.Load(t, "test3.json"), false)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(s)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := site.Serve(site.ServeConfig{Handler: h, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var reqs []testpages.Request
	for _, o := range s.Objects {
		reqs = append(reqs, testpages.Request{Path: o.URL, Size: int64(len(o.Body)), Priority: "u=2, i"})
	}
	reqs[0].Priority = "u=0"
	for rep := range 20 {
		if order := testpages.DataOrder(t, srv.Addr, reqs); testpages.Interleaved(order, 1) {
			t.Fatalf("repetition %d: DATA frames by stream %v: another object's bytes before the u=0 one's end", rep, order)
		}
	}
	c := &http.Client{Transport: &h2.Transport{AllowHTTP: true}}
	for _, o := range s.Objects {
		res, err := c.Get("http://" + srv.Addr + o.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Equal(body, o.Body) || res.Header.Get("Content-Type") != o.MIME ||
			res.Header.Get("Cache-Control") != "no-store" || res.ContentLength != int64(len(o.Body)) {
			t.Errorf("%s: %d, %d bytes, %v", o.URL, res.StatusCode, len(body), res.Header)
		}
	}
}
