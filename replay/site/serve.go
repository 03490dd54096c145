package site

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/smig"
)

// ServeConfig says how to run a page server: shunt's server (HTTP/1.1, h2,
// h2c) on TCP and, with H3, HTTP/3 on the UDP port of the same number.
type ServeConfig struct {
	Handler http.Handler
	Addr    string // HOST:PORT; port 0 picks one free for both protocols
	TLS     bool
	H3      bool   // needs TLS
	CC      string // TCP congestion control per connection; "" = system default
	// Pacing paces every accepted TCP connection (Linux's internal pacing,
	// as quic-go paces QUIC); false leaves the kernel's default, which sends
	// what the congestion window allows as one burst.
	Pacing bool
	// Listen and ListenPacket open the sockets (in a namespace, say); nil
	// means net.Listen and net.ListenPacket.
	Listen       func(network, addr string) (net.Listener, error)
	ListenPacket func(network, addr string) (net.PacketConn, error)
	ErrorLog     *log.Logger
	// SMig runs HTTP/2 with SMig (its policy and bindings); nil: plain HTTP/2.
	SMig *smig.Server
}

// Running is a page server that runs until Close.
type Running struct {
	Addr string      // HOST:PORT, the same for TCP and UDP
	Cert *tls.Config // the certificate served (TLS only), for clients to trust
	srv  *server.Server
	pc   net.PacketConn
	h3   *http3.Server
	done chan error // Serve's results, one per protocol
	n    int
	stop context.CancelFunc
}

// portTries bounds the search for a port free on both TCP and UDP.
const portTries = 10

// Serve starts a page server.
func Serve(cfg ServeConfig) (*Running, error) {
	if cfg.H3 && !cfg.TLS {
		return nil, errors.New("HTTP/3 needs TLS")
	}
	if cfg.Listen == nil {
		cfg.Listen = net.Listen
	}
	if cfg.ListenPacket == nil {
		cfg.ListenPacket = net.ListenPacket
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, err
	}
	var tlsConf *tls.Config
	if cfg.TLS {
		cert, err := server.SelfSignedCert(time.Now(), host)
		if err != nil {
			return nil, err
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	ln, pc, err := listenBoth(cfg)
	if err != nil {
		return nil, err
	}
	r := &Running{Addr: ln.Addr().String(), Cert: tlsConf, pc: pc, done: make(chan error, 2)}
	h := cfg.Handler
	if pc != nil {
		port := ln.Addr().(*net.TCPAddr).Port
		var logger *slog.Logger
		if cfg.ErrorLog != nil {
			logger = slog.New(slog.NewTextHandler(cfg.ErrorLog.Writer(), nil))
		}
		if r.h3, err = server.NewH3(tlsConf, h, logger); err != nil {
			ln.Close()
			pc.Close()
			return nil, err
		}
		h = server.AltSvc(h, port)
		r.n++
		go func() { r.done <- r.h3.Serve(pc) }()
	}
	r.srv = &server.Server{Handler: h, TLS: cfg.TLS, TLSConfig: tlsConf, CC: cfg.CC, ErrorLog: cfg.ErrorLog}
	if cfg.SMig != nil {
		if cfg.ErrorLog != nil {
			cfg.SMig.Logf = cfg.ErrorLog.Printf
		}
		r.srv.H2 = &h2.Server{Handler: cfg.SMig.Wrap(h), Config: cfg.SMig.Config(h2.Config{})}
		// Session tickets carry SMig's lineage, or no TLS connection could
		// join a client's binding.
		r.srv.WrapTLS = cfg.SMig.TLSConfig
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.n++
	go func() { r.done <- r.srv.Serve(ctx, ln) }()
	return r, nil
}

// listenBoth opens the TCP listener and, for HTTP/3, the UDP socket on the
// same port: the UDP one first when the port is to be picked, since the
// Alt-Svc header names one port for both.
func listenBoth(cfg ServeConfig) (net.Listener, net.PacketConn, error) {
	if !cfg.H3 {
		ln, err := cfg.Listen("tcp", cfg.Addr)
		return paced(ln, cfg.Pacing), nil, err
	}
	host, port, _ := net.SplitHostPort(cfg.Addr)
	var errs []error
	for range portTries {
		pc, err := cfg.ListenPacket("udp", cfg.Addr)
		if err != nil {
			return nil, nil, err
		}
		p := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		ln, err := cfg.Listen("tcp", net.JoinHostPort(host, p))
		if err == nil {
			return paced(ln, cfg.Pacing), pc, nil
		}
		pc.Close()
		errs = append(errs, err)
		if port != "0" {
			break
		}
	}
	return nil, nil, fmt.Errorf("no port free for both TCP and UDP: %w", errors.Join(errs...))
}

func paced(ln net.Listener, pacing bool) net.Listener {
	if ln == nil || !pacing {
		return ln
	}
	return pacedListener{ln}
}

// Close stops both protocols at once (a page load in flight fails).
func (r *Running) Close() error {
	var errs []error
	if r.h3 != nil {
		errs = append(errs, r.h3.Close())
		r.pc.Close() // quic-go leaves a socket it was given open; a second close is harmless
	}
	r.stop()
	for range r.n {
		err := <-r.done
		if !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
