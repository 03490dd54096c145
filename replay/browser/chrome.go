package browser

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultBinary is where Debian installs Chromium.
const DefaultBinary = "/usr/bin/chromium"

// Config says how to start Chromium for one load.
type Config struct {
	Binary string // default DefaultBinary
	// Proto is the HTTP version Chromium may use: "h1" (HTTP/2 disabled, so
	// HTTP/1.1 with up to 6 connections per host), "h2" (ALPN decides), "h3"
	// (QUIC forced for H3Origin).
	Proto    string
	H3Origin string // HOST:PORT, for h3
	// Cert is the server's certificate, trusted by its public key: QUIC
	// does not honour --ignore-certificate-errors alone.
	Cert *x509.Certificate
	// TrustSPKI are base64 SHA-256 hashes of public keys (a proxy CA's and
	// its leaves', proxy.CA.SPKIHashes) that Chromium accepts; with any,
	// --ignore-certificate-errors is left out, so a certificate with
	// another key fails.
	TrustSPKI []string
	// Command makes the process (in a namespace, say); nil is exec.CommandContext.
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
	// Stderr gets Chromium's own log; nil discards it.
	Stderr io.Writer
	// Proxy is an HTTP proxy (HOST:PORT) for every request, loopback's
	// included; "" connects directly. ProxyTLS: an HTTPS proxy, to which
	// Chromium speaks HTTP/2 (its certificate is not checked).
	Proxy    string
	ProxyTLS bool
	// SecureOrigins are http:// origins the page may treat as secure
	// (Web Crypto is only there in secure contexts).
	SecureOrigins []string
	// Wrap is a command that runs Chromium (e.g. "mptcpize", "run": its
	// TCP sockets become MPTCP ones); nil runs it directly.
	Wrap []string
}

// Load is what one page load measured, in the page's own clock
// (performance.now(), zero at navigation start).
type Load struct {
	// PLT is loadEventEnd: navigation start to the end of the load event.
	PLT time.Duration `json:"plt_ns"`
	// LastResponse is the latest responseEnd of the document and every
	// resource, the browser's side of the replay's "last download".
	LastResponse     time.Duration `json:"last_response_ns"`
	DOMContentLoaded time.Duration `json:"dcl_ns"`
	// LCP is the largest contentful paint's time (the last
	// largest-contentful-paint entry two frames after the load event); 0:
	// the page painted nothing that counts.
	LCP time.Duration `json:"lcp_ns"`
	// Connected is when the document's connection was ready (TCP and TLS),
	// FirstByte when its response began: what the load spends before the
	// root HTML arrives, to set beside the replay's root object.
	Connected time.Duration `json:"connected_ns"`
	FirstByte time.Duration `json:"first_byte_ns"`
	// RequestSent is when the document's request went out (requestStart):
	// through a proxy, to the proxy.
	RequestSent time.Duration `json:"request_sent_ns"`
	// Interactive is domInteractive: the document parsed, its
	// parser-blocking scripts run; DOMContentLoaded follows.
	Interactive time.Duration `json:"interactive_ns"`
	// Frames are the documents of the page's iframes (nested ones too),
	// to tell whether a frame's parse and scripts ran before the page's
	// DOMContentLoaded.
	Frames []Frame `json:"frames,omitempty"`
	// LongFrames are the load's long animation frames (50 ms and more of
	// main-thread work, Chromium's LoAF), with the scripts that ran in them.
	LongFrames []LongFrame `json:"long_frames,omitempty"`
	Resources  int         `json:"resources"` // distinct URLs in the resource timing of the page and its iframes (the document excluded)
	Protocol   string      `json:"protocol"`  // nextHopProtocol of the document: http/1.1, h2, h3
	// Objects are the document and every distinct resource URL, in the
	// order the browser requested them (the first fetch of a URL counts).
	Objects []Fetch `json:"objects"`
}

