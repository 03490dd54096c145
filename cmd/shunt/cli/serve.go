package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"expvar"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/internal/gcfloor"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/smig"
)

// shutdownGrace is how long `shunt serve` lets requests finish after a signal.
const shutdownGrace = 5 * time.Second

var serveCmd = &Command{
	Name:  "serve",
	Usage: "serve [--root DIR] [--addr HOST:PORT] [--tls [--cert F --key F]] [--cc NAME] [--notsent-lowat N] [--kernel-send-queue] [--mptcp] [--page FILE]... [--pages DIR] [--h3] [--smig POLICY] [--steer POLICY --steer-path NAME=PREFIX[@COST]...] [--header-timeout D] [--send-timeout D] [--debug-addr HOST:PORT]",
	Short: "serve files and /gen/<size> objects over HTTP/1.1, h2 and h2c",
}

func init() {
	serveCmd.Run = func(ctx context.Context, args []string) error {
		return runServe(ctx, args, os.Stdout, os.Stderr)
	}
	Register(serveCmd)
}

// runServe prints "listening on SCHEME://HOST:PORT" as its first line on
// stdout once the socket accepts, then serves until ctx is done.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(serveCmd)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "serve the files under `DIR` (/gen/<size> is always served)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `HOST:PORT`; port 0 picks a free one")
	useTLS := fs.Bool("tls", false, "TLS with ALPN h2 and http/1.1 (else cleartext: HTTP/1.1 and h2c)")
	cert := fs.String("cert", "", "TLS certificate `FILE` (PEM); default: self-signed, made at start")
	key := fs.String("key", "", "TLS private key `FILE` (PEM)")
	cc := fs.String("cc", "", "TCP congestion control for every connection, e.g. cubic, bbr (default: the system's)")
	lowat := fs.Int("notsent-lowat", 0, "TCP_NOTSENT_LOWAT in `bytes` for every connection (0: the system's)")
	parkIdle := fs.Bool("park-idle", true, "HTTP/2: a quiet connection (h2c or TLS) gives up its read goroutine and read buffers until its socket is readable (about 4.7 KB less per idle h2c connection); --park-idle=false keeps them")
	kernelQ := fs.Bool("kernel-send-queue", false, "HTTP/2: leave each socket's send queue to the kernel (megabytes of a bulk response may wait unsent ahead of later responses) instead of keeping about 2 ms of sending unsent")
	mptcp := fs.Bool("mptcp", false, "accept MPTCP connections")
	headerTimeout := fs.Duration("header-timeout", server.DefaultHeaderTimeout, "close a connection whose TLS handshake, HTTP/1.1 request header, or HTTP/2 preface or header block takes longer than `DURATION` (slow headers, slowloris)")
	sendTimeout := fs.Duration("send-timeout", server.DefaultSendTimeout, "drop an HTTP/2 stream whose client takes none of its body (no WINDOW_UPDATE), or a connection it does not read, for `DURATION`")
	gcFloor := fs.Int("gc-floor", 32<<20, "keep the Go heap's collection goal at least `BYTES` (GOGC raised while the live heap is under half of it): the start of many connections then brings no collection; 0: Go's default (4 MB)")
	debugAddr := fs.String("debug-addr", "", "serve the process's figures on `HOST:PORT` (/debug/vars: goroutines, memory; /debug/pprof/), for soak tests")
	smigFlag := fs.String("smig", "", "enable SMig stream migration with `POLICY`: nomig, migsw[:BYTES], migsp[:BYTES] (nomig still serves clients that migrate)")
	steer := fs.String("steer", "", "steer responses across an SMig client's connections on several paths (issue 19) by the hints `POLICY` (a preset: urgent-fast, urgent-fast-share, ... or a rule file); needs --steer-path; implies --smig nomig")
	var steerPaths []server.SteerPath
	fs.Func("steer-path", "with --steer: the clients' connections from `NAME=PREFIX[@COST]` are path NAME, its bytes costing COST (default 0) (repeatable)", func(v string) error {
		p, err := server.ParseSteerPath(v)
		steerPaths = append(steerPaths, p)
		return err
	})
	pf := addPageFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if (*cert == "") != (*key == "") {
		return errors.New("--cert and --key go together")
	}
	if *cert != "" && !*useTLS {
		return errors.New("--cert and --key need --tls")
	}
	if *sendTimeout <= 0 {
		return fmt.Errorf("--send-timeout %v: want a positive duration", *sendTimeout)
	}
	if *headerTimeout <= 0 {
		return fmt.Errorf("--header-timeout %v: want a positive duration", *headerTimeout)
	}
	if *lowat < 0 {
		return fmt.Errorf("--notsent-lowat %d: must not be negative", *lowat)
	}
	if *gcFloor < 0 {
		return fmt.Errorf("--gc-floor %d: must not be negative", *gcFloor)
	}
	defer gcfloor.Keep(uint64(*gcFloor))()
	var steerer *server.Steerer
	if (*steer == "") != (len(steerPaths) == 0) {
		return errors.New("--steer and --steer-path go together")
	}
	if *steer != "" {
		pol, err := hints.Load(*steer)
		if err != nil {
			return fmt.Errorf("--steer: %w", err)
		}
		steerer = &server.Steerer{Policy: pol, Paths: steerPaths}
		if *smigFlag == "" {
			*smigFlag = "nomig"
		}
	}

	h, err := content.NewHandler(*root)
	if err != nil {
		return err
	}
	defer h.Close()
	handler, listenAddr, startHTTP3, err := pf.setup(h, *addr, *useTLS, stderr)
	if err != nil {
		return err
	}
	var h2srv *h2.Server
	var wrapTLS func(*tls.Config) *tls.Config
	if *smigFlag != "" {
		p, err := smig.ParsePolicy(*smigFlag)
		if err != nil {
			return err
		}
		if p.Kind == smig.MigCP {
			return fmt.Errorf("--smig %s: migcp is a client policy (shunt get --smig)", *smigFlag)
		}
		sm := &smig.Server{Policy: p, Logf: log.New(stderr, "", log.LstdFlags).Printf}
		if steerer != nil {
			if p.ServerSide() {
				return fmt.Errorf("--smig %s beside --steer: the steering places every response", *smigFlag)
			}
			sm.Steer, sm.SteerWait = steerer.Steer, server.SteerWait
		}
		h2srv = &h2.Server{Handler: sm.Wrap(handler), Config: sm.Config(h2.Config{})}
		wrapTLS = sm.TLSConfig
		// What SMig did, on exit: the one way to tell from outside that a
		// peer without SMig got plain HTTP/2 (no SMig frame sent to it).
		defer func() {
			st := sm.Stats()
			fmt.Fprintf(stderr, "smig: %d migrations (%d asked by clients), %d refused, %d SMig frames sent\n",
				st.Migrations.Load(), st.ClientAsked.Load(), st.Refused.Load(), st.ExtraFrameOut.Load())
		}()
	}
	s := &server.Server{
		H2:            h2srv,
		WrapTLS:       wrapTLS,
		Addr:          listenAddr,
		Handler:       handler,
		TLS:           *useTLS,
		CertFile:      *cert,
		KeyFile:       *key,
		MPTCP:         *mptcp,
		CC:            *cc,
		NotSentLowat:  *lowat,
		ErrorLog:      log.New(stderr, "", log.LstdFlags),
		HeaderTimeout: *headerTimeout,
		SendTimeout:   *sendTimeout,

		KernelSendQueue: *kernelQ,
		KeepIdleReader:  !*parkIdle,
	}
	if *debugAddr != "" {
		stop, err := serveDebug(*debugAddr, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	ln, err := s.Listen(ctx)
	if err != nil {
		return err
	}
	scheme := "http"
	if *useTLS {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr())
	fmt.Fprintf(stderr, "root %s; socket options %v\n", orNone(*root), s.SockOpts())
	if c := s.Certificate(); c != nil && *cert == "" {
		names := c.Leaf.DNSNames
		for _, ip := range c.Leaf.IPAddresses {
			names = append(names, ip.String())
		}
		fmt.Fprintf(stderr, "TLS: self-signed certificate for %s\n", strings.Join(names, ", "))
	}
	stopH3, err := startHTTP3(s)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopH3()

	served := make(chan error, 1)
	// Serve gets its own context: a signal means a graceful Shutdown first.
	go func() { served <- s.Serve(context.WithoutCancel(ctx), ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err = s.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

func orNone(s string) string {
	if s == "" {
		return "(none: /gen/ only)"
	}
	return s
}

// serveDebug serves expvar (with the goroutine count) and pprof on addr, on
// a listener of their own, so no request to the content server reaches them.
func serveDebug(addr string, stderr io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	publishGoroutines.Do(func() {
		expvar.Publish("goroutines", expvar.Func(func() any { return runtime.NumGoroutine() }))
	})
	mux := http.NewServeMux()
	mux.Handle("/debug/vars", expvar.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: server.DefaultHeaderTimeout}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "debug: http://%s/debug/vars\n", ln.Addr())
	return func() { srv.Close() }, nil
}

var publishGoroutines sync.Once
