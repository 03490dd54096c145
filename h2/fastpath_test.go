package h2

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
)

// io.Copy into the ResponseWriter goes through ReadFrom; bodies of every
// size around the chunk boundaries arrive whole, with the declared length
// enforced and HEAD sending none.
func TestResponseReadFrom(t *testing.T) {
	body := make([]byte, 3*chunkSize+77)
	for i := range body {
		body[i] = byte(i*31 + i>>8)
	}
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if cl := r.URL.Query().Get("cl"); cl != "" {
			w.Header().Set("Content-Length", cl)
		}
		// A bare io.Reader hides bytes.Reader's WriterTo, so io.Copy must use ReadFrom.
		_, err := io.Copy(w, struct{ io.Reader }{bytes.NewReader(body[:n])})
		if r.URL.Query().Get("cl") == "5" && err != http.ErrContentLength {
			t.Errorf("io.Copy of %d bytes with Content-Length 5: err %v, want ErrContentLength", n, err)
		}
	}), Config{}, false)
	defer ts.close()
	if _, ok := any(&responseWriter{}).(io.ReaderFrom); !ok {
		t.Fatal("responseWriter is not an io.ReaderFrom")
	}
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	get := func(method, query string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.url("/?"+query), nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, query, err)
		}
		return res, b
	}
	for _, n := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 2 * chunkSize, len(body)} {
		q := "n=" + strconv.Itoa(n)
		if _, b := get("GET", q); !bytes.Equal(b, body[:n]) {
			t.Errorf("GET of %d bytes: got %d bytes, differing", n, len(b))
		}
		if res, b := get("HEAD", q+"&cl="+strconv.Itoa(n)); len(b) != 0 || res.ContentLength != int64(n) {
			t.Errorf("HEAD of %d bytes: %d body bytes, Content-Length %d", n, len(b), res.ContentLength)
		}
	}
	// A body longer than declared is refused and, since none of it went
	// out, the stream is reset rather than ended short.
	req, _ := http.NewRequest("GET", ts.url("/?n=100&cl=5"), nil)
	if res, err := tr.RoundTrip(req); err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil {
			t.Error("a response whose body overran its Content-Length ended normally")
		}
	}
}

// The request context carries the stream and the Conn, is a parent like any
// other, and ends when the client resets the stream.
func TestRequestContext(t *testing.T) {
	done := make(chan error, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if StreamFromContext(ctx) == nil || ctx.Value(ConnContextKey).(*Conn) == nil {
			t.Error("request context lacks the stream or the Conn")
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		child, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		<-child.Done()
		done <- context.Cause(child)
	}), Config{}, false)
	defer ts.close()
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url("/"), nil)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel() // resets the stream
	res.Body.Close()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("derived context ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's derived context outlived the stream reset")
	}
}

// parseRequestPath agrees with url.ParseRequestURI on every input.
func FuzzParseRequestPath(f *testing.F) {
	for _, p := range []string{"/", "/16KB", "/gen/1MB", "//x", "/a/../b", "/a?b=c", "/%41", "/a b", "*", "", "http://h/p", "/~u/x.y-z_"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := new(url.URL)
		gerr := parseRequestPath(p, got)
		want, werr := url.ParseRequestURI(p)
		if (gerr == nil) != (werr == nil) || gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("parseRequestPath(%q) = %#v, %v; url.ParseRequestURI: %#v, %v", p, got, gerr, want, werr)
		}
	})
}

// WriteShared bytes, alone or between copied writes, arrive whole and in
// order, with and without a declared length.
func TestResponseWriteShared(t *testing.T) {
	shared := make([]byte, 1<<20+333)
	for i := range shared {
		shared[i] = byte(i*7 + i>>10)
	}
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, ok := w.(SharedWriter)
		if !ok {
			t.Error("the ResponseWriter is not a SharedWriter")
			return
		}
		mixed := r.URL.Query().Get("mixed") != ""
		if r.URL.Query().Get("cl") != "" {
			n := len(shared)
			if mixed {
				n += 6
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		if mixed {
			w.Write([]byte("abc"))
		}
		if n, err := sw.WriteShared(shared); n != len(shared) || err != nil {
			t.Errorf("WriteShared = %d, %v", n, err)
		}
		if mixed {
			w.Write([]byte("xyz"))
		}
	}), Config{}, false)
	defer ts.close()
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	for _, q := range []string{"", "cl=1", "mixed=1", "mixed=1&cl=1"} {
		req, _ := http.NewRequest("GET", ts.url("/?"+q), nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		want := shared
		if strings.Contains(q, "mixed") {
			want = append(append([]byte("abc"), shared...), "xyz"...)
		}
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("?%s: %d bytes (want %d), equal %v, err %v", q, len(b), len(want), bytes.Equal(b, want), err)
		}
	}
}

