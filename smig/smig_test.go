package smig

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"golang.org/x/net/http2"
)

// testServer serves content's /gen objects over h2c on loopback with SMig.
type testServer struct {
	s    *Server
	url  string
	logs chan string
}

func startServer(t *testing.T, p Policy, enabled bool) *testServer {
	t.Helper()
	return startServerTLS(t, p, enabled, nil)
}

// startServerTLS is startServer over TLS when tlsCfg is not nil (the
// server's TLSConfig is applied to it, as shunt serve does).
// mw, if given, wraps the content handler (under the SMig policy).
func startServerTLS(t *testing.T, p Policy, enabled bool, tlsCfg *tls.Config, mw ...func(http.Handler) http.Handler) *testServer {
	t.Helper()
	return startWith(t, &Server{Policy: p}, enabled, tlsCfg, mw...)
}

// startWith is startServerTLS for a server set up by the caller (its Logf
// is replaced).
func startWith(t *testing.T, s *Server, enabled bool, tlsCfg *tls.Config, mw ...func(http.Handler) http.Handler) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cont, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	var ch http.Handler = cont
	for _, m := range mw {
		ch = m(ch)
	}
	ts := &testServer{url: "http://" + ln.Addr().String(), logs: make(chan string, 16)}
	ts.s = s
	s.Logf = func(f string, a ...any) {
		select {
		case ts.logs <- strings.TrimSpace(sprintf(f, a...)):
		default:
		}
	}
	srv := &h2.Server{Handler: ch}
	if enabled {
		srv.Config = ts.s.Config(h2.Config{})
		srv.Handler = ts.s.Wrap(ch)
	}
	if tlsCfg != nil {
		ts.url = "https://" + ln.Addr().String()
		if enabled {
			tlsCfg = ts.s.TLSConfig(tlsCfg)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveConn(ctx, srv, nc, tlsCfg)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		sctx, c2 := context.WithTimeout(context.Background(), 2*time.Second)
		srv.Shutdown(sctx)
		c2()
		cancel()
		wg.Wait()
	})
	return ts
}

// fetch downloads a /gen object and checks every byte.
func fetch(t *testing.T, rt http.RoundTripper, url string, size int64) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	res, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	v := content.NewVerifier(0)
	n, err := io.Copy(v, res.Body)
	if err != nil || n != size {
		t.Fatalf("%s: read %d of %d bytes: %v", url, n, size, err)
	}
	return res
}

// serveConn serves one accepted test connection, after a TLS handshake
// when tlsCfg is set (a failed one closes it).
func serveConn(ctx context.Context, srv *h2.Server, nc net.Conn, tlsCfg *tls.Config) {
	if tlsCfg != nil {
		tc := tls.Server(nc, tlsCfg)
		if tc.HandshakeContext(ctx) != nil {
			nc.Close()
			return
		}
		nc = tc
	}
	srv.ServeConn(ctx, nc, nil)
}

// waitBound waits until the client's pool has a bound idle connection, so
// the test exercises a given scenario rather than a race.
func waitBound(t *testing.T, tr *Transport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.WaitIdleBound(ctx); err != nil {
		t.Fatalf("no pooled connection was bound within 5 s: %v", err)
	}
}

// wire records what travels in the clear on a client's connections (set
// its Config.Trace to Trace before use): the CONNECTION_ID frames' CIDs,
// primary first, and the binding token, as an on-path observer or a leak
// would give them to an attacker.
type wire struct {
	mu    sync.Mutex
	token Token
	cids  []CID
}

func (w *wire) Trace(dir h2.Direction, f http2.Frame) {
	uf, ok := f.(*http2.UnknownFrame)
	if !ok || dir != h2.Recv || uf.Type != FrameConnectionID {
		return
	}
	cf, err := ParseConnectionID(uf.Flags, uf.StreamID, uf.Payload())
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cids = append(w.cids, cf.CID)
	if !cf.Token.IsZero() {
		w.token = cf.Token
	}
}

func (w *wire) seen() (Token, []CID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.token, slices.Clone(w.cids)
}

const bigSize = 8 << 20

func TestMigrationScenarios(t *testing.T) {
	for _, tc := range []struct {
		name       string
		server     Policy
		client     Policy
		idleFirst  bool // open and bind the pool before the large request
		clientAsks int64
	}{
		{"server-idle MigSW", Policy{Kind: MigSW, Threshold: 1 << 20}, Policy{}, true, 0},
		{"server-noidle MigSW", Policy{Kind: MigSW, Threshold: 1 << 20}, Policy{}, false, 0},
		{"server-idle MigSP", Policy{Kind: MigSP, AfterBytes: 100 << 10}, Policy{}, true, 0},
		{"client-idle MigCP", Policy{}, Policy{Kind: MigCP, Threshold: 1 << 20}, true, 1},
		{"client-noidle MigCP", Policy{}, Policy{Kind: MigCP, Threshold: 1 << 20}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.server, true)
			tr := &Transport{AllowHTTP: true, Policy: tc.client}
			if !tc.idleFirst {
				tr.Pool.OnDemand = true // no idle connection when the large request starts
			}
			defer tr.CloseIdleConnections()
			fetch(t, tr, ts.url+"/gen/10240", 10<<10)
			if tc.idleFirst {
				waitBound(t, tr)
			}
			fetch(t, tr, ts.url+"/gen/8388608", bigSize)
			if got := ts.s.Stats().Migrations.Load(); got != 1 {
				t.Fatalf("server migrated %d streams, want 1 (logs: %v)", got, drain(ts.logs))
			}
			if got := tr.Stats().Migrated.Load(); got != 1 {
				t.Fatalf("client linked %d migrated streams, want 1", got)
			}
			if got := ts.s.Stats().ClientAsked.Load(); got != tc.clientAsks {
				t.Fatalf("client-initiated migrations %d, want %d", got, tc.clientAsks)
			}
			if moved := ts.s.Stats().MovedBytes.Load(); moved <= 0 || moved > bigSize {
				t.Fatalf("moved %d bytes of %d", moved, bigSize)
			}
			// The primary still works after the migration.
			fetch(t, tr, ts.url+"/gen/10240", 10<<10)
		})
	}
}

