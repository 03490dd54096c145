package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/syncio"
	"golang.org/x/net/http2"
)

// testTimeout bounds every network wait in these tests.
const testTimeout = 10 * time.Second

// echo answers with the protocol, TLS use and path it saw, and the request body.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s tls=%t %s %s", r.Proto, r.TLS != nil, r.URL.Path, body)
})

// start serves s on a loopback port (or on ln, if given) and returns the
// address. Cleanup shuts the server down and checks that Serve returned.
func start(t *testing.T, s *Server, ln net.Listener) string {
	t.Helper()
	logs := &syncio.Buffer{}
	s.ErrorLog = log.New(logs, "", 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	if ln == nil {
		s.Addr = "127.0.0.1:0"
		var err error
		if ln, err = s.Listen(ctx); err != nil {
			t.Fatal(err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		defer cancel()
		sctx, scancel := context.WithTimeout(context.Background(), testTimeout)
		defer scancel()
		// A test skipped for want of the h2 engine may have fed the stub a
		// connection, whose Shutdown then fails: nothing to check then.
		if err := s.Shutdown(sctx); err != nil && !t.Skipped() {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	})
	return ln.Addr().String()
}

func get(t *testing.T, c *http.Client, url string) (string, *http.Response) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return string(b), resp
}

func h1Client(tlsConf *tls.Config) *http.Client {
	return &http.Client{Timeout: testTimeout, Transport: &http.Transport{
		TLSClientConfig:   tlsConf,
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
}

func TestHTTP1Cleartext(t *testing.T) {
	addr := start(t, &Server{Handler: echo}, nil)
	c := h1Client(nil)
	for _, p := range []string{"/a", "/b"} { // two requests: keep-alive after a sniff
		if body, _ := get(t, c, "http://"+addr+p); body != "HTTP/1.1 tls=false "+p+" " {
			t.Errorf("GET %s = %q", p, body)
		}
	}
	// P, as in PRI: a method that shares a prefix with the HTTP/2 preface.
	resp, err := c.Post("http://"+addr+"/p", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "HTTP/1.1 tls=false /p payload" {
		t.Errorf("POST = %q", b)
	}
}

func TestTLSHTTP1(t *testing.T) {
	s := &Server{Handler: echo, TLS: true}
	addr := start(t, s, nil)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate().Leaf)
	// Verified against the generated certificate: its SANs cover 127.0.0.1.
	c := h1Client(&tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	body, resp := get(t, c, "https://"+addr+"/x")
	if body != "HTTP/1.1 tls=true /x " {
		t.Errorf("body %q", body)
	}
	if p := resp.TLS.NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN %q, want http/1.1", p)
	}
	// No ALPN at all is HTTP/1.1 too.
	c = h1Client(&tls.Config{RootCAs: pool})
	if body, _ := get(t, c, "https://localhost:"+port(addr)+"/y"); body != "HTTP/1.1 tls=true /y " {
		t.Errorf("no-ALPN body %q", body)
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func TestTLSCertFiles(t *testing.T) {
	cert, err := SelfSignedCert(time.Now(), "shunt.test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)

	addr := start(t, &Server{Handler: echo, TLS: true, CertFile: certFile, KeyFile: keyFile}, nil)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	c := h1Client(&tls.Config{RootCAs: pool, ServerName: "shunt.test"})
	if body, _ := get(t, c, "https://"+addr+"/f"); body != "HTTP/1.1 tls=true /f " {
		t.Errorf("body %q", body)
	}

	s := &Server{Handler: echo, TLS: true, CertFile: filepath.Join(dir, "missing.pem"), KeyFile: keyFile}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := s.Serve(context.Background(), ln); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("Serve with a missing cert file = %v, want an error naming it", err)
	}
}

func TestSelfSignedCert(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cert, err := SelfSignedCert(now, "example.test", "10.1.2.3", "0.0.0.0", "", "::", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "example.test", "10.1.2.3"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("VerifyHostname(%s): %v", h, err)
		}
	}
	if len(leaf.IPAddresses) != 3 || len(leaf.DNSNames) != 2 {
		t.Errorf("SANs %v %v: want no duplicates or unspecified addresses", leaf.IPAddresses, leaf.DNSNames)
	}
	if leaf.PublicKeyAlgorithm != x509.ECDSA || !leaf.NotBefore.Before(now) || !leaf.NotAfter.After(now) {
		t.Errorf("key %v, validity %v..%v", leaf.PublicKeyAlgorithm, leaf.NotBefore, leaf.NotAfter)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost", CurrentTime: now}); err != nil {
		t.Errorf("self-verify: %v", err)
	}
}

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		isH2   bool
		head   string
		err    bool
	}{
		{"preface at once", []string{http2.ClientPreface + "\x00\x00"}, true, http2.ClientPreface, false},
		{"preface byte by byte", strings.Split(http2.ClientPreface, ""), true, http2.ClientPreface, false},
		{"GET", []string{"GET / HTTP/1.1\r\n"}, false, "GET / HTTP/1.1\r\nHost: x\r\n", false},
		{"POST split", []string{"P", "OST / HTTP/1.1\r\n"}, false, "POST / HTTP/1.1\r\nHost: x\r\n", false},
		{"PRI as HTTP/1.1", []string{"PRI * HTTP/1.1\r\n"}, false, "PRI * HTTP/1.1\r\nHost: x\r\n", false},
		{"truncated preface", []string{"PRI * HTTP/2.0\r\n"}, false, "", true},
		{"request line in pieces", []string{"GET /a", " HTTP/1", ".0\r\n"}, false, "", false},
		{"invalid preface", []string{"INVALID CONNECTION PREFACE\r\n\r\n"}, false, "", true},
		{"no request line", []string{strings.Repeat("x", maxRequestLine+10)}, false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, srv := net.Pipe()
			defer srv.Close()
			sniffed := make(chan struct{})
			go func() {
				for _, c := range tc.chunks {
					client.Write([]byte(c))
				}
				if !tc.isH2 && !tc.err {
					client.Write([]byte("Host: x\r\n"))
				} else if !tc.err {
					<-sniffed // a pipe refuses deadlines once its peer is closed
				}
				client.Close()
			}()
			isH2, head, err := sniff(srv, time.Now().Add(testTimeout))
			close(sniffed)
			if tc.err {
				if err == nil {
					t.Fatalf("sniff = %t %q, want an error", isH2, head)
				}
				return
			}
			if err != nil || isH2 != tc.isH2 {
				t.Fatalf("sniff = %t, %v; want %t", isH2, err, tc.isH2)
			}
			// Whatever was read must be replayed in front of the rest.
			all, _ := io.ReadAll(NewPrefixConn(srv, head))
			want := strings.Join(tc.chunks, "")
			if !tc.isH2 {
				want += "Host: x\r\n"
			}
			if string(all) != want {
				t.Errorf("replayed stream %q, want %q", all, want)
			}
		})
	}
}

func TestH2CUpgradeParse(t *testing.T) {
	good := "AAMAAABkAAQAoAAAAAIAAAAA" // nghttp's: MAX_CONCURRENT_STREAMS 100, INITIAL_WINDOW 10 MiB, ENABLE_PUSH 0
	for _, tc := range []struct {
		name    string
		req     string
		upgrade bool
		err     bool
	}{
		{"valid", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + good + "\r\n\r\n", true, false},
		{"padded, lower case", "GET / HTTP/1.1\r\nHost: x\r\nconnection: upgrade,http2-settings\r\nupgrade: H2C\r\nhttp2-settings: AAMAAABk\r\n\r\n", true, false},
		{"empty settings", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: \r\n\r\n", true, false},
		{"no upgrade", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false, false},
		{"websocket", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false, false},
		{"no connection option", "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nHTTP2-Settings: " + good + "\r\n\r\n", false, false},
		{"no settings", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n\r\n", false, false},
		{"two settings", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + good + "\r\nHTTP2-Settings: " + good + "\r\n\r\n", false, false},
		{"with body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + good + "\r\n\r\nabc", false, false},
		{"chunked body", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + good + "\r\n\r\n0\r\n\r\n", false, false},
		{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: " + good + "\r\n\r\n", false, false},
		{"bad base64", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AA+/AAAA\r\n\r\n", false, true},
		{"partial setting", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAA\r\n\r\n", false, true},
	} {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.req)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		settings, ok, err := h2cUpgrade(r)
		if ok != tc.upgrade || (err != nil) != tc.err {
			t.Errorf("%s: upgrade %t, err %v; want %t, error %t", tc.name, ok, err, tc.upgrade, tc.err)
		}
		if ok && len(settings)%6 != 0 {
			t.Errorf("%s: %d settings bytes", tc.name, len(settings))
		}
	}
}

func FuzzDecodeSettings(f *testing.F) {
	for _, s := range []string{"", "AAMAAABkAAQAoAAAAAIAAAAA", "AAMAAABk", "AAMAAABk==", "AA+/", "AAMAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		b, err := decodeSettings(v)
		if err != nil {
			return
		}
		if len(b)%6 != 0 {
			t.Fatalf("decodeSettings(%q): %d bytes", v, len(b))
		}
		// Round trip through the canonical encoding.
		b2, err := decodeSettings(encodeSettings(b))
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("round trip of %x: %x, %v", b, b2, err)
		}
	})
}

func TestUpgradeWrites101(t *testing.T) {
	addr := start(t, &Server{Handler: echo}, nil)
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	settings := encodeSettings(nil)
	fmt.Fprintf(c, "GET /up HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: %s\r\n\r\n", settings)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Upgrade") != "h2c" {
		t.Fatalf("response %s, Upgrade %q; want 101 h2c", resp.Status, resp.Header.Get("Upgrade"))
	}
	// Stream 1 is the upgraded request: after our preface its response comes
	// as HTTP/2 frames.
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, br)
	fr.WriteSettings()
	fr.ReadMetaHeaders = nil
	var got bytes.Buffer
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v (body so far %q)", err, got.String())
		}
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
			got.Write(d.Data())
			if d.StreamEnded() {
				break
			}
		}
	}
	if got.String() != "HTTP/2.0 tls=false /up " {
		t.Errorf("stream 1 body %q", got.String())
	}
}

