package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"time"

	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/fetch"
	"github.com/shunt-net/shunt/replay/site"
	"github.com/shunt-net/shunt/smig"
	"github.com/shunt-net/shunt/testbed"
)

var replayCmd = &Command{
	Name:  "replay",
	Usage: "replay PAGE [--proto h1|h2|h3] [--conns N] [--streams N] [--schedule interleaved|sequential|browser] [--pacing] [--compute] [--tls=false] [--smig POLICY] [--browser] [--url URL [--insecure]] [--json FILE] [link options]",
	Short: "load a page's dependency graph once over HTTP/1.1, HTTP/2 or HTTP/3 and draw its waterfall",
}

func init() {
	replayCmd.Run = func(ctx context.Context, args []string) error {
		return runReplay(ctx, args, os.Stdout, os.Stderr)
	}
	Register(replayCmd)
}

// replayCC is the congestion control of every TCP socket of a replay, set
// explicitly so a namespace's default (bbr) does not decide the result.
const replayCC = "cubic"

// replayPort is where the server listens in an emulated network.
const replayPort = 8443

// replayRecord is the JSON line of one page load: its configuration, then
// the load (replay.Result).
type replayRecord struct {
	Time     time.Time    `json:"time"`
	Config   replayConfig `json:"config"`
	Protocol string       `json:"protocol"`    // as the responses said
	Conns    int          `json:"connections"` // opened by the load
	*replay.Result
}

type replayConfig struct {
	PageFile  string `json:"page_file"`
	Proto     string `json:"proto"`
	Label     string `json:"transport"`
	Conns     int    `json:"conns,omitempty"`
	Streams   int    `json:"streams,omitempty"`
	Schedule  string `json:"schedule,omitempty"`
	Pacing    bool   `json:"server_tcp_pacing,omitempty"`
	TLS       bool   `json:"tls"`
	Compute   bool   `json:"compute"`
	SMig      string `json:"smig,omitempty"`
	Server    string `json:"server"` // URL, "loopback" or "emulated"
	Up        string `json:"link_up,omitempty"`
	Down      string `json:"link_down,omitempty"`
	Seed      int64  `json:"seed,omitempty"`
	TCPCC     string `json:"tcp_cc,omitempty"`
	SizesFrom string `json:"sizes_from"`
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(replayCmd)
	fs.SetOutput(stderr)
	proto := fs.String("proto", "h2", "`PROTO`: h1 (N connections), h2 or h3 (one connection, N streams)")
	conns := fs.Int("conns", fetch.DefaultConns, "HTTP/1.1 connections at most")
	streams := fs.Int("streams", fetch.DefaultStreams, "HTTP/2 and HTTP/3 concurrent streams at most")
	schedule := fs.String("schedule", "", "`SCHEDULE` of the responses on the h2/h3 connection: interleaved (default, as the paper's SCTP), sequential (RFC 9218's default) or browser (Chromium's urgencies by resource type)")
	pacing := fs.Bool("pacing", false, "the page server paces its TCP connections (Linux's internal pacing), as quic-go paces QUIC")
	compute := fs.Bool("compute", false, "run the graph's computations for their recorded time")
	useTLS := fs.Bool("tls", true, "TLS for h1 and h2 (h3 always has it); false: cleartext HTTP/1.1 and h2c")
	rawURL := fs.String("url", "", "load from a running `shunt serve --page PAGE [--h3]` at `URL` (https://HOST:PORT) instead of a server of its own")
	insecure := fs.Bool("insecure", false, "with --url: accept any server certificate")
	jsonFile := fs.String("json", "", "append the load as one JSON line to `FILE`")
	width := fs.Int("width", 80, "waterfall width in columns")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up on the load after this long")
	seed := fs.Int64("seed", 1, "`SEED` of the emulated links' loss")
	smigText := fs.String("smig", "", "`POLICY` (h2 only): HTTP/2 with SMig, nomig | migsw[:BYTES] | migsp[:BYTES] | migcp[:BYTES]; a server policy runs in the server, migcp in the client")
	browserMode := fs.Bool("browser", false, "load the page's generated site (replay/browser) in headless Chromium instead of walking its graph; --proto h1 disables HTTP/2")
	lf := addLinkFlags(fs)
	// Go's flag package stops at the first argument, so PAGE may come first.
	var pageArg string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		pageArg, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if pageArg == "" && fs.NArg() > 0 {
		pageArg = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if pageArg == "" {
		fs.Usage()
		return errors.New("no page given")
	}
	file, err := site.PageFile(pageArg)
	if err != nil {
		return err
	}
	p, err := page.Load(file)
	if err != nil {
		return err
	}
	cfg := fetch.Config{Proto: *proto, Conns: *conns, Streams: *streams, Schedule: *schedule, TLS: *useTLS, Page: p.Name}
	if cfg.Proto == fetch.H3 {
		cfg.TLS = true
	}
	rc := replayConfig{PageFile: file, Proto: cfg.Proto, TLS: cfg.TLS, Compute: *compute, SizesFrom: sizesFrom(p), SMig: *smigText, Pacing: *pacing}
	var smigSrv *smig.Server // the server's SMig when it is ours
	if *smigText != "" {
		pol, err := smig.ParsePolicy(*smigText)
		if err != nil {
			return fmt.Errorf("--smig: %w", err)
		}
		if cfg.Proto != fetch.H2 || *browserMode {
			return errors.New("--smig needs --proto h2 and the replay (not --browser)")
		}
		srvPol, cliPol := pol.Split()
		smigSrv, cfg.SMig = &smig.Server{Policy: srvPol}, &cliPol
	}
	handler, bs, err := replayHandler(p, *browserMode, *compute)
	if err != nil {
		return err
	}
	if *browserMode {
		// Chromium speaks HTTP/2 over TLS only; h1 is TLS with HTTP/2 disabled.
		cfg.TLS, rc.TLS = true, true
	}
	// command runs Chromium (in the client namespace when the link is emulated).
	var command func(context.Context, string, ...string) *exec.Cmd
	var cert *x509.Certificate // the server's, for Chromium to trust
	up, down, err := lf.configs()
	if err != nil {
		return err
	}
	emulated := lf.set()

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	switch {
	case *rawURL != "":
		if emulated {
			return errors.New("--url and link options exclude each other: the link is emulated between namespaces shunt builds")
		}
		if *pacing {
			return errors.New("--pacing paces shunt's own page server, not one at --url")
		}
		u, err := url.Parse(*rawURL)
		if err != nil || u.Host == "" {
			return fmt.Errorf("--url %q: want SCHEME://HOST:PORT", *rawURL)
		}
		cfg.Addr, cfg.TLS = u.Host, u.Scheme == "https" || cfg.Proto == fetch.H3
		cfg.TLSConfig = &tls.Config{InsecureSkipVerify: *insecure}
		rc.Server, rc.TLS = *rawURL, cfg.TLS
	case emulated:
		n, err := testbed.NewSingle(ctx, testbed.PathSpec{Up: up, Down: down}, testbed.Options{Seed: *seed})
		if err != nil {
			return err
		}
		defer n.Close()
		srvNS, path := n.Servers[0], n.Paths[0]
		so := testbed.SockOpts{CC: replayCC}
		srv, err := startReplayServer(handler, cfg.TLS, net.JoinHostPort(path.ServerAddr.String(), fmt.Sprint(replayPort)),
			func(network, addr string) (net.Listener, error) { return srvNS.Listen(network, addr, so) }, srvNS.ListenPacket, smigSrv, *pacing)
		if err != nil {
			return err
		}
		defer srv.Close()
		trustServer(&cfg, srv)
		cert = serverLeaf(srv)
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return n.Client.DialContext(ctx, network, addr, so)
		}
		cfg.ListenUDP = func() (net.PacketConn, error) { return n.Client.ListenPacket("udp", ":0") }
		command = n.Client.Command
		rc.Server, rc.Up, rc.Down, rc.Seed, rc.TCPCC = "emulated", up.String(), down.String(), *seed, replayCC
	default:
		srv, err := startReplayServer(handler, cfg.TLS, "127.0.0.1:0", nil, nil, smigSrv, *pacing)
		if err != nil {
			return err
		}
		defer srv.Close()
		trustServer(&cfg, srv)
		cert = serverLeaf(srv)
		rc.Server = "loopback"
	}
	if bs != nil {
		return runChromium(ctx, bs, cfg, command, cert, rc, *jsonFile, stdout, stderr)
	}

	f, err := fetch.New(cfg)
	if err != nil {
		return err
	}
	r, err := replay.Run(ctx, p, f, replay.Options{Compute: *compute})
	if cerr := f.Close(); err == nil && cerr != nil {
		fmt.Fprintf(stderr, "closing connections: %v\n", cerr)
	}
	if err != nil {
		return err
	}
	fc := f.Config()
	rc.Label, rc.Conns, rc.Streams, rc.Schedule = fc.Label(), fc.Conns, fc.Streams, fc.Schedule
	if fc.Proto == fetch.H1 {
		rc.Streams = 0
	} else {
		rc.Conns = 0
	}
	fmt.Fprintf(stdout, "%s over %s (%s), %d connection(s), server %s\n", p.Name, rc.Label, f.Protocol(), f.Conns(), rc.Server)
	if cfg.SMig != nil {
		fmt.Fprintf(stdout, "SMig %s: %d response(s) migrated\n", *smigText, f.Migrated())
	}
	if err := replay.WriteWaterfall(stdout, r, *width); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "PLT %.1f ms\n", float64(r.PLT)/float64(time.Millisecond))
	if *jsonFile != "" {
		rec := replayRecord{Time: time.Now().UTC(), Config: rc, Protocol: f.Protocol(), Conns: f.Conns(), Result: r}
		return appendJSONLine(*jsonFile, rec)
	}
	return nil
}

