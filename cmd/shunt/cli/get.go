package cli

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/internal/syncio"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/smig"
)

var getCmd = &Command{
	Name:  "get",
	Usage: "get URL [-o FILE] [--range A-B] [--http1.1|--h2c] [-v] [--insecure] [--data @FILE] [--path IFACE_OR_ADDR[=MAPADDR]]... [--size N] [--end-adjust flow|rst] [--no-pipelining] [--mode aggregate|handover|interactive] [--handover-after D] [--budget PATH=SIZE]...",
	Short: "download a URL with shunt's HTTP/2 client, timed and verified",
}

func init() {
	getCmd.Run = func(ctx context.Context, args []string) error {
		return runGet(ctx, args, getIO{
			stdout:   os.Stdout,
			stderr:   os.Stderr,
			progress: term.IsTerminal(int(os.Stderr.Fd())),
		})
	}
	Register(getCmd)
}

type getIO struct {
	stdout, stderr io.Writer
	progress       bool // draw a progress bar on stderr (a terminal)
}

type getOptions struct {
	url      *url.URL
	out      string // "" or "-": stdout
	rng      string // the --range value, e.g. "0-99", "100-", "-10"
	http11   bool
	h2c      bool
	verbose  bool
	insecure bool
	smig     string           // --smig POLICY: an SMig client (smig.Transport)
	data     string           // --data @FILE: POST the file
	mp       multipathOptions // --path given: an MP-H2 download (get_mph2.go)
	json     string           // --json FILE: append the download's record
	timeouts getTimeouts
	retries  int // --retries: re-requests by Range + If-Range of a broken body
}

// getTimeouts bound the phases of a download, so a server that accepts
// and never answers, or stops sending, does not hang it.
type getTimeouts struct {
	connect  time.Duration // TCP connect and TLS handshake
	response time.Duration // from the request to the response's header
	idle     time.Duration // between body bytes
}

// getTimes are offsets from the start of the download, as curl reports
// them; the watchdog moves from one phase's timeout to the next as they
// pass.
type getTimes struct {
	start                   time.Time
	connect, tls, firstByte time.Duration
	total                   time.Duration
	usedTLS                 bool
	dog                     *watchdog
	limits                  getTimeouts
}

// connected marks the connection (and TLS) done: the response's timeout runs.
func (t *getTimes) connected() {
	t.dog.set(t.limits.response, "no response header %v after connecting (--response-timeout)")
}

// watchdog cancels a download's context when its timer runs out, with the
// phase's error as the cause.
type watchdog struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel context.CancelCauseFunc
}

func newWatchdog(ctx context.Context) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancelCause(ctx)
	return ctx, &watchdog{cancel: cancel}
}

// set (re)starts the timer: after d, the download fails with format's error.
func (w *watchdog) set(d time.Duration, format string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timer = time.AfterFunc(d, func() { w.cancel(fmt.Errorf(format, d)) })
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(nil)
}

// explain replaces a context error by the watchdog's cause.
func explain(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
	}
	return err
}

// idleReader restarts the idle timeout at every read that brings bytes.
type idleReader struct {
	r      io.Reader
	dog    *watchdog
	limits getTimeouts
}

func (r idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.dog.set(r.limits.idle, "no data for %v (--idle-timeout)")
	}
	return n, err
}

