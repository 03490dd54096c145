package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// get --data @FILE POSTs the file, over HTTP/1.1 and h2c.
func TestGetData(t *testing.T) {
	body := bytes.Repeat([]byte("posted "), 30000)
	file := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || err != nil || !bytes.Equal(got, body) || r.ContentLength != int64(len(body)) {
			http.Error(w, "bad upload", http.StatusBadRequest)
			return
		}
		io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = p
	srv.Start()
	defer srv.Close()
	for _, tc := range []struct{ args []string }{{nil}, {[]string{"--h2c"}}} {
		out, stderr, err := runGetTest(t, append(tc.args, "--data", "@"+file, srv.URL+"/")...)
		if err != nil {
			t.Fatalf("get %v: %v\n%s", tc.args, err, stderr)
		}
		want := "HTTP/1.1"
		if len(tc.args) > 0 {
			want = "HTTP/2.0"
		}
		if string(out) != want {
			t.Errorf("get %v: the server saw %q, want %q", tc.args, out, want)
		}
	}
	for _, bad := range []string{file, "@", "@" + file + ".missing"} {
		if _, _, err := runGetTest(t, "--data", bad, srv.URL+"/"); err == nil || !strings.Contains(err.Error(), "--data") {
			t.Errorf("--data %q: %v", bad, err)
		}
	}
}
