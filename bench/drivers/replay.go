package drivers

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

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/fetch"
	"github.com/shunt-net/shunt/replay/site"
	"github.com/shunt-net/shunt/smig"
)

func init() {
	bench.Drivers.Register("replay", replayDriver{})
}

// replayDriver loads a page's dependency graph (pReplay's walk) from shunt's
// server holding the page's objects.
//
// Params:
//
//	proto    h1 | h2 | h3
//	conns    HTTP/1.1 connections at most (default 6)
//	streams  HTTP/2 and HTTP/3 concurrent streams at most (default 100)
//	schedule interleaved | sequential | browser (h2, h3; default interleaved): how the
//	         server shares the connection between responses (fetch.Schedule)
//	pacing   true | false (default false): the server paces its TCP sockets
//	         (Linux's internal pacing), as quic-go paces QUIC
//	compute  true | false (default false): run the graph's computations
//	tls      true | false (default true; h3 always has it)
//	smig     nomig | migsw[:BYTES] | migsp[:BYTES] | migcp[:BYTES] (h2 only):
//	         HTTP/2 with SMig, a server policy in the server, migcp in the client
//
// Objects: a page by name: a Table IV page ("google", "mediafire") or a
// graph or HAR file. Connections open during the load (cold), as pReplay's
// libcurl did, with cubic on every TCP socket.
type replayDriver struct{}

type replayParams struct {
	cfg     fetch.Config
	compute bool
	pacing  bool
	smig    smigParams
}

func parseReplayParams(p bench.Protocol) (replayParams, error) {
	rp := replayParams{cfg: fetch.Config{Proto: p.Params["proto"], Schedule: p.Params["schedule"], TLS: true}}
	for k := range p.Params {
		switch k {
		case "proto", "conns", "streams", "schedule", "pacing", "compute", "tls", "smig":
		default:
			return rp, &bench.FieldError{Field: "params." + k, Err: errors.New("unknown parameter of driver replay (want proto, conns, streams, schedule, pacing, compute, tls, smig)")}
		}
	}
	ints := []struct {
		key string
		dst *int
	}{{"conns", &rp.cfg.Conns}, {"streams", &rp.cfg.Streams}}
	for _, i := range ints {
		if v, ok := p.Params[i.key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return rp, &bench.FieldError{Field: "params." + i.key, Value: v, Err: errors.New("want a positive integer")}
			}
			*i.dst = n
		}
	}
	bools := []struct {
		key string
		dst *bool
	}{{"compute", &rp.compute}, {"pacing", &rp.pacing}, {"tls", &rp.cfg.TLS}}
	for _, b := range bools {
		if err := boolParam(p, b.key, b.dst); err != nil {
			return rp, err
		}
	}
	if v, ok := p.Params["smig"]; ok {
		pol, err := smig.ParsePolicy(v)
		if err != nil {
			return rp, &bench.FieldError{Field: "params.smig", Value: v, Err: err}
		}
		if rp.cfg.Proto != fetch.H2 {
			return rp, &bench.FieldError{Field: "params.smig", Value: v, Err: errors.New("SMig needs proto h2")}
		}
		rp.smig = smigParams{on: true, policy: pol}
		cp := rp.smig.clientPolicy()
		rp.cfg.SMig = &cp
	}
	// Validate with a placeholder address: the real one is known at Start.
	probe := rp.cfg
	probe.Addr = "0.0.0.0:1"
	f, err := fetch.New(probe)
	if err != nil {
		return rp, &bench.FieldError{Field: "params", Err: err}
	}
	rp.cfg.Schedule = f.Config().Schedule // the default, named in Info
	return rp, nil
}

func loadReplayPage(o bench.Object) (*page.Page, error) {
	if o.Size != "" || o.Background != "" || o.Page != nil {
		return nil, &bench.FieldError{Field: "objects." + o.Name, Err: errors.New("driver replay takes a page by name only (no size, background or page)")}
	}
	file, err := site.PageFile(o.Name)
	if err != nil {
		return nil, &bench.FieldError{Field: "objects.name", Value: o.Name, Err: err}
	}
	return page.Load(file)
}

func (replayDriver) Check(p bench.Protocol, o bench.Object) error {
	if _, err := parseReplayParams(p); err != nil {
		return err
	}
	_, err := loadReplayPage(o)
	return err
}

