package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/shunt-net/shunt/server"
)

// Intercept is which CONNECT tunnels shunt proxy terminates itself (issue
// 19): to an https origin a browser speaks HTTP/2 and sends Sec-Fetch-Dest
// and Priority, so the hinted policy gets each request's class; through a
// tunnel it would see nothing of them.
type Intercept struct {
	CA *CA
	// Hosts are the CONNECT targets terminated, HOST or HOST:PORT; empty:
	// every one. Others stay plain tunnels.
	Hosts []string
}

// covers says whether the CONNECT target addr (HOST:PORT) is terminated.
func (ic *Intercept) covers(addr string) bool {
	if len(ic.Hosts) == 0 {
		return true
	}
	host, _, _ := net.SplitHostPort(addr)
	for _, h := range ic.Hosts {
		if h == addr || h == host {
			return true
		}
	}
	return false
}

// CA signs the certificate shunt proxy presents for each intercepted host.
// Every leaf has the same key, so a browser told to trust one public key
// (Chromium's --ignore-certificate-errors-spki-list) trusts them all.
type CA struct {
	cert    tls.Certificate // Leaf set
	leafKey *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // by host
}

// NewCA generates a CA valid from now-1h for 30 days.
func NewCA(now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("proxy CA: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{Organization: []string{"shunt"}, CommonName: "shunt proxy CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := sign(tmpl, nil, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return newCA(tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key})
}

// LoadCA reads a CA's certificate and key (PEM files, as tls.LoadX509KeyPair).
func LoadCA(certFile, keyFile string) (*CA, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("proxy CA %s, %s: %w", certFile, keyFile, err)
	}
	return newCA(cert)
}

func newCA(cert tls.Certificate) (*CA, error) {
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("proxy CA: %w", err)
	}
	if !leaf.IsCA || leaf.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("proxy CA: the certificate is not a CA's (basic constraints CA, key usage cert sign)")
	}
	cert.Leaf = leaf
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("proxy CA: %w", err)
	}
	return &CA{cert: cert, leafKey: key, leaves: map[string]*tls.Certificate{}}, nil
}

// Certificate is the CA's certificate, for a client's pool of roots.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert.Leaf }

// SPKIHashes are the base64 SHA-256 hashes of the CA's public key and of
// the leaves' one, the form of Chromium's --ignore-certificate-errors-spki-list.
func (ca *CA) SPKIHashes() ([]string, error) {
	leafSPKI, err := x509.MarshalPKIXPublicKey(&ca.leafKey.PublicKey)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, spki := range [][]byte{ca.cert.Leaf.RawSubjectPublicKeyInfo, leafSPKI} {
		h := sha256.Sum256(spki)
		out = append(out, base64.StdEncoding.EncodeToString(h[:]))
	}
	return out, nil
}

// getCertificate is the TLS server's: the leaf for the name the client
// asked for (SNI), or, as browsers send no SNI for an address, for the
// address it connected to, which for a terminated CONNECT is the target
// (tunnelConn.LocalAddr).
func (ca *CA) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	host := hello.ServerName
	if host == "" {
		var err error
		if host, _, err = net.SplitHostPort(hello.Conn.LocalAddr().String()); err != nil {
			return nil, fmt.Errorf("proxy CA: no server name, and local address %s: %w", hello.Conn.LocalAddr(), err)
		}
	}
	return ca.leaf(host, time.Now())
}

// leaf is host's certificate, made on first use and cached.
func (ca *CA) leaf(host string, now time.Time) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok && now.Before(c.Leaf.NotAfter) {
		return c, nil
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"shunt"}, CommonName: host},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ca.cert.Leaf.NotAfter.Before(tmpl.NotAfter) {
		tmpl.NotAfter = ca.cert.Leaf.NotAfter
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := sign(tmpl, ca.cert.Leaf, &ca.leafKey.PublicKey, ca.cert.PrivateKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Certificate[0]}, PrivateKey: ca.leafKey}
	if c.Leaf, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	ca.leaves[host] = c
	return c, nil
}

// sign is server.SignCertificate with the CA's errors.
func sign(tmpl, parent *x509.Certificate, pub, signer any) ([]byte, error) {
	der, err := server.SignCertificate(tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("proxy CA: %w", err)
	}
	return der, nil
}

// serveIntercepted serves the requests of a terminated CONNECT, which come
// in origin form: their origin is https://:authority (Host).
func (p *Proxy) serveIntercepted(w http.ResponseWriter, r *http.Request) {
	addr := r.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "443")
	}
	if r.Method == http.MethodConnect || !p.Intercept.covers(addr) {
		p.fail(w, r, http.StatusMisdirectedRequest, fmt.Errorf("%s %s on a terminated tunnel: not an intercepted origin's request", r.Method, r.Host))
		return
	}
	r.URL.Scheme, r.URL.Host = "https", r.Host
	p.ServeHTTP(w, r)
}