func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

func TestNoMigPlainHTTP2(t *testing.T) {
	ts := startServer(t, Policy{}, true)
	tr := &Transport{AllowHTTP: true}
	defer tr.CloseIdleConnections()
	fetch(t, tr, ts.url+"/gen/2097152", 2<<20)
	if ts.s.Stats().Migrations.Load() != 0 {
		t.Fatal("NoMig migrated")
	}
	// Against a server without SMig, the client is plain HTTP/2 on one
	// connection, even with a policy.
	plain := startServer(t, Policy{}, false)
	tr2 := &Transport{AllowHTTP: true, Policy: Policy{Kind: MigCP, Threshold: 1}}
	defer tr2.CloseIdleConnections()
	// SMig is decided on the server's SETTINGS, which came before the
	// response: nothing more is opened or asked after it.
	fetch(t, tr2, plain.url+"/gen/2097152", 2<<20)
	if n := tr2.Conns(); n != 1 || tr2.Stats().Asked.Load() != 0 {
		t.Fatalf("against a plain server: %d conns, %d asks", n, tr2.Stats().Asked.Load())
	}
	// A plain h2 client against the SMig server with MigSW never migrates.
	sw := startServer(t, Policy{Kind: MigSW, Threshold: 1}, true)
	h2t := &h2.Transport{AllowHTTP: true}
	defer h2t.CloseIdleConnections()
	fetch(t, h2t, sw.url+"/gen/2097152", 2<<20)
	if sw.s.Stats().Migrations.Load() != 0 || sw.s.Stats().ExtraFrameOut.Load() != 0 {
		t.Fatal("SMig frames sent to a peer that did not announce SMig")
	}
}

// attacker is a second client speaking SMig by hand on one connection.
func attacker(t *testing.T, url string, frames chan<- Migration, acks chan<- ConnectionID) *h2.Transport {
	return &h2.Transport{AllowHTTP: true, Config: h2.Config{
		ExtraSettings: []http2.Setting{{ID: SettingSMig, Val: Version}},
		OnExtensionFrame: func(c *h2.Conn, f *http2.UnknownFrame) {
			switch f.Type {
			case FrameMigration:
				if m, err := ParseMigration(f.Flags, f.StreamID, f.Payload()); err == nil {
					frames <- m
				}
			case FrameConnectionID:
				if cf, err := ParseConnectionID(f.Flags, f.StreamID, f.Payload()); err == nil && cf.Ack() {
					acks <- cf
				}
			}
		},
	}}
}

func TestForeignAndGuessedIDsRefused(t *testing.T) {
	ts := startServer(t, Policy{}, true)
	var w wire
	victim := &Transport{AllowHTTP: true, Config: h2.Config{Trace: w.Trace}}
	defer victim.CloseIdleConnections()
	fetch(t, victim, ts.url+"/gen/10240", 10<<10)
	waitBound(t, victim)
	_, victimCIDs := w.seen()
	if len(victimCIDs) < 2 {
		t.Fatalf("victim's connection ids on the wire: %v, want the primary's and a pooled one's", victimCIDs)
	}

	frames := make(chan Migration, 16)
	acks := make(chan ConnectionID, 4)
	at := attacker(t, ts.url, frames, acks)
	defer at.CloseIdleConnections()
	for i, cid := range append(victimCIDs, newCID()) {
		req, _ := http.NewRequest("GET", ts.url+"/gen/4194304", nil)
		res, err := at.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		st := h2.StreamOf(res)
		st.Conn().WriteExtensionFrame(FrameMigration, 0, st.ID(), Migration{CID: cid}.Append(nil))
		// Replaying a victim's token guess must not bind either.
		st.Conn().WriteExtensionFrame(FrameConnectionID, 0, 0, ConnectionID{Token: newToken()}.Append(nil))
		select {
		case m := <-frames:
			if !m.Ack() || m.EndStream() || m.StreamID != st.ID() || m.CID != cid {
				t.Fatalf("attempt %d: want a refusal (ACK without END_STREAM), got %+v", i, m)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("attempt %d: no refusal", i)
		}
		v := content.NewVerifier(0)
		if n, err := io.Copy(v, res.Body); err != nil || n != 4<<20 {
			t.Fatalf("attempt %d: refused stream did not continue on its connection: %d bytes, %v", i, n, err)
		}
		res.Body.Close()
	}
	select {
	case a := <-acks:
		t.Fatalf("guessed token was accepted: %+v", a)
	default:
	}
	if got, want := ts.s.Stats().Refused.Load(), int64(len(victimCIDs)+1); got != want || ts.s.Stats().Migrations.Load() != 0 {
		t.Fatalf("refused %d (want %d), migrated %d", got, want, ts.s.Stats().Migrations.Load())
	}
	logs := strings.Join(drain(ts.logs), "\n")
	if !strings.Contains(logs, "another client") || !strings.Contains(logs, "unknown connection id") {
		t.Fatalf("refusals not explained in logs:\n%s", logs)
	}
}