// Fetch is one object of a browser's load, as its resource timing shows it.
type Fetch struct {
	Target    string        `json:"target"`     // request target: path and query
	Request   time.Duration `json:"request_ns"` // startTime: when the fetch was issued
	FirstByte time.Duration `json:"first_byte_ns"`
	Done      time.Duration `json:"done_ns"`
	// Bytes is the body received (encodedBodySize; the site is served
	// uncompressed, so it is the body's length).
	Bytes int64 `json:"bytes"`
}

// Frame is an iframe's document as its navigation timing shows it, in
// the page's clock; an event it has not reached is 0.
type Frame struct {
	Target           string        `json:"target"`
	Start            time.Duration `json:"start_ns"` // its navigation's start
	Done             time.Duration `json:"done_ns"`  // responseEnd
	Interactive      time.Duration `json:"interactive_ns"`
	DOMContentLoaded time.Duration `json:"dcl_ns"`
	Load             time.Duration `json:"load_ns"` // loadEventEnd
}

// LongFrame is a long animation frame, in the page's clock.
type LongFrame struct {
	Start    time.Duration `json:"start_ns"`
	Duration time.Duration `json:"duration_ns"`
	Blocking time.Duration `json:"blocking_ns"`
	Scripts  []LongScript  `json:"scripts,omitempty"`
}

// LongScript is a script's part of a long animation frame.
type LongScript struct {
	Source   string        `json:"source"`  // the script's path
	Window   string        `json:"window"`  // self, descendant, ancestor, same-page, other
	Invoker  string        `json:"invoker"` // classic-script, event-listener, ...
	Duration time.Duration `json:"duration_ns"`
}

// timingScript waits (bounded) for loadEventEnd and reports the timings.
const timingScript = `new Promise((ok, fail) => {
  const until = performance.now() + 10000;
  const poll = () => {
    const n = performance.getEntriesByType("navigation")[0];
    if (n && n.loadEventEnd > 0) {
      // Resources of (same-origin) iframes are in their own timelines; a
      // URL fetched twice counts once.
      let last = n.responseEnd;
      const urls = new Set();
      const objs = [{t: location.pathname + location.search, s: n.startTime, b: n.responseStart, e: n.responseEnd, n: n.encodedBodySize}];
      const frames = [];
      const walk = (w, depth) => {
        const shift = w.performance.timeOrigin - performance.timeOrigin;
        const at = v => v > 0 ? shift + v : 0;
        const f = depth > 0 && w.performance.getEntriesByType("navigation")[0];
        if (f) frames.push({t: w.location.pathname + w.location.search, s: shift + f.startTime, e: at(f.responseEnd), i: at(f.domInteractive), d: at(f.domContentLoadedEventEnd), l: at(f.loadEventEnd)});
        for (const r of w.performance.getEntriesByType("resource")) {
          last = Math.max(last, shift + r.responseEnd);
          if (urls.has(r.name)) continue;
          urls.add(r.name);
          const u = new URL(r.name);
          objs.push({t: u.pathname + u.search, s: shift + r.startTime, b: shift + r.responseStart, e: shift + r.responseEnd, n: r.encodedBodySize});
        }
        if (depth < 8) for (let i = 0; i < w.frames.length; i++) walk(w.frames[i], depth + 1);
      };
      walk(window, 0);
      objs.sort((x, y) => x.s - y.s);
      // LCP entries are only observable, not in the timeline; the buffered
      // ones come to the callback in a task of their own. Two frames after
      // the load event the last candidate has painted.
      let lcp = 0;
      const po = new PerformanceObserver(l => { for (const e of l.getEntries()) lcp = e.startTime; });
      po.observe({type: "largest-contentful-paint", buffered: true});
      // Long animation frames (50 ms and more of main-thread work) with
      // the scripts that ran in them, the frames' included.
      const long = [];
      const path = u => { try { return new URL(u, location.href).pathname; } catch (_) { return u; } };
      const addLong = es => { for (const e of es) long.push({s: e.startTime, d: e.duration, b: e.blockingDuration,
        sc: (e.scripts || []).map(x => ({u: x.sourceURL ? path(x.sourceURL) : "", w: x.windowAttribution, i: x.invokerType, d: x.duration}))}); };
      const lo = new PerformanceObserver(l => addLong(l.getEntries()));
      lo.observe({type: "long-animation-frame", buffered: true});
      requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
        for (const e of po.takeRecords()) lcp = e.startTime;
        po.disconnect();
        addLong(lo.takeRecords());
        lo.disconnect();
        ok(JSON.stringify({plt: n.loadEventEnd, last: last, dcl: n.domContentLoadedEventEnd, interactive: n.domInteractive, frames: frames, long: long, lcp: lcp, conn: n.connectEnd, sent: n.requestStart, ttfb: n.responseStart, protocol: n.nextHopProtocol, objects: objs}));
      }, 0)));
    } else if (performance.now() > until) {
      fail(new Error("no loadEventEnd"));
    } else {
      setTimeout(poll, 5);
    }
  };
  poll();
})`

