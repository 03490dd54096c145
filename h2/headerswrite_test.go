package h2

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestResponseHeaderFrames: the writer's HEADERS frames, written without
// the Framer, carry END_STREAM and END_HEADERS as they should, and a
// header block over the peer's frame size goes on in CONTINUATION frames.
func TestResponseHeaderFrames(t *testing.T) {
	big := strings.Repeat("x", 40<<10) // over 16,384: HEADERS + CONTINUATION
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("X-Big", big)
			w.Write([]byte("body"))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Write([]byte("body"))
		}
	}), Config{}, false)
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	for _, c := range []struct {
		path, body string
		status     int
	}{{"/big", "body", 200}, {"/empty", "", 204}, {"/plain", "body", 200}} {
		req, _ := http.NewRequest("GET", ts.url(c.path), nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != c.status || string(b) != c.body {
			t.Fatalf("%s: %d %q %v, want %d %q", c.path, res.StatusCode, b, err, c.status, c.body)
		}
		if c.path == "/big" && res.Header.Get("X-Big") != big {
			t.Fatalf("X-Big of %d bytes, want %d", len(res.Header.Get("X-Big")), len(big))
		}
	}
}
