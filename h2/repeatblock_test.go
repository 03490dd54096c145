package h2

import (
	"net/http"
	"testing"

	"golang.org/x/net/http2"
)

// methodPathServer answers every request with its method and path.
func methodPathServer(t *testing.T) *testServer {
	return startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Method + " " + r.URL.Path))
	}), Config{}, false)
}

// TestRepeatBlockFollowsTable: a header block that repeats the last one
// byte for byte is answered from the fields decoded before, but not once
// a block between them changed the entry it indexes; literals not indexed
// repeat too; a block with a size update is decoded every time.
func TestRepeatBlockFollowsTable(t *testing.T) {
	rc := dialRaw(t, methodPathServer(t).addr)
	// GET (POST), http, then :path as a literal indexed into the dynamic
	// table (entry 62), or as entry 62 itself (0xbe).
	literal := func(method byte, p string) []byte { return append([]byte{method, 0x86, 0x44, byte(len(p))}, p...) }
	indexed := []byte{0x82, 0x86, 0xbe}
	// :path as a literal not indexed (h2load's), then a size update.
	notIndexed := append([]byte{0x82, 0x86, 0x04, 2}, "/c"...)
	resized := append([]byte{0x3f, 0xe1, 0x1f}, indexed...) // size 4096: entry 62 stays
	for i, c := range []struct {
		block []byte
		want  string
	}{
		{literal(0x82, "/a"), "GET /a"},
		{indexed, "GET /a"}, // remembered
		{indexed, "GET /a"}, // repeated
		{literal(0x83, "/b"), "POST /b"},
		{indexed, "GET /b"}, // entry 62 is /b now
		{indexed, "GET /b"},
		{notIndexed, "GET /c"},
		{notIndexed, "GET /c"}, // repeated
		{indexed, "GET /b"},
		{resized, "GET /b"},
		{resized, "GET /b"},
		{literal(0x83, "/d"), "POST /d"},
		{notIndexed, "GET /c"},
	} {
		id := uint32(1 + 2*i)
		if err := rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block, EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if got := string(rc.readBody(id)); got != c.want {
			t.Fatalf("request %d: path %q, want %q", i, got, c.want)
		}
	}
}