// Args are Chromium's command line for cfg with profile dir: headless, no
// background traffic, any certificate accepted, DevTools on fds 3 and 4.
func (cfg Config) Args(profile string) ([]string, error) {
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
		"--user-data-dir=" + profile, "--remote-debugging-pipe",
		// A video player plays without a click; pages without media are unaffected.
		"--autoplay-policy=no-user-gesture-required"}
	if len(cfg.TrustSPKI) == 0 {
		args = append(args, "--ignore-certificate-errors")
	}
	if cfg.Proxy != "" {
		scheme := "http://"
		if cfg.ProxyTLS {
			scheme = "https://"
		}
		args = append(args, "--proxy-server="+scheme+cfg.Proxy, "--proxy-bypass-list=<-loopback>")
	}
	if len(cfg.SecureOrigins) > 0 {
		args = append(args, "--unsafely-treat-insecure-origin-as-secure="+strings.Join(cfg.SecureOrigins, ","))
	}
	switch cfg.Proto {
	case "h1":
		args = append(args, "--disable-http2", "--disable-quic")
	case "h2":
		args = append(args, "--disable-quic")
	case "h3":
		if cfg.H3Origin == "" {
			return nil, errors.New("chromium h3: no origin to force QUIC on")
		}
		args = append(args, "--enable-quic", "--origin-to-force-quic-on="+cfg.H3Origin)
	default:
		return nil, fmt.Errorf("chromium: proto %q: want h1, h2 or h3", cfg.Proto)
	}
	spkis := cfg.TrustSPKI
	if cfg.Cert != nil {
		spki := sha256.Sum256(cfg.Cert.RawSubjectPublicKeyInfo)
		spkis = append(slices.Clip(spkis), base64.StdEncoding.EncodeToString(spki[:]))
	}
	if len(spkis) > 0 {
		args = append(args, "--ignore-certificate-errors-spki-list="+strings.Join(spkis, ","))
	}
	return append(args, "about:blank"), nil
}

// resolverRules let Chromium resolve the page's host and the proxy's and
// nothing else (the rule covers address literals too): its own background
// requests (sign-in, optimisation hints) must not leave the machine, not
// even as a DNS query.
func resolverRules(url, proxy string) string {
	rule := "MAP * ~NOTFOUND"
	if u, err := neturl.Parse(url); err == nil && u.Hostname() != "" {
		rule += ", EXCLUDE " + u.Hostname()
	}
	if host, _, err := net.SplitHostPort(proxy); err == nil {
		rule += ", EXCLUDE " + host
	}
	return rule
}