// WritePrepared sends its fields as given after the header map's, its body
// whole (HEAD: none, with the length), sniffs no Content-Type, and refuses
// an informational status or a response whose header went already.
func TestResponseWritePrepared(t *testing.T) {
	body := bytes.Repeat([]byte("prepared "), 3000)
	fields := []hpack.HeaderField{{Name: "etag", Value: `"p1"`}, {Name: "content-length", Value: strconv.Itoa(len(body))}, {Name: "x-prepared", Value: "yes"}}
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw, ok := w.(PreparedWriter)
		if !ok {
			t.Error("the ResponseWriter is not a PreparedWriter")
			return
		}
		switch r.URL.Path {
		case "/late":
			w.WriteHeader(http.StatusAccepted)
			if pw.WritePrepared(http.StatusOK, fields, body) == nil {
				t.Error("WritePrepared after WriteHeader succeeded")
			}
			return
		case "/early":
			if pw.WritePrepared(http.StatusEarlyHints, fields, body) == nil {
				t.Error("WritePrepared with 103 succeeded")
			}
			w.WriteHeader(http.StatusTeapot)
			return
		case "/empty":
			if err := pw.WritePrepared(http.StatusNoContent, fields[2:], nil); err != nil {
				t.Errorf("WritePrepared 204: %v", err)
			}
			return
		}
		w.Header().Set("X-Map", "m")
		if err := pw.WritePrepared(http.StatusOK, fields, body); err != nil {
			t.Errorf("WritePrepared: %v", err)
		}
	}), Config{}, false)
	defer ts.close()
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	for _, c := range []struct {
		method, path string
		status       int
		body         []byte
		header       http.Header
	}{
		{"GET", "/", 200, body, http.Header{"Etag": {`"p1"`}, "Content-Length": {strconv.Itoa(len(body))}, "X-Prepared": {"yes"}, "X-Map": {"m"}}},
		{"HEAD", "/", 200, nil, http.Header{"Etag": {`"p1"`}, "Content-Length": {strconv.Itoa(len(body))}, "X-Prepared": {"yes"}, "X-Map": {"m"}}},
		{"GET", "/empty", 204, nil, http.Header{"X-Prepared": {"yes"}}},
		{"GET", "/late", 202, nil, nil},
		{"GET", "/early", 418, nil, nil},
	} {
		req, _ := http.NewRequest(c.method, ts.url(c.path), nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != c.status || !bytes.Equal(b, c.body) {
			t.Errorf("%s %s: status %d (want %d), %d bytes (want %d), err %v", c.method, c.path, res.StatusCode, c.status, len(b), len(c.body), err)
		}
		for k, v := range c.header {
			if !slices.Equal(res.Header[k], v) {
				t.Errorf("%s %s: %s %q, want %q", c.method, c.path, k, res.Header[k], v)
			}
		}
		if c.header != nil && len(res.Header) != len(c.header) {
			t.Errorf("%s %s: headers %v, want only %v (no sniffed Content-Type)", c.method, c.path, res.Header, c.header)
		}
	}
}

// simplePath takes a slash, then only unreserved bytes and slashes.
func TestSimplePath(t *testing.T) {
	for b := 0; b < 256; b++ {
		c := byte(b)
		want := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~'
		if got := simplePath("/a" + string(c)); got != want {
			t.Errorf("simplePath(%q) = %v, want %v", "/a"+string(c), got, want)
		}
	}
	for p, want := range map[string]bool{"": false, "/": true, "obj": false, "/obj": true, "/a/b.c": true, "/a?b": false, "/%41": false} {
		if got := simplePath(p); got != want {
			t.Errorf("simplePath(%q) = %v, want %v", p, got, want)
		}
	}
}
