package h2

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pushing serves /gen/N like genHandler, and on "/" pushes /gen/N for each
// N in the push query parameter (comma-separated) before answering "root".
func pushing(t *testing.T) http.Handler {
	gen := genHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			gen.ServeHTTP(w, r)
			return
		}
		for _, n := range strings.Split(r.URL.Query().Get("push"), ",") {
			if err := w.(http.Pusher).Push("/gen/"+n, nil); err != nil {
				t.Errorf("push /gen/%s: %v", n, err)
			}
		}
		io.WriteString(w, "root")
	})
}

type pushed struct {
	path string
	body []byte
	err  error
}

func TestClientReceivesPush(t *testing.T) {
	ts := startServer(t, pushing(t), Config{}, false)
	got := make(chan pushed, 4)
	tr := newTestTransport(ts)
	tr.Config.OnPush = func(c *Conn, req *http.Request, res *http.Response) {
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		got <- pushed{req.URL.Path, b, err}
	}
	defer tr.CloseIdleConnections()
	if _, body := get(t, tr, ts.url("/?push=300000,17")); string(body) != "root" {
		t.Fatalf("root body %q", body)
	}
	want := map[string]int64{"/gen/300000": 300000, "/gen/17": 17}
	for range want {
		select {
		case p := <-got:
			n, ok := want[p.path]
			if !ok || p.err != nil {
				t.Fatalf("pushed %s: %v", p.path, p.err)
			}
			checkGen(t, p.body, n)
			delete(want, p.path)
		case <-time.After(5 * time.Second):
			t.Fatalf("pushes %v not received within 5 s", want)
		}
	}

	// Without OnPush the client announces ENABLE_PUSH 0 and the server's
	// Push fails (the handler reports it), so nothing arrives unasked.
	plain := newTestTransport(ts)
	defer plain.CloseIdleConnections()
	pushErrs := make(chan error, 1)
	ts2 := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pushErrs <- w.(http.Pusher).Push("/gen/10", nil)
		io.WriteString(w, "root")
	}), Config{}, false)
	get(t, plain, ts2.url("/"))
	if pushErr := <-pushErrs; pushErr != http.ErrNotSupported {
		t.Fatalf("push to a client without OnPush: %v, want %v", pushErr, http.ErrNotSupported)
	}
}
