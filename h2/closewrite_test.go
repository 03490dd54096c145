package h2

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

// CloseWrite ends the response (END_STREAM) while the handler still reads
// the request body: the client sees the whole response before it sends the
// rest of its body, as either end of a CONNECT tunnel may close first.
func TestCloseWriteKeepsRequestBody(t *testing.T) {
	got := make(chan string, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "response")
		if err := w.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Errorf("CloseWrite: %v", err)
		}
		if _, err := io.WriteString(w, "more"); err == nil {
			t.Errorf("write after CloseWrite succeeded")
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("request body after CloseWrite: %v", err)
		}
		got <- string(b)
	}), Config{}, false)
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, _ string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ts.addr)
	}}
	defer tr.CloseIdleConnections()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, "http://"+ts.addr+"/", pr)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(res.Body); err != nil || string(b) != "response" {
		t.Fatalf("response %q, %v; want it whole with the request body open", b, err)
	}
	io.WriteString(pw, "request")
	pw.Close()
	if b := <-got; b != "request" {
		t.Fatalf("handler read %q, want the body sent after the response ended", b)
	}
}

// CloseWrite succeeds when the response's END_STREAM closes the stream
// before CloseWrite returns: the request body had already ended (the CI
// flake of 28 Nov, where the client's body arrived in that window).
func TestCloseWriteAfterRequestEnded(t *testing.T) {
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		io.WriteString(w, "response")
		if err := w.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Errorf("CloseWrite: %v", err)
		}
	}), Config{}, false)
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, _ string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ts.addr)
	}}
	defer tr.CloseIdleConnections()
	for i := 0; i < 200 && !t.Failed(); i++ {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ts.addr+"/", strings.NewReader("request"))
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(res.Body); err != nil || string(b) != "response" {
			t.Fatalf("response %q, %v", b, err)
		}
	}
}
