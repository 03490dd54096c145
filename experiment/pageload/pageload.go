// Package pageload is the page-load experiment: a web page's dependency
// graph (package page) loaded by pReplay's walk (package replay) over N
// HTTP/1.1 connections, one HTTP/2 or one HTTP/3 connection (Replay, driver
// "replay"), or the page's generated site loaded by headless Chromium
// (Chromium, driver "chromium"), from shunt's page server in the network's
// server namespace. `shunt replay` and `shunt bench` both run it.
package pageload

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"strconv"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/fetch"
	"github.com/shunt-net/shunt/replay/site"
	"github.com/shunt-net/shunt/server"
	"github.com/shunt-net/shunt/smig"
)

// Config is the replay's options. Connections open during the load (cold),
// as pReplay's libcurl did, with cubic on every TCP socket.
type Config struct {
	Proto    string `param:"proto" enum:"h1,h2,h3" help:"h1 (N connections), h2 or h3 (one connection, N streams)"`
	Conns    int    `param:"conns" help:"HTTP/1.1 connections at most"`
	Streams  int    `param:"streams" help:"HTTP/2 and HTTP/3 concurrent streams at most"`
	Schedule string `param:"schedule" help:"how the server shares the h2/h3 connection: interleaved (default, as the paper's SCTP), sequential (RFC 9218's default) or browser (Chromium's urgencies by resource type)"`
	Pacing   bool   `param:"pacing" help:"the page server paces its TCP connections (Linux's internal pacing), as quic-go paces QUIC"`
	Compute  bool   `param:"compute" help:"run the graph's computations for their recorded time"`
	TLS      bool   `param:"tls" help:"TLS for h1 and h2 (h3 always has it); false: cleartext HTTP/1.1 and h2c"`
	SMig     string `param:"smig" help:"h2 with SMig: nomig | migsw[:BYTES] | migsp[:BYTES] | migcp[:BYTES]; a server policy runs in the server, migcp in the client"`
	// Issue 19: a load over every path of the network, one HTTP/2
	// connection per path (multipath.go).
	Policy    string `param:"policy" help:"h2 over every path, one connection each: a hints preset (urgent-fast, redundant-urgent, tail, ...) or rule file placing each request, or mph2 (every object split by MP-H2); empty: one connection"`
	Expensive string `param:"expensive" help:"with policy: the paths (NAME[,NAME]) whose bytes cost (cost 1; the others 0)"`
	Path      string `param:"path" help:"one connection bound to this path's address (a single-path baseline on a multipath network)"`
	MPTCP     bool   `param:"mptcp" help:"one h2 connection over a kernel MPTCP socket (first subflow on path, or the first path), MPTCP listener"`
	// Issue 19's server-side steering (steer.go).
	Steering string `param:"steering" help:"server: the page server places each response by policy and moves it by SMig to the client's connection on the chosen path; the client sends every request on path's connection and opens one on the other path"`
}

// DefaultConfig is the paper's multistreamed transport over TLS.
func DefaultConfig() Config {
	return Config{Proto: fetch.H2, Conns: fetch.DefaultConns, Streams: fetch.DefaultStreams, TLS: true}
}