func parseGetArgs(args []string, stderr io.Writer) (getOptions, error) {
	fs := newFlags(getCmd)
	fs.SetOutput(stderr)
	var o getOptions
	fs.StringVar(&o.out, "o", "", "write the body to `FILE` (a file is replaced only once the body is complete and verified; links are followed, devices written to); default stdout")
	fs.StringVar(&o.rng, "range", "", "ask for bytes `A-B` (also A- and -N)")
	fs.BoolVar(&o.http11, "http1.1", false, "use HTTP/1.1 (Go's net/http); http:// URLs use it by default")
	fs.BoolVar(&o.h2c, "h2c", false, "use h2c with prior knowledge for an http:// URL")
	fs.BoolVar(&o.verbose, "v", false, "trace frames (HTTP/2) and response headers on stderr")
	fs.BoolVar(&o.insecure, "insecure", false, "do not verify the server's certificate")
	fs.StringVar(&o.smig, "smig", "", "HTTP/2 with SMig stream migration, client `POLICY` nomig or migcp[:BYTES]")
	fs.DurationVar(&o.timeouts.connect, "connect-timeout", 30*time.Second, "give up when connecting (TCP and TLS) takes longer than `DURATION`")
	fs.DurationVar(&o.timeouts.response, "response-timeout", time.Minute, "give up when the response's header has not come `DURATION` after connecting")
	fs.DurationVar(&o.timeouts.idle, "idle-timeout", mph2.DefaultStallTimeout, "give up when no body byte has come for `DURATION` (MP-H2: on any path; a path's outage alone is waited out)")
	fs.IntVar(&o.retries, "retries", h2.DefaultResumeRetries, "when the connection breaks mid-body, ask for the rest with Range + If-Range up to `N` times on a new connection (0: never); a changed ETag or Last-Modified fails the download")
	fs.StringVar(&o.json, "json", "", "append the download's record (the JSON line of shunt bench's runs.jsonl) to `FILE`")
	fs.StringVar(&o.data, "data", "", "POST the contents of `@FILE` as the request body (sent again as it is when the server did not process the request)")
	o.mp.addFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return o, err
	}
	if len(pos) != 1 {
		fs.Usage()
		return o, fmt.Errorf("want one URL, got %d arguments", len(pos))
	}
	if o.url, err = url.Parse(pos[0]); err != nil {
		return o, fmt.Errorf("URL %q: %w", pos[0], err)
	}
	switch {
	case o.url.Scheme != "http" && o.url.Scheme != "https":
		return o, fmt.Errorf("URL %q: scheme must be http or https", pos[0])
	case o.url.Host == "":
		return o, fmt.Errorf("URL %q: no host", pos[0])
	case o.http11 && o.h2c:
		return o, errors.New("--http1.1 and --h2c exclude each other")
	case o.h2c && o.url.Scheme == "https":
		return o, errors.New("--h2c is cleartext: use an http:// URL (https:// speaks h2 via ALPN)")
	}
	if o.rng != "" {
		if _, _, err := parseRangeFlag(o.rng); err != nil {
			return o, err
		}
	}
	if o.data != "" {
		if !strings.HasPrefix(o.data, "@") || len(o.data) == 1 {
			return o, fmt.Errorf("--data %q: want @FILE", o.data)
		}
		if len(o.mp.paths) > 0 {
			return o, errors.New("--data: an MP-H2 download (--path) sends no body")
		}
	}
	if o.smig != "" {
		p, err := smig.ParsePolicy(o.smig)
		if err != nil {
			return o, fmt.Errorf("--smig: %w", err)
		}
		if p.ServerSide() {
			return o, fmt.Errorf("--smig %s: a server policy (shunt serve --smig); a client takes nomig or migcp[:BYTES]", o.smig)
		}
		if o.http11 || o.url.Scheme == "http" && !o.h2c {
			return o, errors.New("--smig is an HTTP/2 extension: use an https:// URL or --h2c")
		}
	}
	if o.retries < 0 {
		return o, fmt.Errorf("--retries %d: must not be negative", o.retries)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"connect", o.timeouts.connect}, {"response", o.timeouts.response}, {"idle", o.timeouts.idle}} {
		if t.d <= 0 {
			return o, fmt.Errorf("--%s-timeout %v: want a positive duration", t.name, t.d)
		}
	}
	return o, o.mp.check(o)
}

// parseRangeFlag checks a --range value: "A-B" (A <= B), "A-" or "-N" (N > 0).
// first is -1 for a suffix range; last is -1 when open.
func parseRangeFlag(s string) (first, last int64, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("--range %q: want A-B, A- or -N", s)
	}
	num := func(x string) (int64, error) {
		if x == "" || strings.TrimLeft(x, "0123456789") != "" {
			return 0, fmt.Errorf("--range %q: %q is not a byte offset", s, x)
		}
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("--range %q: %w", s, err)
		}
		return n, nil
	}
	switch {
	case a == "":
		if last, err = num(b); err == nil && last == 0 {
			err = fmt.Errorf("--range %q: a suffix of 0 bytes is unsatisfiable", s)
		}
		return -1, last, err
	case b == "":
		first, err = num(a)
		return first, -1, err
	}
	if first, err = num(a); err != nil {
		return 0, 0, err
	}
	if last, err = num(b); err != nil {
		return 0, 0, err
	}
	if last < first {
		return 0, 0, fmt.Errorf("--range %q: end before start", s)
	}
	return first, last, nil
}

