package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
)

// NewH3 returns an HTTP/3 server (quic-go) for h that presents the
// certificates of tlsConf, for the UDP port beside a Server's TCP one. The
// caller runs it with Serve(packetConn) and stops it with Close. With
// $QLOGDIR set, every connection writes a qlog trace there.
func NewH3(tlsConf *tls.Config, h http.Handler, logger *slog.Logger) (*http3.Server, error) {
	if tlsConf == nil || len(tlsConf.Certificates) == 0 {
		return nil, fmt.Errorf("HTTP/3 needs a TLS certificate")
	}
	return &http3.Server{
		TLSConfig:  http3.ConfigureTLSConfig(tlsConf.Clone()),
		QUICConfig: &quic.Config{Tracer: qlog.DefaultConnectionTracer},
		Handler:    h,
		Logger:     logger,
	}, nil
}

// AltSvc advertises HTTP/3 on the UDP port in every response of h (RFC
// 7838), so clients that speak it may switch.
func AltSvc(h http.Handler, udpPort int) http.Handler {
	v := fmt.Sprintf(`h3=":%d"; ma=86400`, udpPort)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Alt-Svc", v)
		h.ServeHTTP(w, r)
	})
}