// Validate checks the options together.
func (c Config) Validate() error {
	switch {
	case c.Conns < 1:
		return experiment.Errorf("params.conns", strconv.Itoa(c.Conns), "want at least 1")
	case c.Streams < 1:
		return experiment.Errorf("params.streams", strconv.Itoa(c.Streams), "want at least 1")
	case c.SMig != "" && c.Proto != fetch.H2:
		return experiment.Errorf("params.smig", c.SMig, "SMig needs proto h2")
	case (c.Policy != "" || c.MPTCP) && (c.Proto != fetch.H2 || c.SMig != ""):
		return experiment.Errorf("params.proto", c.Proto, "policy and mptcp need proto h2 without smig")
	case c.Policy != "" && (c.MPTCP || c.Path != "" && c.Steering == ""):
		return experiment.Errorf("params.policy", c.Policy, "a policy uses every path: no mptcp or path beside it")
	case c.Steering != "" && c.Steering != SteeringServer:
		return experiment.Errorf("params.steering", c.Steering, "want %s or nothing", SteeringServer)
	case c.Steering != "" && (c.Policy == "" || c.Policy == PolicyMPH2 || c.Path == ""):
		return experiment.Errorf("params.steering", c.Steering, "server-side steering needs a hints policy (policy) and the path of the requests' connection (path)")
	case c.Expensive != "" && c.Policy == "" && !c.MPTCP:
		return experiment.Errorf("params.expensive", c.Expensive, "costs matter only to a policy (and to MPTCP's byte shares)")
	}
	if _, err := c.policy(); err != nil {
		return &experiment.FieldError{Field: "params.policy", Value: c.Policy, Err: err}
	}
	if c.SMig != "" {
		if _, err := smig.ParsePolicy(c.SMig); err != nil {
			return &experiment.FieldError{Field: "params.smig", Value: c.SMig, Err: err}
		}
	}
	probe, err := c.fetchConfig()
	if err != nil {
		return err
	}
	if _, err := fetch.New(withProbeAddr(probe)); err != nil {
		return &experiment.FieldError{Field: "params", Err: err}
	}
	return nil
}

// FetchLabel names the transport as figures do (fetch.Config.Label:
// h1-6, h2-100-seq, ...).
func (c Config) FetchLabel() (string, error) {
	fc, err := c.fetchConfig()
	if err != nil {
		return "", err
	}
	f, err := fetch.New(withProbeAddr(fc))
	if err != nil {
		return "", err
	}
	return f.Config().Label(), nil
}

// withProbeAddr gives a configuration a placeholder address: the real one
// is known at Start.
func withProbeAddr(fc fetch.Config) fetch.Config {
	fc.Addr = "0.0.0.0:1"
	return fc
}

// fetchConfig is the client's configuration without an address.
func (c Config) fetchConfig() (fetch.Config, error) {
	fc := fetch.Config{Proto: c.Proto, Conns: c.Conns, Streams: c.Streams, Schedule: c.Schedule, TLS: c.TLS || c.Proto == fetch.H3}
	if c.SMig != "" {
		pol, err := smig.ParsePolicy(c.SMig)
		if err != nil {
			return fc, err
		}
		_, cli := pol.Split()
		fc.SMig = &cli
	}
	if c.Steering != "" {
		fc.SMig = &smig.Policy{} // the server steers; the client only follows
	}
	return fc, nil
}

// serverSMig is the page server's SMig (its policy if it is a server
// policy, else NoMig, which still serves a client's requests), or nil.
func (c Config) serverSMig() *smig.Server {
	if c.SMig == "" {
		return nil
	}
	pol, _ := smig.ParsePolicy(c.SMig) // checked by Validate
	srv, _ := pol.Split()
	return &smig.Server{Policy: srv}
}

// Replay is the experiment of driver "replay". Objects are pages by name: a
// Table IV page ("google", "mediafire") or a graph or HAR file.
var Replay = experiment.Kind[Config, *Session]{
	Name:        "replay",
	Default:     DefaultConfig,
	CheckObject: func(_ Config, o experiment.Object) error { _, err := LoadPage(o); return err },
	Start:       Start,
}

// LoadPage loads the page an object names.
func LoadPage(o experiment.Object) (*page.Page, error) {
	if o.Size != "" || o.Background != "" || o.Page != nil {
		return nil, &experiment.FieldError{Field: "objects." + o.Name, Err: errors.New("a page load takes a page by name only (no size, background or page)")}
	}
	file, err := site.PageFile(o.Name)
	if err != nil {
		return nil, &experiment.FieldError{Field: "objects.name", Value: o.Name, Err: err}
	}
	return page.Load(file)
}