func runGet(ctx context.Context, args []string, gio getIO) (err error) {
	stderr := &syncio.Writer{W: gio.stderr}
	defer stderr.Close()
	gio.stderr = stderr
	o, err := parseGetArgs(args, gio.stderr)
	if err != nil {
		return err
	}
	rec := newGetRecord(o)
	if err := identify(&rec.Run, o.json); err != nil {
		return err
	}
	w, err := openJSON(o.json)
	if err != nil {
		return err
	}
	if w != nil {
		defer func() {
			rec.Duration = time.Since(rec.Start).Seconds()
			err = errors.Join(err, w.Write(&rec.Record), w.Close())
		}()
	}
	if len(o.mp.paths) > 0 {
		return rec.fail(runGetMultipath(ctx, o, gio, rec))
	}
	return rec.fail(runGetSingle(ctx, o, gio, rec))
}

func runGetSingle(ctx context.Context, o getOptions, gio getIO, rec *getRecord) error {
	out, err := openGetOutput(o, false)
	if err != nil {
		return err
	}
	defer func() {
		if out != nil { // not committed: the download failed
			out.Abort()
		}
	}()
	req, err := newGetRequest(ctx, o)
	if err != nil {
		return err
	}
	if req.Body != nil {
		defer req.Body.Close()
	}
	req.Header.Set("User-Agent", "shunt-get")
	if o.rng != "" {
		req.Header.Set("Range", "bytes="+o.rng)
	}

	ctx, dog := newWatchdog(ctx)
	defer dog.stop()
	req = req.WithContext(ctx)
	times := getTimes{start: time.Now(), usedTLS: o.url.Scheme == "https", dog: dog, limits: o.timeouts}
	dog.set(o.timeouts.connect, "no connection within %v (--connect-timeout)")
	var resp *http.Response
	var again http.RoundTripper // for the re-requests of a broken body
	if o.http11 || (o.url.Scheme == "http" && !o.h2c) {
		var tr *http.Transport
		resp, tr, err = roundTripHTTP1(req, o, &times)
		defer tr.CloseIdleConnections()
		again = tr
	} else {
		var nc net.Conn
		resp, nc, again, err = roundTripH2(ctx, req, o, &times, gio.stderr)
		if nc != nil {
			defer nc.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("GET %s: %w", o.url, explain(ctx, err))
	}
	resp = resumer(again, o, gio.stderr).Wrap(req, resp)
	defer resp.Body.Close()
	times.firstByte = time.Since(times.start)
	dog.set(o.timeouts.idle, "no data for %v (--idle-timeout)")
	if o.verbose {
		printResponseHead(gio.stderr, resp)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: server answered %s%s", o.url, resp.Status, bodyHint(resp))
	}

	if o.rng != "" && resp.StatusCode == http.StatusOK {
		fmt.Fprintln(gio.stderr, "note: the server ignored the range and sent the whole object")
	}
	check, err := planCheck(o.url.Path, resp)
	if err != nil {
		return fmt.Errorf("GET %s: %w", o.url, err)
	}
	sum := sha256.New()
	writers := []io.Writer{sum}
	if check.verifier != nil {
		writers = append(writers, check.verifier)
	}
	if gio.progress {
		writers = append(writers, progressbar.DefaultBytes(resp.ContentLength, o.url.Path))
	}
	complete := func(n int64) error {
		if resp.ContentLength >= 0 && n != resp.ContentLength {
			return fmt.Errorf("received %d bytes, Content-Length is %d", n, resp.ContentLength)
		}
		if check.length >= 0 && n != check.length {
			return fmt.Errorf("received %d bytes of %s, want %d", n, check.what, check.length)
		}
		return nil
	}
	w := gio.stdout
	if out != nil {
		w = out.File()
	}
	n, err := receive(w, idleReader{resp.Body, dog, o.timeouts}, writers, complete)
	times.total = time.Since(times.start)
	if err == nil && out != nil {
		err, out = out.Commit(), nil
	}
	if err != nil {
		return fmt.Errorf("GET %s: %w", o.url, explain(ctx, err))
	}

	printTimes(gio.stderr, times, n, resp)
	digest := hex.EncodeToString(sum.Sum(nil))
	fmt.Fprintf(gio.stderr, "sha256 %s  length %d\n", digest, n)
	rec.measured(map[string]float64{"time": times.total.Seconds(), "first_byte": times.firstByte.Seconds(), "connect": times.connect.Seconds(), "tls": times.tls.Seconds()},
		map[string]float64{"bytes": float64(n)}, map[string]string{"http": resp.Proto, "status": resp.Status, "sha256": digest})
	if check.verifier != nil {
		fmt.Fprintf(gio.stderr, "verified: %s match the generator\n", check.what)
	}
	return nil
}

// newGetRequest is a GET, or with --data @FILE a POST of FILE, whose body
// can be opened again for a request sent again.
func newGetRequest(ctx context.Context, o getOptions) (*http.Request, error) {
	if o.data == "" {
		return http.NewRequestWithContext(ctx, http.MethodGet, o.url.String(), nil)
	}
	name := o.data[1:]
	open := func() (io.ReadCloser, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--data: %w", err)
		}
		return f, nil
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--data %s: not a regular file", name)
	}
	body, err := open()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url.String(), body)
	if err != nil {
		body.Close()
		return nil, err
	}
	req.ContentLength, req.GetBody = fi.Size(), open
	return req, nil
}

