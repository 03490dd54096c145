package fetch

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/testpages"

	"github.com/shunt-net/shunt/replay/site"
	"github.com/shunt-net/shunt/smig"
)

// TestSMigFetcherLoadsPage loads a Table IV page over HTTP/2 with SMig from
// a loopback server whose policy migrates every response after 16 KB (the
// page's objects are 258 KB on average): every object must arrive whole and
// verified (length and digest), some of them over a migration.
func TestSMigFetcherLoadsPage(t *testing.T) {
	p := testpages.Load(t, "pinterest.com_.json")
	h, err := site.NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, useTLS := range []bool{true, false} {
		name := map[bool]string{true: "tls", false: "h2c"}[useTLS]
		t.Run(name, func(t *testing.T) {
			pol, err := smig.ParsePolicy("migsp:16K")
			if err != nil {
				t.Fatal(err)
			}
			ss := &smig.Server{Policy: pol}
			// Responses start after a while, so the client's pool connection
			// is bound by the time the first one passes 16 KB.
			slow := &inflight{h: h, hold: 20 * time.Millisecond}
			srv, err := site.Serve(site.ServeConfig{Handler: slow, Addr: "127.0.0.1:0", TLS: useTLS, SMig: ss})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cfg := Config{Proto: H2, Streams: 100, Addr: srv.Addr, TLS: useTLS, Page: p.Name, SMig: &smig.Policy{}}
			if useTLS {
				roots := x509.NewCertPool()
				roots.AddCert(srv.Cert.Certificates[0].Leaf)
				cfg.TLSConfig = &tls.Config{RootCAs: roots}
			}
			f, r := replayOnce(t, p, cfg)
			for _, o := range r.Objects {
				if o.Got != o.Size {
					t.Errorf("object %s: %d bytes of %d", o.ID, o.Got, o.Size)
				}
			}
			if got := f.Config().Label(); got != "h2-100-smig" {
				t.Errorf("label %q", got)
			}
			migrated, serverMoved := f.Migrated(), ss.Stats().Migrations.Load()
			if migrated == 0 || serverMoved == 0 {
				t.Errorf("no response migrated (client linked %d, server moved %d)", migrated, serverMoved)
			}
			if f.Conns() < 2 {
				t.Errorf("%d connections: SMig needs its pool connection", f.Conns())
			}
			t.Logf("%s: PLT %v, %d migrated, %d connections", name, r.PLT, migrated, f.Conns())
		})
	}
}

func TestSMigNeedsH2(t *testing.T) {
	for _, proto := range []string{H1, H3} {
		if _, err := New(Config{Proto: proto, Addr: "127.0.0.1:1", SMig: &smig.Policy{}}); err == nil {
			t.Errorf("%s with SMig accepted", proto)
		}
	}
}