// LoadPage starts a fresh Chromium (new profile), loads url, reads the
// timings, and kills Chromium and removes the profile, all within ctx.
func LoadPage(ctx context.Context, cfg Config, url string) (Load, error) {
	v, err := Evaluate(ctx, cfg, url, timingScript)
	if err != nil {
		return Load{}, err
	}
	return parseTimings(url, v)
}

// Evaluate starts a fresh Chromium (new profile), loads url, waits for its
// load event, evaluates script (an expression whose value, or whose
// promise's value, is a string) in the page and returns that string; then
// it kills Chromium and removes the profile, all within ctx.
func Evaluate(ctx context.Context, cfg Config, url, script string) (string, error) {
	if cfg.Binary == "" {
		cfg.Binary = DefaultBinary
	}
	if cfg.Command == nil {
		cfg.Command = exec.CommandContext
	}
	profile, err := os.MkdirTemp("", "shunt-chromium-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(profile)
	args, err := cfg.Args(profile)
	if err != nil {
		return "", err
	}
	args = append([]string{"--host-resolver-rules=" + resolverRules(url, cfg.Proxy)}, args...)
	// Chromium reads commands on fd 3 and writes on fd 4.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return "", err
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return "", err
	}
	argv := append(append(cfg.Wrap[:len(cfg.Wrap):len(cfg.Wrap)], cfg.Binary), args...)
	cmd := cfg.Command(ctx, argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{cmdR, evW}
	cmd.Stderr = cfg.Stderr
	// Its own process group, so its zygote and renderers die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Start()
	cmdR.Close()
	evW.Close()
	if err != nil {
		cmdW.Close()
		evR.Close()
		return "", fmt.Errorf("start %s: %w", cfg.Binary, err)
	}
	c := newCDP(cmdW, evR)
	v, err := evaluate(ctx, c, url, script)
	c.close()
	// Every process of the group, renderers included, then reap the leader.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	evR.Close()
	return v, err
}

func evaluate(ctx context.Context, c *cdp, url, script string) (string, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return "", err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return "", err
	}
	s := att.SessionID
	if err := c.call(ctx, s, "Page.enable", nil, nil); err != nil {
		return "", err
	}
	loaded := c.subscribe(s, "Page.loadEventFired")
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := c.call(ctx, s, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return "", err
	}
	if nav.ErrorText != "" {
		return "", fmt.Errorf("navigate %s: %s", url, nav.ErrorText)
	}
	select {
	case <-loaded:
	case <-c.dead:
		return "", fmt.Errorf("waiting for the load event of %s: %w", url, c.err)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the load event of %s: %w", url, ctx.Err())
	}
	var ev struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := c.call(ctx, s, "Runtime.evaluate", map[string]any{"expression": script, "awaitPromise": true, "returnByValue": true}, &ev); err != nil {
		return "", err
	}
	if ev.Exception != nil {
		return "", fmt.Errorf("evaluating in %s: %s", url, ev.Exception.Text)
	}
	c.call(ctx, "", "Browser.close", nil, nil)
	return ev.Result.Value, nil
}

