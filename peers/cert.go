package peers

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shunt-net/shunt/server"
)

// WriteSelfSigned writes cert.pem and key.pem into dir, for servers that read
// PEM files (nginx, h2o, nghttpd): server.SelfSignedCert's certificate for
// localhost, 127.0.0.1, ::1 and hosts.
func WriteSelfSigned(dir string, hosts ...string) (certFile, keyFile string, err error) {
	cert, err := server.SelfSignedCert(time.Now(), hosts...)
	if err != nil {
		return "", "", fmt.Errorf("peers: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", "", fmt.Errorf("peers: marshal key: %v", err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644); err != nil {
		return "", "", fmt.Errorf("peers: %v", err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", fmt.Errorf("peers: %v", err)
	}
	return certFile, keyFile, nil
}