// Session loads pages from one page server.
type Session struct {
	cfg   Config
	pages map[string]*page.Page
	net   experiment.Network
	addr  string      // the server's HOST:PORT
	tls   *tls.Config // client TLS: trusts the page server's certificate
	srv   *site.Running
	smig  *smig.Server // the page server's SMig, if any
	where string       // "emulated", "loopback" or the URL of a server elsewhere
}

// Start runs a page server with env's objects' pages in the network's first
// server namespace, on env.Port (0: any free port).
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	s := &Session{cfg: c, pages: map[string]*page.Page{}, net: env.Net, where: where(env.Net)}
	var pages []*page.Page
	for _, o := range env.Objects {
		pg, err := LoadPage(o)
		if err != nil {
			return nil, err
		}
		for _, w := range pg.Warnings {
			fmt.Fprintf(env.Log, "page %s: %s\n", pg.Source, w)
		}
		s.pages[o.Name] = pg
		pages = append(pages, pg)
	}
	h, err := site.NewHandler(pages...)
	if err != nil {
		return nil, err
	}
	if err := c.checkPaths(env.Net.Paths()); err != nil {
		return nil, err
	}
	s.smig = c.serverSMig()
	if c.Steering != "" {
		st, err := c.steerer(env.Net.Paths(), pages)
		if err != nil {
			return nil, err
		}
		s.smig = &smig.Server{Steer: st.Steer, SteerWait: server.SteerWait}
	}
	s.srv, err = serveSite(env, c.MPTCP, site.ServeConfig{Handler: h, TLS: c.TLS || c.Proto == fetch.H3, H3: c.Proto == fetch.H3, Pacing: c.Pacing, SMig: s.smig})
	if err != nil {
		return nil, fmt.Errorf("page server: %w", err)
	}
	s.addr, s.tls = s.srv.Addr, trust(s.srv)
	return s, nil
}

// Remote loads pages from a page server elsewhere (`shunt serve --page`)
// at addr, over this machine's network.
func Remote(c Config, addr string, tlsConf *tls.Config, url string, pages ...*page.Page) *Session {
	s := &Session{cfg: c, pages: map[string]*page.Page{}, addr: addr, tls: tlsConf, where: url}
	for _, pg := range pages {
		s.pages[pg.Name] = pg
	}
	return s
}

func where(nw experiment.Network) string {
	if len(nw.Paths()) > 0 && nw.Paths()[0].ClientIface == "lo" {
		return "loopback"
	}
	return "emulated"
}

// serveSite runs a page server in the first server namespace on env.Port,
// cubic on every socket (an MPTCP listener with mptcp), logging to env.Log.
func serveSite(env *experiment.Env, mptcp bool, cfg site.ServeConfig) (*site.Running, error) {
	srvHost := env.Net.Servers()[0]
	so := experiment.SockOpts{CC: origin.CC, MPTCP: mptcp}
	cfg.Addr, cfg.CC = origin.Addr(env.Net, env.Port), origin.CC
	cfg.Listen = func(network, addr string) (net.Listener, error) { return srvHost.Listen(network, addr, so) }
	cfg.ListenPacket = func(network, addr string) (net.PacketConn, error) { return listenPacketIn(srvHost, network, addr) }
	cfg.ErrorLog = log.New(env.Log, "shunt server: ", log.LstdFlags)
	return site.Serve(cfg)
}

// trust is a client TLS configuration that trusts the server's certificate
// only (nil without TLS).
func trust(srv *site.Running) *tls.Config {
	if srv.Cert == nil {
		return nil
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Cert.Certificates[0].Leaf)
	return &tls.Config{RootCAs: roots}
}