// parseTimings reads timingScript's value.
func parseTimings(url, value string) (Load, error) {
	var t struct {
		PLT, Last, DCL, LCP, Conn, Sent, TTFB, Interactive float64
		Protocol                                           string
		Objects                                            []struct {
			T       string
			S, B, E float64
			N       int64
		}
		Frames []struct {
			T             string
			S, E, I, D, L float64
		}
		Long []struct {
			S, D, B float64
			SC      []struct {
				U, W, I string
				D       float64
			}
		}
	}
	if err := json.Unmarshal([]byte(value), &t); err != nil {
		return Load{}, fmt.Errorf("reading timings of %s: %q: %w", url, value, err)
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	l := Load{PLT: ms(t.PLT), LastResponse: ms(t.Last), DOMContentLoaded: ms(t.DCL), LCP: ms(t.LCP), Connected: ms(t.Conn), RequestSent: ms(t.Sent), FirstByte: ms(t.TTFB), Interactive: ms(t.Interactive), Protocol: t.Protocol}
	for _, o := range t.Objects {
		l.Objects = append(l.Objects, Fetch{Target: o.T, Request: ms(o.S), FirstByte: ms(o.B), Done: ms(o.E), Bytes: o.N})
	}
	for _, f := range t.Frames {
		l.Frames = append(l.Frames, Frame{Target: f.T, Start: ms(f.S), Done: ms(f.E), Interactive: ms(f.I), DOMContentLoaded: ms(f.D), Load: ms(f.L)})
	}
	for _, f := range t.Long {
		lf := LongFrame{Start: ms(f.S), Duration: ms(f.D), Blocking: ms(f.B)}
		for _, x := range f.SC {
			lf.Scripts = append(lf.Scripts, LongScript{Source: x.U, Window: x.W, Invoker: x.I, Duration: ms(x.D)})
		}
		l.LongFrames = append(l.LongFrames, lf)
	}
	l.Resources = len(l.Objects) - 1 // the document is the first
	return l, nil
}

// cdp is a DevTools protocol client over Chromium's pipe: JSON messages,
// each ended by a NUL byte.
type cdp struct {
	w    io.WriteCloser
	mu   sync.Mutex
	next int
	wait map[int]chan message
	subs map[string]chan struct{} // by session + " " + method; fired once
	dead chan struct{}            // closed when the reader stops; err says why
	err  error
}

type message struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func newCDP(w io.WriteCloser, r io.Reader) *cdp {
	c := &cdp{w: w, wait: map[int]chan message{}, subs: map[string]chan struct{}{}, dead: make(chan struct{})}
	go c.read(r)
	return c
}

// maxMessage bounds one DevTools message.
const maxMessage = 64 << 20

func (c *cdp) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var b []byte
		if b, err = br.ReadBytes(0); err != nil {
			break
		}
		if len(b) > maxMessage {
			err = fmt.Errorf("DevTools message of %d bytes", len(b))
			break
		}
		var m message
		if err = json.Unmarshal(bytes.TrimSuffix(b, []byte{0}), &m); err != nil {
			err = fmt.Errorf("DevTools message: %w", err)
			break
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.wait[m.ID]; ok {
				ch <- m
				delete(c.wait, m.ID)
			}
		} else if ch, ok := c.subs[m.SessionID+" "+m.Method]; ok {
			close(ch)
			delete(c.subs, m.SessionID+" "+m.Method)
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.err = fmt.Errorf("chromium's DevTools pipe: %w", err)
	c.mu.Unlock()
	close(c.dead)
}

// subscribe returns a channel closed at the next event method of session.
func (c *cdp) subscribe(session, method string) <-chan struct{} {
	ch := make(chan struct{})
	c.mu.Lock()
	c.subs[session+" "+method] = ch
	c.mu.Unlock()
	return ch
}

// call sends a command and decodes its result into out (if not nil).
func (c *cdp) call(ctx context.Context, session, method string, params any, out any) error {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan message, 1)
	c.wait[id] = ch
	c.mu.Unlock()
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if session != "" {
		req["sessionId"] = session
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: DevTools error %d: %s", method, m.Error.Code, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-c.dead:
		return fmt.Errorf("%s: %w", method, c.err)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *cdp) close() { c.w.Close() }

// ErrNoChromium is returned by Available when the binary cannot be run.
var ErrNoChromium = errors.New("chromium not installed")

// Available checks that binary exists and runs.
func Available(binary string) error {
	if binary == "" {
		binary = DefaultBinary
	}
	if _, err := exec.LookPath(binary); err != nil {
		return fmt.Errorf("%w: %v", ErrNoChromium, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil || !strings.Contains(string(out), "Chrom") {
		return fmt.Errorf("%w: %s --version: %v %q", ErrNoChromium, binary, err, out)
	}
	return nil
}
