package smig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/server"
)

func TestLineageSameClient(t *testing.T) {
	a, b := lineageID{1}, lineageID{2}
	for _, tc := range []struct {
		l, of lineage
		want  error
	}{
		{lineage{kind: cleartext}, lineage{kind: cleartext}, nil},
		{lineage{tlsTagged, a}, lineage{tlsTagged, a}, nil},
		{lineage{tlsTagged, a}, lineage{tlsTagged, b}, errLineageMismatch},
		{lineage{kind: cleartext}, lineage{tlsTagged, a}, errLineageMixed},
		{lineage{tlsTagged, a}, lineage{kind: cleartext}, errLineageMixed},
		{lineage{kind: tlsUnknown}, lineage{kind: tlsUnknown}, errLineageUnknown},
		{lineage{tlsTagged, a}, lineage{kind: tlsUnknown}, errLineageUnknown},
	} {
		if got := tc.l.sameClient(tc.of); got != tc.want {
			t.Errorf("%+v joining %+v: %v, want %v", tc.l, tc.of, got, tc.want)
		}
	}
}

func TestHandshakeLineageResolve(t *testing.T) {
	tagged := func(id lineageID) *tls.SessionState {
		return &tls.SessionState{Extra: [][]byte{[]byte("other layer"), append(append([]byte(nil), lineageTag...), id[:]...)}}
	}
	h := &handshakeLineage{fresh: lineageID{9}}
	if got := h.resolve(true); got != h.fresh {
		t.Fatalf("resumed without an offered ticket: %v, want the fresh lineage", got)
	}
	h.offer(tagged(lineageID{1}))
	h.offer(tagged(lineageID{2})) // crypto/tls accepts the last ticket it unwraps
	if got := h.resolve(false); got != h.fresh {
		t.Fatalf("full handshake after offers: %v, want the fresh lineage", got)
	}
	if got := h.resolve(true); got != (lineageID{2}) {
		t.Fatalf("resumed: %v, want the last offered lineage", got)
	}
	h.offer(&tls.SessionState{Extra: [][]byte{append(append([]byte(nil), lineageTag...), 1, 2)}})
	if got := h.resolve(true); got != h.fresh {
		t.Fatalf("resumed an untagged (malformed tag) session: %v, want the fresh lineage", got)
	}
}

// tlsPair returns a server configuration with a self-signed certificate
// and a client configuration trusting it, both capped at maxVersion.
func tlsPair(t *testing.T, maxVersion uint16) (srv, cli *tls.Config) {
	t.Helper()
	cert, err := server.SelfSignedCert(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}, MaxVersion: maxVersion},
		&tls.Config{RootCAs: roots, MaxVersion: maxVersion}
}

// lineagesOf returns the lineages of the server's SMig connections.
func lineagesOf(s *Server) []lineage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []lineage
	for _, sc := range s.byCID {
		out = append(out, sc.lineage)
	}
	return out
}

func TestTLSLineageMigration(t *testing.T) {
	for _, v := range []struct {
		name    string
		version uint16
	}{{"TLS1.3", tls.VersionTLS13}, {"TLS1.2", tls.VersionTLS12}} {
		for _, tc := range []struct {
			name           string
			server, client Policy
			onDemand       bool
			size           int64 // large enough to outlast opening a connection when onDemand
		}{
			{"MigSW idle", Policy{Kind: MigSW, Threshold: 1 << 20}, Policy{}, false, 2 << 20},
			{"MigCP noidle", Policy{}, Policy{Kind: MigCP, Threshold: 1 << 20}, true, bigSize},
		} {
			t.Run(v.name+" "+tc.name, func(t *testing.T) {
				srvCfg, cliCfg := tlsPair(t, v.version)
				ts := startServerTLS(t, tc.server, true, srvCfg)
				tr := &Transport{TLSClientConfig: cliCfg, Policy: tc.client, Pool: PoolConfig{OnDemand: tc.onDemand}}
				defer tr.CloseIdleConnections()
				fetch(t, tr, ts.url+"/gen/10240", 10<<10)
				if !tc.onDemand {
					waitBound(t, tr)
				}
				fetch(t, tr, ts.url+"/gen/"+strconv.FormatInt(tc.size, 10), tc.size)
				if got := ts.s.Stats().Migrations.Load(); got != 1 || tr.Stats().Migrated.Load() != 1 {
					t.Fatalf("server migrated %d, client linked %d, want 1 each (logs: %v)", got, tr.Stats().Migrated.Load(), drain(ts.logs))
				}
				if n := ts.s.Stats().BindRefused.Load(); n != 0 {
					t.Fatalf("%d bindings refused for the client's own connections: %v", n, drain(ts.logs))
				}
				ls := lineagesOf(ts.s)
				if len(ls) < 2 {
					t.Fatalf("%d SMig connections, want the primary and a pooled one", len(ls))
				}
				for _, l := range ls {
					if l.kind != tlsTagged || l.id != ls[0].id {
						t.Fatalf("connections of one client in different lineages: %+v", ls)
					}
				}
				fetch(t, tr, ts.url+"/gen/10240", 10<<10)
			})
		}
	}
}