// listenPacketIn opens a UDP socket inside h's namespace.
func listenPacketIn(h experiment.Host, network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := h.Do(func() error {
		var err error
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	return pc, err
}

// Info describes the session's peers.
func (s *Session) Info() map[string]string {
	info := map[string]string{"client": "shunt replay/fetch (" + s.cfg.Proto + ")", "server": "shunt (replay/site)", "server_cc": origin.CC + " (per socket)",
		"server_tcp_pacing": strconv.FormatBool(s.cfg.Pacing), "where": s.where}
	if s.srv == nil {
		info["server"], info["server_cc"] = s.where, "unknown (a server elsewhere)"
	}
	if s.cfg.SMig != "" {
		info["smig_policy"] = s.cfg.SMig
	}
	s.multipathInfo(info)
	return info
}

// Close stops the page server.
func (s *Session) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// Run loads the page r.Object names, every object verified. The whole load
// (every object's request, first byte and last byte) rides in the result's
// Info["load"] as JSON (replay.Result), for waterfalls.
func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	pg, ok := s.pages[r.Object.Name]
	if !ok {
		return experiment.Result{}, fmt.Errorf("page %s: not served by this session", r.Object.Name)
	}
	if s.cfg.Policy != "" && s.cfg.Steering == "" {
		return s.runMultipath(ctx, pg)
	}
	var mptcp origin.PathConns
	steered := newPathCounts(s.cfg.Steering != "")
	cfg, err := s.cfg.fetchConfig()
	if err != nil {
		return experiment.Result{}, err
	}
	cfg.Addr, cfg.Page, cfg.TLSConfig = s.addr, pg.Name, s.tls
	so := experiment.SockOpts{CC: origin.CC, MPTCP: s.cfg.MPTCP}
	if s.net != nil {
		so.Source = s.cfg.source(s.net.Paths())
		client := s.net.Client()
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := client.DialContext(ctx, network, addr, so)
			if err == nil && s.cfg.MPTCP {
				mptcp.Add(c, true)
			}
			return steered.count(s.cfg.Path, c), err
		}
		cfg.PoolDial = steered.poolDial(s.cfg, s.net)
		cfg.ListenUDP = func() (net.PacketConn, error) { return listenPacketIn(client, "udp", ":0") }
	} else {
		so = experiment.SockOpts{} // a server elsewhere: the system's defaults
	}
	f, err := fetch.New(cfg)
	if err != nil {
		return experiment.Result{}, err
	}
	var movedBefore int64
	if s.smig != nil {
		movedBefore = s.smig.Stats().Migrations.Load()
	}
	res, err := replay.Run(ctx, pg, f, replay.Options{Compute: s.cfg.Compute})
	var perPath map[string]int64
	if err == nil && s.cfg.MPTCP {
		perPath, err = mptcp.Received(s.net.Paths()) // before Close ends the subflows
	}
	if steered != nil {
		perPath = steered.received()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return experiment.Result{}, err
	}
	load, err := json.Marshal(res)
	if err != nil {
		return experiment.Result{}, err
	}
	metrics := pageMetrics(pg, res)
	counts := map[string]float64{"bytes": float64(res.Bytes), "objects": float64(len(res.Objects)), "connections": float64(f.Conns()), "smig_migrated": float64(f.Migrated())}
	if s.smig != nil {
		counts["smig_server_moved"] = float64(s.smig.Stats().Migrations.Load() - movedBefore)
	}
	pathShares(s.cfg.expensive(), perPath, metrics, counts)
	return experiment.Result{
		Metrics: metrics,
		Counts:  counts,
		Info: map[string]string{"http": f.Protocol(), "transport": f.Config().Label(), "schedule": f.Config().Schedule, "load": string(load), "sizes_from": sizesFrom(pg),
			UrgentInfo: urgentObjects(pg)},
		Sock: so,
	}, nil
}

// LoadOf is the replay.Result a run's Info (or its record's) carries.
func LoadOf(info map[string]string) (*replay.Result, error) {
	var r replay.Result
	if err := json.Unmarshal([]byte(info["load"]), &r); err != nil {
		return nil, fmt.Errorf("the run's load: %w", err)
	}
	return &r, nil
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