// contentCheck is what a generated object's response must hold.
type contentCheck struct {
	verifier *content.Verifier // nil: not a generated object
	length   int64             // expected body length; -1 unknown
	what     string            // for messages: "bytes 0-99 of /gen/10KB"
}

// planCheck works out, for /gen/<size> URLs, which bytes of the generated
// object the response must carry: all of them for a 200, the Content-Range
// for a 206.
func planCheck(urlPath string, resp *http.Response) (contentCheck, error) {
	size, ok, err := content.GenSize(urlPath)
	if !ok || err != nil {
		return contentCheck{length: -1}, nil
	}
	first, last := int64(0), size-1
	if resp.StatusCode == http.StatusPartialContent {
		cr := resp.Header.Get("Content-Range")
		if cr == "" {
			return contentCheck{}, errors.New("206 without a Content-Range (multipart responses are not checked)")
		}
		var total int64
		if first, last, total, err = content.ParseContentRange(cr); err != nil {
			return contentCheck{}, err
		}
		if total != size {
			return contentCheck{}, fmt.Errorf("Content-Range %q: object size %d, want %d for %s", cr, total, size, urlPath)
		}
	} else if resp.StatusCode != http.StatusOK {
		return contentCheck{length: -1}, nil
	}
	return contentCheck{
		verifier: content.NewVerifier(first),
		length:   last - first + 1,
		what:     fmt.Sprintf("bytes %d-%d of %s", first, last, urlPath),
	}, nil
}

// receive copies the body to w and to the writers, then asks complete
// whether the n bytes received are the whole answer.
func receive(w io.Writer, body io.Reader, writers []io.Writer, complete func(n int64) error) (int64, error) {
	n, err := io.CopyBuffer(io.MultiWriter(append([]io.Writer{w}, writers...)...), body, make([]byte, 256<<10))
	if err == nil {
		err = complete(n)
	}
	return n, err
}

// openGetOutput opens -o's output (nil for stdout) before the download,
// so a path that cannot be written fails first.
func openGetOutput(o getOptions, seekable bool) (*output, error) {
	if o.out == "" || o.out == "-" {
		return nil, nil
	}
	out, err := openOutput(o.out, seekable)
	if err != nil {
		return nil, fmt.Errorf("-o: %w", err)
	}
	return out, nil
}

