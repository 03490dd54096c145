package fetch

import (
	"net/http"

	"github.com/shunt-net/shunt/smig"
)

// smigc is HTTP/2 with SMig (smig.Transport): one primary connection carries
// the requests and a pool of bound idle connections receives the responses
// the server (MigSW, MigSP) or the client (MigCP) migrates. The pool's
// connections are opened during the load, so their handshakes count, as
// the primary's does. Against a server without SMig it is plain HTTP/2.
type smigc struct {
	t *smig.Transport
}

func newSMig(cfg Config) *smigc {
	t := &smig.Transport{AllowHTTP: !cfg.TLS, DialContext: cfg.Dial, PoolDial: cfg.PoolDial, Policy: *cfg.SMig}
	if cfg.TLS {
		t.TLSClientConfig = cfg.TLSConfig
	}
	return &smigc{t: t}
}

// roundTrip says connection 0: smig.Transport picks connections itself, and
// a migrated response arrives on several.
func (s *smigc) roundTrip(req *http.Request) (*http.Response, int, error) {
	resp, err := s.t.RoundTrip(req)
	return resp, 0, err
}

func (s *smigc) opened() int { return int(s.t.Stats().ConnsOpened.Load()) }

// close closes every connection: at the end of a load none carries a stream.
func (s *smigc) close() error {
	s.t.CloseIdleConnections()
	return nil
}

// Migrated is how many responses of the load arrived (partly) on another
// connection; 0 without SMig.
func (f *Fetcher) Migrated() int {
	if s, ok := f.tr.(*smigc); ok {
		return int(s.t.Stats().Migrated.Load())
	}
	return 0
}
