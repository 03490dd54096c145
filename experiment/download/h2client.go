package download

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"

	"github.com/shunt-net/shunt/h2"
)

// newH2Transport is the HTTP/2 client of the h2 rows: shunt's own engine,
// h2c with prior knowledge for http:// URLs, ALPN h2 over TLS. It opens a
// second connection only when the server's stream limit is reached, which
// the drivers' workloads stay under (the connection count is recorded).
func newH2Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsConf *tls.Config) (http.RoundTripper, func()) {
	tr := &h2.Transport{AllowHTTP: true, DialContext: dial, TLSClientConfig: tlsConf}
	return tr, tr.CloseIdleConnections
}

// clientName says which client library a protocol's runs used.
func clientName(proto string) string {
	if proto == "h1" {
		return "Go net/http (HTTP/1.1)"
	}
	return "shunt h2.Transport"
}