// resumer re-requests a broken body's rest on rt, saying so on stderr.
func resumer(rt http.RoundTripper, o getOptions, stderr io.Writer) *h2.Resume {
	retries := o.retries
	if retries == 0 {
		retries = -1
	}
	return &h2.Resume{Transport: rt, Retries: retries, OnResume: func(_ *http.Request, n int64, cause error) {
		fmt.Fprintf(stderr, "resuming at byte %d with Range + If-Range after: %v\n", n, cause)
	}}
}

// roundTripHTTP1 returns the transport too, for re-requests; the caller
// closes its idle connections.
func roundTripHTTP1(req *http.Request, o getOptions, times *getTimes) (*http.Response, *http.Transport, error) {
	dial := timedDial(times)
	tr := &http.Transport{
		DialContext: dial,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return timedTLS(ctx, c, tlsConfig(o, "http/1.1"), times)
		},
		ForceAttemptHTTP2:  false,
		TLSNextProto:       map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression: true, // the body must arrive as the server sent it
	}
	res, err := tr.RoundTrip(req)
	return res, tr, err
}

// getRetries bounds how often a request the server did not process
// (REFUSED_STREAM, or above a GOAWAY's last stream) is sent again.
const getRetries = 3

// roundTripH2 runs the request on a new connection, and again on another
// one when the server says it did not process it (RFC 9113 8.7: such a
// request can be retried safely). The caller closes the conn; again is a
// transport for re-requests, on connections of its own.
func roundTripH2(ctx context.Context, req *http.Request, o getOptions, times *getTimes, stderr io.Writer) (resp *http.Response, nc net.Conn, again http.RoundTripper, err error) {
	for try := 0; ; try++ {
		resp, nc, again, err = roundTripH2Once(ctx, req, o, times, stderr)
		if err == nil || !errors.Is(err, h2.ErrNotProcessed) || try == getRetries {
			return resp, nc, again, err
		}
		fmt.Fprintf(stderr, "note: %v; sending the request again on a new connection\n", err)
		if req.GetBody != nil {
			body, berr := req.GetBody()
			if berr != nil {
				return nil, nil, nil, berr
			}
			req = req.Clone(ctx)
			req.Body = body
		}
	}
}

// roundTripH2Once dials and handshakes itself (so connect and TLS are timed)
// and hands the connection to the h2 engine.
func roundTripH2Once(ctx context.Context, req *http.Request, o getOptions, times *getTimes, stderr io.Writer) (resp *http.Response, nc net.Conn, again http.RoundTripper, err error) {
	addr := h2.HostPort(o.url.Host, o.url.Scheme)
	nc, err = timedDial(times)(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, nil, err
	}
	if o.smig != "" {
		return roundTripSMig(req, nc, o, times, stderr)
	}
	tr := &h2.Transport{AllowHTTP: o.h2c, DialContext: (&net.Dialer{Timeout: o.timeouts.connect}).DialContext}
	if o.url.Scheme == "https" {
		tr.TLSClientConfig = tlsConfig(o, "h2")
		tc, err := timedTLS(ctx, nc, tr.TLSClientConfig, times)
		if err != nil {
			nc.Close()
			return nil, nil, nil, err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			tc.Close()
			return nil, nil, nil, fmt.Errorf("server did not choose h2 by ALPN (got %q); try --http1.1", p)
		}
		nc = tc
	}
	if o.verbose {
		tr.Config.Trace = h2.FrameTracer(stderr, times.start, smig.Describe)
	}
	cc, err := tr.NewClientConn(nc)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	resp, err = cc.RoundTrip(req)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return resp, nc, tr, nil
}