// startReplayServer serves h (TCP, and HTTP/3 on UDP when it has TLS), with
// SMig on HTTP/2 when ss is not nil, pacing its TCP connections if asked.
func startReplayServer(h http.Handler, useTLS bool, addr string, listen func(string, string) (net.Listener, error), listenPacket func(string, string) (net.PacketConn, error), ss *smig.Server, pacing bool) (*site.Running, error) {
	return site.Serve(site.ServeConfig{Handler: h, Addr: addr, TLS: useTLS, H3: useTLS, CC: replayCC, Pacing: pacing,
		Listen: listen, ListenPacket: listenPacket, SMig: ss})
}

// trustServer points the client at srv and trusts its certificate only.
func trustServer(cfg *fetch.Config, srv *site.Running) {
	cfg.Addr = srv.Addr
	if srv.Cert != nil {
		roots := x509.NewCertPool()
		roots.AddCert(srv.Cert.Certificates[0].Leaf)
		cfg.TLSConfig = &tls.Config{RootCAs: roots}
	}
}

// sizesFrom says where the page's object sizes came from.
func sizesFrom(p *page.Page) string {
	from := ""
	for _, o := range p.Objects {
		switch {
		case from == "":
			from = o.SizeFrom
		case from != o.SizeFrom:
			return "mixed"
		}
	}
	return from
}

// set reports whether any link option was given.
func (lf *linkFlags) set() bool {
	for _, m := range []map[string]*string{lf.both, lf.up, lf.down} {
		for _, v := range m {
			if *v != "" {
				return true
			}
		}
	}
	return false
}

func appendJSONLine(file string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}
