package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/net/http2"
)

func newTestTransport(ts *testServer) *Transport {
	return &Transport{AllowHTTP: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
}

func (ts *testServer) url(path string) string {
	if ts.tls != nil {
		return "https://" + ts.addr + path
	}
	return "http://" + ts.addr + path
}

func checkGen(t *testing.T, body []byte, n int64) {
	t.Helper()
	if int64(len(body)) != n {
		t.Fatalf("body of %d bytes, want %d", len(body), n)
	}
	for i, b := range body {
		if b != genByte(int64(i)) {
			t.Fatalf("body byte %d = %d, want %d", i, b, genByte(int64(i)))
		}
	}
}

func get(t *testing.T, rt http.RoundTripper, url string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	res, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return res, body
}

func TestClientServer(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			ts := startServer(t, testHandler(), Config{}, useTLS)
			tr := newTestTransport(ts)
			dials := countDials(tr)
			defer tr.CloseIdleConnections()

			res, body := get(t, tr, ts.url("/gen/3000000"))
			if res.StatusCode != 200 || res.ContentLength != 3000000 || res.ProtoMajor != 2 {
				t.Fatalf("status %d, length %d, proto %s", res.StatusCode, res.ContentLength, res.Proto)
			}
			checkGen(t, body, 3000000)

			// A body sent with unknown length comes back with a trailer.
			payload := bytes.Repeat([]byte("0123456789"), 50000)
			req, _ := http.NewRequest("POST", ts.url("/echo"), io.MultiReader(bytes.NewReader(payload)))
			res, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(res.Body)
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("echo returned %d bytes (err %v), want %d", len(got), err, len(payload))
			}
			if v := res.Trailer.Get("X-Bytes"); v != "500000" {
				t.Fatalf("trailer X-Bytes = %q, want 500000 (trailer %v)", v, res.Trailer)
			}

			// Concurrent requests share the connection.
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for i := 0; i < 40; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					n := int64(1000 * i)
					req, _ := http.NewRequest("GET", ts.url(fmt.Sprintf("/gen/%d", n)), nil)
					res, err := tr.RoundTrip(req)
					if err != nil {
						errs <- err
						return
					}
					b, err := io.ReadAll(res.Body)
					res.Body.Close()
					if err != nil || int64(len(b)) != n {
						errs <- fmt.Errorf("request %d: %d bytes, err %v", i, len(b), err)
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("%d connections opened, want 1", n)
			}
		})
	}
}

func TestClientNewConnAtMaxStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			w.Write(helloBody)
		})
		tr := pipeTransport(t, h, Config{MaxConcurrentStreams: 2})
		dials := countDials(tr)
		var wg sync.WaitGroup
		wg.Go(func() { get(t, tr, "http://pipe/") })
		// Both ends idle: the server's SETTINGS (limit 2) are known and
		// the first request waits in its handler.
		synctest.Wait()
		for range 4 {
			wg.Go(func() { get(t, tr, "http://pipe/") })
		}
		synctest.Wait() // all five in handlers, at most two per connection
		close(release)
		wg.Wait()
		if n := dials.Load(); n < 3 {
			t.Fatalf("%d connections for 5 concurrent requests with limit 2, want >= 3", n)
		}
	})
}

func TestClientAgainstGoServers(t *testing.T) {
	h := testHandler()
	t.Run("net/http TLS", func(t *testing.T) {
		s := httptest.NewUnstartedServer(h)
		s.EnableHTTP2 = true
		s.StartTLS()
		defer s.Close()
		tr := &Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		defer tr.CloseIdleConnections()
		_, body := get(t, tr, s.URL+"/gen/1000000")
		checkGen(t, body, 1000000)
	})
	t.Run("x/net h2c", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				go (&http2.Server{}).ServeConn(nc, &http2.ServeConnOpts{Handler: h})
			}
		}()
		tr := &Transport{AllowHTTP: true}
		defer tr.CloseIdleConnections()
		_, body := get(t, tr, "http://"+ln.Addr().String()+"/gen/1000000")
		checkGen(t, body, 1000000)
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/echo", strings.NewReader("ping"))
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		if string(b) != "ping" || res.Trailer.Get("X-Bytes") != "4" {
			t.Fatalf("echo %q trailer %v", b, res.Trailer)
		}
	})
}

func TestClientRefusesNonH2TLS(t *testing.T) {
	s := httptest.NewTLSServer(testHandler()) // HTTP/1.1 only
	defer s.Close()
	tr := &Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	req, _ := http.NewRequest("GET", s.URL, nil)
	_, err := tr.RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "did not negotiate h2") {
		t.Fatalf("RoundTrip to HTTP/1.1-only server: %v, want ALPN error", err)
	}
}

func TestClientCancel(t *testing.T) {
	handlerDone := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		handlerDone <- r.Context().Err()
	})
	ts := startServer(t, h, Config{}, false)
	tr := newTestTransport(ts)
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url("/"), nil)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(res.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("body read after cancel: %v, want context.Canceled", err)
	}
	select {
	case err := <-handlerDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler context: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server handler context not cancelled by RST_STREAM")
	}
}

func TestClientRetryAfterGoAway(t *testing.T) {
	h, served := servedConn(testHandler())
	ts := startServer(t, h, Config{}, false)
	tr := newTestTransport(ts)
	defer tr.CloseIdleConnections()
	res, _ := get(t, tr, ts.url("/"))
	first := StreamOf(res).Conn()
	// The server says GOAWAY on its side of that connection.
	(<-served).GoAway()
	select {
	case <-first.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("idle connection not closed after GOAWAY")
	}
	_, body := get(t, tr, ts.url("/"))
	if !bytes.Equal(body, helloBody) {
		t.Fatalf("body after GOAWAY %q", body)
	}
}

func TestClientTrace(t *testing.T) {
	ts := startServer(t, testHandler(), Config{}, false)
	tr := newTestTransport(ts)
	defer tr.CloseIdleConnections()
	var got []string
	var mu sync.Mutex
	add := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	trace := &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { add("conn") },
		WroteRequest:         func(httptrace.WroteRequestInfo) { add("wrote") },
		GotFirstResponseByte: func() { add("byte") },
	}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", ts.url("/"), nil)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(res.Body)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, ",") != "conn,wrote,byte" {
		t.Fatalf("trace events %v, want conn,wrote,byte", got)
	}
}

// The client does not send a header list larger than the server's
// SETTINGS_MAX_HEADER_LIST_SIZE: the request fails before it is sent, and
// the connection goes on serving.
func TestClientRespectsPeerMaxHeaderList(t *testing.T) {
	ts := startServer(t, testHandler(), Config{MaxHeaderListSize: 1000}, false)
	tr := newTestTransport(ts)
	defer tr.CloseIdleConnections()
	get(t, tr, ts.url("/")) // the server's SETTINGS are in
	req, _ := http.NewRequest("GET", ts.url("/"), nil)
	req.Header.Set("X-Big", strings.Repeat("x", 2000))
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "SETTINGS_MAX_HEADER_LIST_SIZE 1000") {
		t.Fatalf("oversized request: %v", err)
	}
	if _, body := get(t, tr, ts.url("/")); !bytes.Equal(body, helloBody) {
		t.Fatalf("after the refused request: %q", body)
	}
}