// roundTripSMig runs the request on an SMig transport whose first
// connection is nc (timed by the caller); pooled ones it dials itself.
func roundTripSMig(req *http.Request, nc net.Conn, o getOptions, times *getTimes, stderr io.Writer) (*http.Response, net.Conn, http.RoundTripper, error) {
	p, _ := smig.ParsePolicy(o.smig) // checked with the flags
	first := nc
	var once, tlsDone sync.Once
	tc := tlsConfig(o, "h2")
	// smig.Transport makes the TLS connections itself (its session cache
	// binds the pool); the first connection's handshake is timed where the
	// client has checked the server, at the end of the handshake.
	tc.VerifyConnection = func(tls.ConnectionState) error {
		tlsDone.Do(func() { times.tls = time.Since(times.start); times.connected() })
		return nil
	}
	tr := &smig.Transport{AllowHTTP: o.h2c, Policy: p, TLSClientConfig: tc,
		Logf: log.New(stderr, "", 0).Printf,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			once.Do(func() { c = first })
			if c != nil {
				return c, nil
			}
			return (&net.Dialer{Timeout: o.timeouts.connect}).DialContext(ctx, network, addr)
		}}
	if o.verbose {
		tr.Config.Trace = h2.FrameTracer(stderr, time.Now(), smig.Describe)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return resp, nc, tr, nil
}

func tlsConfig(o getOptions, proto string) *tls.Config {
	return &tls.Config{
		ServerName:         o.url.Hostname(),
		NextProtos:         []string{proto},
		InsecureSkipVerify: o.insecure,
	}
}

func timedDial(times *getTimes) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: times.limits.connect}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		times.connect = time.Since(times.start)
		if !times.usedTLS {
			times.connected()
		}
		return c, nil
	}
}

func timedTLS(ctx context.Context, c net.Conn, cfg *tls.Config, times *getTimes) (*tls.Conn, error) {
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", c.RemoteAddr(), err)
	}
	times.tls = time.Since(times.start)
	times.connected()
	return tc, nil
}

func printTimes(w io.Writer, t getTimes, n int64, resp *http.Response) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 2, 64) + " ms" }
	line := "connect " + ms(t.connect)
	if t.usedTLS {
		line += ", tls " + ms(t.tls)
	}
	fmt.Fprintf(w, "%s, first byte %s, total %s (from start)\n", line, ms(t.firstByte), ms(t.total))
	fmt.Fprintf(w, "%s %s: %d bytes, goodput %.1f Mbit/s\n",
		resp.Proto, resp.Status, n, float64(n)*8/t.total.Seconds()/1e6)
}

func printResponseHead(w io.Writer, resp *http.Response) {
	fmt.Fprintf(w, "< %s %s\n", resp.Proto, resp.Status)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(w, "< %s: %s\n", k, v)
		}
	}
}

// bodyHint returns the start of a text error body, for the error message.
func bodyHint(resp *http.Response) string {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if s := strings.TrimSpace(string(b)); s != "" {
		return ": " + s
	}
	return ""
}

// getRecord is a download's record, as shunt bench's runs.jsonl holds them
// (driver "get": the options given, the URL as the object).
type getRecord struct{ experiment.Record }

func newGetRecord(o getOptions) *getRecord {
	params := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			params[k] = v
		}
	}
	proto := "h2"
	switch {
	case o.http11 || (o.url.Scheme == "http" && !o.h2c && len(o.mp.paths) == 0):
		proto = "h1"
	case o.h2c:
		proto = "h2c"
	}
	set("proto", proto)
	set("range", o.rng)
	set("smig", o.smig)
	cond := experiment.Condition{Name: "host", Topology: "single", Paths: []experiment.PathSpec{{Name: "default"}}}
	name := "get-" + proto
	if len(o.mp.paths) > 0 {
		name = "mph2"
		cond.Topology = "multihomed"
		cond.Paths = nil
		for i, p := range o.mp.paths {
			cond.Paths = append(cond.Paths, experiment.PathSpec{Name: p.Label(i)})
		}
		set("size", o.mp.size)
		set("end_adjust", o.mp.endAdjust)
		if o.mp.noPipelining {
			params["pipelining"] = "false"
		}
	}
	r := &getRecord{experiment.Record{Run: experiment.Run{Scenario: "shunt get", Condition: cond,
		Protocol: experiment.Protocol{Name: name, Driver: "get", Params: params}, Object: experiment.Object{Name: o.url.String()}}, Start: time.Now()}}
	return r
}

func (r *getRecord) measured(metrics, counts map[string]float64, info map[string]string) {
	r.Metrics, r.Counts, r.Info = metrics, counts, info
}

// fail records err (if any) and returns it.
func (r *getRecord) fail(err error) error {
	if err != nil {
		r.Error = err.Error()
	}
	return err
}