func (replayDriver) Start(ctx context.Context, env *bench.Env, p bench.Protocol) (bench.Session, error) {
	rp, err := parseReplayParams(p)
	if err != nil {
		return nil, err
	}
	s := &replaySession{p: rp, pages: map[string]*page.Page{}, env: env}
	var pages []*page.Page
	for _, o := range env.Scenario.Objects {
		pg, err := loadReplayPage(o)
		if err != nil {
			return nil, err
		}
		s.pages[o.Name] = pg
		pages = append(pages, pg)
	}
	h, err := site.NewHandler(pages...)
	if err != nil {
		return nil, err
	}
	s.srv, err = serveSite(env, p, site.ServeConfig{Handler: h, TLS: rp.cfg.TLS, H3: rp.cfg.Proto == fetch.H3, Pacing: rp.pacing,
		SMig: rp.smig.serverExtras().smig})
	if err != nil {
		return nil, fmt.Errorf("page server: %w", err)
	}
	return s, nil
}

// serveSite runs a page server for protocol p in the first server
// namespace: on p's port, cubic on every socket, logging to the run log.
// cfg says what it serves and speaks.
func serveSite(env *bench.Env, p bench.Protocol, cfg site.ServeConfig) (*site.Running, error) {
	srvHost := env.Net.Servers()[0]
	so := bench.SockOpts{CC: serverCC}
	cfg.Addr, cfg.CC = hostPort(env.Net, protocolPort(env, p)), serverCC
	cfg.Listen = func(network, addr string) (net.Listener, error) { return srvHost.Listen(network, addr, so) }
	cfg.ListenPacket = func(network, addr string) (net.PacketConn, error) { return listenPacketIn(srvHost, network, addr) }
	cfg.ErrorLog = log.New(env.Log, "shunt server: ", log.LstdFlags)
	return site.Serve(cfg)
}

// listenPacketIn opens a UDP socket inside h's namespace.
func listenPacketIn(h bench.Host, network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := h.Do(func() error {
		var err error
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	return pc, err
}

type replaySession struct {
	p     replayParams
	pages map[string]*page.Page
	env   *bench.Env
	srv   *site.Running
}

func (s *replaySession) Info() map[string]string {
	info := map[string]string{"client": "shunt replay/fetch (" + s.p.cfg.Proto + ")", "server": "shunt (replay/site)", "server_cc": serverCC + " (per socket)",
		"server_tcp_pacing": strconv.FormatBool(s.p.pacing)}
	if s.p.cfg.Schedule != "" {
		info["schedule"] = s.p.cfg.Schedule
	}
	for k, v := range s.p.smig.info() {
		info[k] = v
	}
	return info
}

func (s *replaySession) Close() error { return s.srv.Close() }

func (s *replaySession) Run(ctx context.Context, r *bench.Run) (bench.Result, error) {
	pg := s.pages[r.Object.Name]
	cfg := s.p.cfg
	cfg.Addr, cfg.Page = s.srv.Addr, pg.Name
	if s.srv.Cert != nil {
		roots := x509.NewCertPool()
		roots.AddCert(s.srv.Cert.Certificates[0].Leaf)
		cfg.TLSConfig = &tls.Config{RootCAs: roots}
	}
	client := s.env.Net.Client()
	so := bench.SockOpts{CC: serverCC}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return client.DialContext(ctx, network, addr, so)
	}
	cfg.ListenUDP = func() (net.PacketConn, error) { return listenPacketIn(client, "udp", ":0") }
	f, err := fetch.New(cfg)
	if err != nil {
		return bench.Result{}, err
	}
	res, err := replay.Run(ctx, pg, f, replay.Options{Compute: s.p.compute})
	err = errors.Join(err, f.Close())
	if err != nil {
		return bench.Result{}, err
	}
	// The whole load (every object's request, first byte and last byte)
	// rides in the run's JSON line, for waterfalls.
	load, err := json.Marshal(res)
	if err != nil {
		return bench.Result{}, err
	}
	return bench.Result{
		Metrics: map[string]float64{"plt": res.PLT.Seconds()},
		Counts:  map[string]float64{"bytes": float64(res.Bytes), "objects": float64(len(res.Objects)), "connections": float64(f.Conns()), "smig_migrated": float64(f.Migrated())},
		Info:    map[string]string{"http": f.Protocol(), "transport": f.Config().Label(), "load": string(load)},
		Sock:    so,
	}, nil
}