func TestUpgradeWithBodyStaysHTTP1(t *testing.T) {
	addr := start(t, &Server{Handler: echo}, nil)
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprintf(c, "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: \r\n\r\nabc")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "HTTP/1.1 tls=false /b abc" {
		t.Errorf("got %s %q", resp.Status, b)
	}
}

func TestUpgradeBadSettings(t *testing.T) {
	addr := start(t, &Server{Handler: echo}, nil)
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.Header.Set("Connection", "Upgrade, HTTP2-Settings")
	req.Header.Set("Upgrade", "h2c")
	req.Header.Set("HTTP2-Settings", "!!")
	resp, err := h1Client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("status %s, want 400", resp.Status)
	}
}

// h2Client speaks HTTP/2 with x/net's transport: an independent peer for the engine.
func h2Client(tlsConf *tls.Config) *http.Client {
	tr := &http2.Transport{TLSClientConfig: tlsConf}
	if tlsConf == nil {
		tr.AllowHTTP = true
		tr.DialTLSContext = func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	return &http.Client{Timeout: testTimeout, Transport: tr}
}

func TestTLSH2(t *testing.T) {
	addr := start(t, &Server{Handler: echo, TLS: true}, nil)
	body, resp := get(t, h2Client(&tls.Config{InsecureSkipVerify: true}), "https://"+addr+"/h2")
	if body != "HTTP/2.0 tls=true /h2 " || resp.ProtoMajor != 2 {
		t.Errorf("got %s %q", resp.Proto, body)
	}
}

func TestH2CPriorKnowledge(t *testing.T) {
	addr := start(t, &Server{Handler: echo}, nil)
	body, resp := get(t, h2Client(nil), "http://"+addr+"/h2c")
	if body != "HTTP/2.0 tls=false /h2c " || resp.ProtoMajor != 2 {
		t.Errorf("got %s %q", resp.Proto, body)
	}
	// The same listener still speaks HTTP/1.1.
	if body, _ := get(t, h1Client(nil), "http://"+addr+"/h1"); body != "HTTP/1.1 tls=false /h1 " {
		t.Errorf("HTTP/1.1 after h2c: %q", body)
	}
}

// Real peers: curl and nghttp, skipped when not installed.
func TestCurlNghttp(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	s := &Server{Handler: echo, TLS: true}
	tlsAddr := start(t, s, nil)
	clearAddr := start(t, &Server{Handler: echo}, nil)
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run(curl, "-sS", "--http1.1", "http://"+clearAddr+"/c"); out != "HTTP/1.1 tls=false /c " {
		t.Errorf("curl --http1.1 cleartext: %q", out)
	}
	if out := run(curl, "-sS", "-k", "--http1.1", "https://"+tlsAddr+"/c"); out != "HTTP/1.1 tls=true /c " {
		t.Errorf("curl --http1.1 TLS: %q", out)
	}
	if out := run(curl, "-sS", "-k", "--http2", "https://"+tlsAddr+"/c"); out != "HTTP/2.0 tls=true /c " {
		t.Errorf("curl --http2 TLS: %q", out)
	}
	if out := run(curl, "-sS", "--http2-prior-knowledge", "http://"+clearAddr+"/c"); out != "HTTP/2.0 tls=false /c " {
		t.Errorf("curl --http2-prior-knowledge: %q", out)
	}
	// curl --http2 on http:// asks for an h2c upgrade.
	if out := run(curl, "-sS", "--http2", "http://"+clearAddr+"/c"); out != "HTTP/2.0 tls=false /c " {
		t.Errorf("curl h2c upgrade: %q", out)
	}
	nghttp, err := exec.LookPath("nghttp")
	if err != nil {
		t.Skip("nghttp not installed")
	}
	if out := run(nghttp, "-u", "http://"+clearAddr+"/n"); out != "HTTP/2.0 tls=false /n " {
		t.Errorf("nghttp -u: %q", out)
	}
}

// acceptRecorder remembers the connections its listener accepted.
type acceptRecorder struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *acceptRecorder) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func TestSockOptsPerConnection(t *testing.T) {
	// A listener without the options: the server must set them per socket.
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &acceptRecorder{Listener: inner}
	s := &Server{Handler: echo, CC: "reno", NotSentLowat: 16384}
	addr := start(t, s, ln)
	get(t, h1Client(nil), "http://"+addr+"/")
	ln.mu.Lock()
	c := ln.conns[0]
	ln.mu.Unlock()
	got, err := ConnSockOpts(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := (SockOpts{CC: "reno", NotSentLowat: 16384}); got != want {
		t.Errorf("accepted socket has %v, want %v", got, want)
	}
}

// acceptedSockOpts listens with s, dials it (with MPTCP if asked) and
// returns the socket options of the accepted connection.
func acceptedSockOpts(t *testing.T, s *Server, mptcp bool) SockOpts {
	t.Helper()
	ln, err := s.Listen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{Timeout: testTimeout}
	d.SetMultipathTCP(mptcp)
	cc, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := ConnSockOpts(c)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestListenSockOpts(t *testing.T) {
	// Dial with MPTCP: the server's default must still be plain TCP.
	got := acceptedSockOpts(t, &Server{Addr: "127.0.0.1:0", Handler: echo, CC: "cubic", NotSentLowat: 4096}, true)
	if want := (SockOpts{CC: "cubic", NotSentLowat: 4096}); got != want {
		t.Errorf("accepted socket has %v, want %v (inherited from the listener)", got, want)
	}

	s := &Server{Addr: "127.0.0.1:0", Handler: echo, CC: "no-such-cc"}
	if ln, err := s.Listen(context.Background()); err == nil || !strings.Contains(err.Error(), "no-such-cc") {
		if ln != nil {
			ln.Close()
		}
		t.Errorf("Listen with CC no-such-cc = %v, want an error naming it", err)
	}
}

func TestListenMPTCP(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Skip("MPTCP not enabled in this kernel (/proc/sys/net/mptcp/enabled)")
	}
	if got := acceptedSockOpts(t, &Server{Addr: "127.0.0.1:0", Handler: echo, MPTCP: true}, true); !got.MPTCP {
		t.Errorf("MPTCP listener, MPTCP client: accepted socket %v; want MPTCP", got)
	}
}

func TestShutdownLetsRequestsFinish(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	})
	s := &Server{Addr: "127.0.0.1:0", Handler: slow, ErrorLog: log.New(io.Discard, "", 0)}
	ln, err := s.Listen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), ln) }()

	// A client that connects and never speaks must not hold Shutdown up.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	result := make(chan string, 1)
	go func() {
		resp, err := h1Client(nil).Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			result <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		result <- string(b)
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve = %v, want ErrServerClosed", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("listener still accepts after Shutdown")
	}
	close(release)
	if got := <-result; got != "done" {
		t.Errorf("in-flight request got %q, want done", got)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

func TestContextCancelClosesEverything(t *testing.T) {
	entered := make(chan struct{})
	block := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	})
	s := &Server{Addr: "127.0.0.1:0", Handler: block, ErrorLog: log.New(io.Discard, "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := s.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	clientErr := make(chan error, 1)
	go func() {
		_, err := h1Client(nil).Get("http://" + ln.Addr().String() + "/")
		clientErr <- err
	}()
	<-entered
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v, want context.Canceled", err)
	}
	if err := <-clientErr; err == nil {
		t.Error("in-flight request succeeded after a hard stop")
	}
}

// encodeSettings is the client side of HTTP2-Settings: base64url, no padding.
func encodeSettings(payload []byte) string { return base64.RawURLEncoding.EncodeToString(payload) }

// A cleartext HTTP/1.1 request line over 8 KiB gets 414, not a reset; a
// header section over net/http's limit gets 431.
func TestOversizedHTTP1Requests(t *testing.T) {
	addr := start(t, &Server{Handler: echo}, nil)
	for _, tc := range []struct {
		req, want string
	}{
		{"GET /" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 414 "},
		{"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", "HTTP/1.1 431 "},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go io.WriteString(c, tc.req) // the server may answer before reading it all
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.HasPrefix(line, tc.want) {
			t.Errorf("request of %d bytes: status line %q, %v; want %s", len(tc.req), line, err, tc.want)
		}
	}
}