// waitCount waits until c reaches want, for at most 5 s.
func waitCount(t *testing.T, what string, c func() int64, want int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c() >= want {
			return
		}
	}
	t.Fatalf("%s: %d within 5 s, want %d", what, c(), want)
}

// A second client that learnt the victim's binding token (it leaked, or
// the attacker guessed it) but holds none of the victim's TLS sessions
// cannot join the victim's binding: neither with a full handshake nor by
// resuming a session of its own.
func TestTLSForeignTokenRefused(t *testing.T) {
	srvCfg, cliCfg := tlsPair(t, 0)
	ts := startServerTLS(t, Policy{}, true, srvCfg)
	var w wire
	victim := &Transport{TLSClientConfig: cliCfg, Policy: Policy{Kind: MigCP, Threshold: 1 << 20}, Config: h2.Config{Trace: w.Trace}}
	defer victim.CloseIdleConnections()
	fetch(t, victim, ts.url+"/gen/10240", 10<<10)
	waitBound(t, victim)
	token, cids := w.seen()
	if token.IsZero() || len(cids) < 2 {
		t.Fatalf("victim's token %v and connection ids %v on the wire, want both", token, cids)
	}
	pooledCID := cids[len(cids)-1]

	frames := make(chan Migration, 16)
	acks := make(chan ConnectionID, 4)
	cache := tls.NewLRUClientSessionCache(4)
	for i := range 2 {
		at := attacker(t, ts.url, frames, acks)
		at.TLSClientConfig = cliCfg.Clone()
		at.TLSClientConfig.ClientSessionCache = cache
		defer at.CloseIdleConnections()
		req, _ := http.NewRequest("GET", ts.url+"/gen/2097152", nil)
		res, err := at.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if resumed := res.TLS != nil && res.TLS.DidResume; resumed != (i == 1) {
			t.Fatalf("attempt %d: attacker resumed its own session: %v, want %v", i, resumed, i == 1)
		}
		st := h2.StreamOf(res)
		st.Conn().WriteExtensionFrame(FrameConnectionID, 0, 0, ConnectionID{Token: token}.Append(nil))
		waitCount(t, "bindings refused", ts.s.Stats().BindRefused.Load, int64(i+1))
		// Not bound, so the victim's connection is another client's.
		st.Conn().WriteExtensionFrame(FrameMigration, 0, st.ID(), Migration{CID: pooledCID}.Append(nil))
		select {
		case m := <-frames:
			if !m.Ack() || m.EndStream() || m.StreamID != st.ID() {
				t.Fatalf("attempt %d: want a refusal, got %+v", i, m)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("attempt %d: no refusal", i)
		}
		v := content.NewVerifier(0)
		if n, err := io.Copy(v, res.Body); err != nil || n != 2<<20 {
			t.Fatalf("attempt %d: attacker's own stream: %d bytes, %v", i, n, err)
		}
		res.Body.Close()
	}
	select {
	case a := <-acks:
		t.Fatalf("the victim's token bound a connection of another TLS session: %+v", a)
	default:
	}
	logs := strings.Join(drain(ts.logs), "\n")
	if !strings.Contains(logs, errLineageMismatch.Error()) {
		t.Fatalf("refused binding not explained in logs:\n%s", logs)
	}
	// The victim's streams still work and still migrate.
	fetch(t, victim, ts.url+"/gen/2097152", 2<<20)
	if ts.s.Stats().Migrations.Load() != 1 || victim.Stats().Migrated.Load() != 1 || victim.Stats().BadFrames.Load() != 0 {
		t.Fatalf("victim after the attack: server migrated %d, client linked %d, bad frames %d",
			ts.s.Stats().Migrations.Load(), victim.Stats().Migrated.Load(), victim.Stats().BadFrames.Load())
	}
}

// A pooled connection resumes the primary's session: it waits for the
// primary's ticket rather than making a full handshake the server would
// refuse, and fails clearly when the server does not resume.
func TestPooledDialResumesPrimary(t *testing.T) {
	srvCfg, cliCfg := tlsPair(t, 0)
	ts := startServerTLS(t, Policy{}, true, srvCfg)
	other := startServerTLS(t, Policy{}, true, srvCfg.Clone()) // own ticket keys
	tr := &Transport{TLSClientConfig: cliCfg, Pool: PoolConfig{OnDemand: true}}
	defer tr.CloseIdleConnections()
	tr.init()
	addr := strings.TrimPrefix(ts.url, "https://")

	early := &origin{addr: addr, scheme: "https", sessions: newSessionCache(nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := tr.dialNet(ctx, early, 1)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pooled dial before the primary's ticket: %v, want to wait until the deadline", err)
	}

	fetch(t, tr, ts.url+"/gen/10240", 10<<10)
	fetch(t, tr, other.url+"/gen/10240", 10<<10)
	tr.mu.Lock()
	o, oOther := tr.origins["https://"+addr], tr.origins[other.url]
	tr.mu.Unlock()
	waitTicket(t, o)
	nc, err := tr.dialNet(context.Background(), o, 1)
	if err != nil {
		t.Fatalf("pooled dial after the primary's ticket: %v", err)
	}
	nc.Close()

	waitTicket(t, oOther)
	foreign := &origin{addr: addr, scheme: "https", sessions: oOther.sessions}
	if _, err := tr.dialNet(context.Background(), foreign, 1); !errors.Is(err, errNotResumed) {
		t.Fatalf("pooled dial with a ticket the server cannot resume: %v, want %v", err, errNotResumed)
	}
}

func waitTicket(t *testing.T, o *origin) {
	t.Helper()
	select {
	case <-o.sessions.ready:
	case <-time.After(5 * time.Second):
		t.Fatalf("no session ticket on the primary to %s within 5 s", o.addr)
	}
}

// Handshake records that no HTTP/2 connection claims (HTTP/1.1, failed
// handshakes) are dropped once older than handshakeTTL, and only those.
func TestHandshakeRecordsExpire(t *testing.T) {
	var ls lineages
	conn := func() net.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return a
	}
	old, mid, reused := conn(), conn(), conn()
	t0 := time.Unix(1000, 0)
	ls.start(old, t0)
	ls.start(reused, t0)
	ls.start(mid, t0.Add(handshakeTTL/2))
	// The same socket key started again later must keep its new record.
	fresh := ls.start(reused, t0.Add(handshakeTTL/2))
	ls.start(conn(), t0.Add(handshakeTTL+time.Second))
	if _, ok := ls.byConn[old]; ok {
		t.Error("a record older than handshakeTTL was kept")
	}
	if _, ok := ls.byConn[mid]; !ok {
		t.Error("a record younger than handshakeTTL was dropped")
	}
	if ls.byConn[reused] != fresh {
		t.Error("expiring a key's old record dropped its newer one")
	}
	if len(ls.order) != 3 {
		t.Errorf("%d records queued, want the 3 not expired", len(ls.order))
	}
}
