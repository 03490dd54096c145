package h2

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer is a test-only listener serving h2c prior knowledge, or h2 over
// TLS with ALPN "h2" and a self-signed certificate made for the test.
type testServer struct {
	srv  *Server
	ln   net.Listener
	addr string
	tls  *tls.Config // nil for h2c
	wg   sync.WaitGroup
	// sndbuf, if set, caps the kernel send buffer of accepted connections,
	// so a peer that does not read backs the server up quickly.
	sndbuf int
}

func selfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func startServer(t testing.TB, h http.Handler, cfg Config, useTLS bool, opts ...func(*testServer)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: &Server{Handler: h, Config: cfg}, ln: ln, addr: ln.Addr().String()}
	if useTLS {
		ts.tls = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2"}}
	}
	for _, o := range opts {
		o(ts)
	}
	ts.wg.Add(1)
	go ts.serve()
	t.Cleanup(ts.close)
	return ts
}

func (ts *testServer) serve() {
	defer ts.wg.Done()
	for {
		nc, err := ts.ln.Accept()
		if err != nil {
			return
		}
		if ts.sndbuf > 0 {
			nc.(*net.TCPConn).SetWriteBuffer(ts.sndbuf)
		}
		ts.wg.Add(1)
		go func() {
			if ts.tls != nil {
				tc := TLSServer(nc, ts.tls)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := tc.HandshakeContext(ctx)
				cancel()
				if err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
					nc.Close()
					ts.wg.Done()
					return
				}
				nc = tc
			}
			// Detached, as the server package serves.
			ts.srv.ServeConnDetached(context.Background(), nc, nil, func(error) { ts.wg.Done() })
		}()
	}
}

func (ts *testServer) close() {
	ts.ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ts.srv.Shutdown(ctx)
	ts.wg.Wait()
}

// echoHandler answers every request with a fixed body after reading the
// request body, or echoes the body for POST /echo.
var helloBody = []byte("hello from shunt h2\n")

// testHandler serves / (bodiless requests inline, as a static file server
// does, so that the conformance tests run the inline path too), /echo and
// /gen/N.
func testHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writeHello(w)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Bytes")
		n, _ := io.Copy(w, r.Body)
		w.Header().Set("X-Bytes", itoa64(n))
	})
	mux.HandleFunc("/gen/", func(w http.ResponseWriter, r *http.Request) {
		n := parseSize(r.URL.Path[len("/gen/"):])
		w.Header().Set("Content-Length", itoa64(n))
		writeGen(w, n)
	})
	return inlineHello{mux}
}

// inlineHello answers / on the reader (InlineHandler), the rest through
// its ServeMux.
type inlineHello struct{ *http.ServeMux }

func (h inlineHello) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/" {
		return false
	}
	writeHello(w)
	return true
}

func writeHello(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write(helloBody)
}

// genHandler serves only /gen/N, without a ServeMux, to measure the engine
// rather than request routing.
func genHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := parseSize(strings.TrimPrefix(r.URL.Path, "/gen/"))
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		writeGen(w, n)
	})
}

func itoa64(n int64) string {
	return big.NewInt(n).String()
}

func parseSize(s string) int64 {
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// genPattern repeats through /gen/N bodies; its prime length keeps the
// content from lining up with frame or buffer sizes.
const genPeriod = 65521

var genPattern = func() []byte {
	p := make([]byte, 2*genPeriod)
	for i := range genPeriod {
		p[i] = byte(i*7 + i>>8)
	}
	copy(p[genPeriod:], p[:genPeriod])
	return p
}()

// genByte is the deterministic content of /gen/N at offset i.
func genByte(i int64) byte { return genPattern[i%genPeriod] }

// writeGen writes n bytes of the pattern in 16 KB writes, like a file server.
func writeGen(w io.Writer, n int64) error {
	for off := int64(0); off < n; {
		k := min(16<<10, n-off)
		start := off % genPeriod
		if _, err := w.Write(genPattern[start : start+k]); err != nil {
			return err
		}
		off += k
	}
	return nil
}
