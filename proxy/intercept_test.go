package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
)

// interceptClient goes through the cleartext proxy at addr (CONNECT for
// https) and trusts roots; h2 lets it negotiate HTTP/2 inside the tunnel.
func interceptClient(addr string, roots *x509.CertPool, h2 bool) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: h2,
	}}
}

// interceptSetup serves a TLS origin and makes a CA and a policy putting
// urgent requests on path exp, the rest on cheap.
func interceptSetup(t *testing.T) (tlsOrigin string, ca *CA, pol *hints.Policy) {
	t.Helper()
	ca, err := NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if pol, err = hints.Parse("test.rules", "urgent -> path=exp\n* -> path=cheap"); err != nil {
		t.Fatal(err)
	}
	return origin(t, true), ca, pol
}

// An intercepting proxy terminates the client's TLS with a certificate of
// its CA: a client that trusts the CA gets HTTP/2 (or HTTP/1.1 if it
// offers only that) and every body byte for byte, each GET placed by the
// class its Sec-Fetch-Dest and Priority give; one that does not trust the
// CA fails the handshake; a CONNECT to a host not covered stays a tunnel
// to the origin's own certificate.
func TestProxyIntercept(t *testing.T) {
	tlsOrigin, ca, pol := interceptSetup(t)
	var got placements
	start := func(ic *Intercept) string {
		ctx, cancel := context.WithCancel(context.Background())
		r, err := Start(ctx, Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{{Name: "cheap"}, {Name: "exp"}}, Policy: pol, Cost: []float64{0, 1},
			Insecure: true, Intercept: ic, ErrorLog: discardLog(), Placed: got.placed})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); r.Wait() })
		return r.Addr
	}
	px := start(&Intercept{CA: ca})
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	h2, h1 := interceptClient(px, roots, true), interceptClient(px, roots, false)
	for i, tc := range []struct {
		client *http.Client
		proto  int
		hdr    []string
		class  hints.Class
		path   int
	}{
		{h2, 2, []string{"Sec-Fetch-Dest", "style"}, hints.Style, 1},
		{h2, 2, []string{"Sec-Fetch-Dest", "image"}, hints.Image, 0},
		{h2, 2, []string{"Sec-Fetch-Dest", "script"}, hints.AsyncScript, 0},
		{h2, 2, []string{"Sec-Fetch-Dest", "script", "Priority", "u=1"}, hints.Script, 1},
		{h2, 2, []string{"Sec-Fetch-Dest", "document", "Priority", "u=0, i"}, hints.Document, 1},
		{h1, 1, []string{"Sec-Fetch-Dest", "script"}, hints.Script, 1},
	} {
		u := fmt.Sprintf("https://%s/gen/%d", tlsOrigin, 300000+i)
		res := getGen(t, tc.client, u, tc.hdr...)
		if res.ProtoMajor != tc.proto || res.TLS == nil || res.TLS.PeerCertificates[0].Issuer.CommonName != ca.Certificate().Subject.CommonName {
			t.Errorf("%v: HTTP/%d, TLS %v, want HTTP/%d with the CA's certificate", tc.hdr, res.ProtoMajor, res.TLS != nil, tc.proto)
		}
		if p, ok := got.at(u); !ok || p.class != tc.class || p.path != tc.path {
			t.Errorf("%v: placed %v: class %s on path %d, want %s on %d", tc.hdr, ok, p.class, p.path, tc.class, tc.path)
		}
	}

	// A client that does not trust the CA.
	_, err := interceptClient(px, x509.NewCertPool(), true).Get("https://" + tlsOrigin + "/gen/10")
	if ua := (x509.UnknownAuthorityError{}); !errors.As(err, &ua) {
		t.Errorf("untrusted client: %v, want an unknown authority", err)
	}

	// A proxy that covers another host tunnels this one: the client sees
	// the origin's self-signed certificate, and the policy places nothing.
	tunnel := start(&Intercept{CA: ca, Hosts: []string{"other.example"}})
	c := interceptClient(tunnel, nil, true)
	c.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	u := "https://" + tlsOrigin + "/gen/1000"
	res := getGen(t, c, u)
	_, placedTunnel := got.at(u)
	if issuer := res.TLS.PeerCertificates[0].Issuer.CommonName; issuer == ca.Certificate().Subject.CommonName || placedTunnel {
		t.Errorf("uncovered host: certificate by %q, placed %v: want the origin's own, a plain tunnel", issuer, placedTunnel)
	}
}

// A CA loads from PEM files; a certificate that is no CA's is refused.
func TestLoadCA(t *testing.T) {
	ca, err := NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	key, err := x509.MarshalPKCS8PrivateKey(ca.cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := write("ca.key", "PRIVATE KEY", key)
	loaded, err := LoadCA(write("ca.pem", "CERTIFICATE", ca.cert.Certificate[0]), keyFile)
	if err != nil || !loaded.Certificate().Equal(ca.Certificate()) {
		t.Fatalf("LoadCA: %v", err)
	}
	leaf, err := ca.leaf("example.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leafKey, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(write("leaf.pem", "CERTIFICATE", leaf.Certificate[0]), write("leaf.key", "PRIVATE KEY", leafKey)); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("LoadCA of a leaf: %v, want not a CA", err)
	}
}

// The origin's connections are dialed when the CONNECT arrives, before the
// client's TLS handshake and first request (with them the first request
// waited for a TCP and a TLS handshake per path), and serve the requests of
// later CONNECTs to the same origin too.
func TestProxyInterceptPreconnects(t *testing.T) {
	tlsOrigin, ca, pol := interceptSetup(t)
	dials := make(chan string, 16)
	var paths []mph2.Path
	for _, name := range []string{"cheap", "exp"} {
		paths = append(paths, mph2.Path{Name: name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials <- name
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{Listen: "127.0.0.1:0", Paths: paths, Policy: pol, Cost: []float64{0, 1},
		Insecure: true, Intercept: &Intercept{CA: ca}, ErrorLog: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); r.Wait() })

	conn, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", tlsOrigin, tlsOrigin)
	res, err := http.ReadResponse(bufioReader(conn), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", res, err)
	}
	seen := map[string]bool{}
	timeout := time.After(5 * time.Second)
	for len(seen) < len(paths) {
		select {
		case name := <-dials:
			seen[name] = true
		case <-timeout:
			t.Fatalf("paths dialed after the CONNECT, before any request: %v; want every path", seen)
		}
	}

	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	getGen(t, interceptClient(r.Addr, roots, true), "https://"+tlsOrigin+"/gen/5000", "Sec-Fetch-Dest", "document")
	if n := len(dials); n > 0 {
		t.Errorf("%d more dials for a later CONNECT's request; want the connections dialed at the first", n)
	}
}
