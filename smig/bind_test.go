package smig

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestMigrationAtBinding forces the interleaving behind the one failed
// download of 30,232 in the 10-minute soak: a handler moves its response to
// a pooled connection the moment that connection joins the client's
// binding. The server must have queued the CONNECTION_ID ACK first, or the
// opening overtakes it, the client (not knowing the connection bound)
// refuses it, and the response is reset. A hook in bind holds the binding
// right after the connection joins until the handler, released by it, has
// queued the migration.
func TestMigrationAtBinding(t *testing.T) {
	bound, migrated := make(chan struct{}), make(chan struct{})
	var once sync.Once
	// The handler of the large response asks for a connection on its first
	// write (no pooled one yet: OnDemand), then writes again only once a
	// connection is bound: that write migrates.
	gate := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/gen/4194304" {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(&gateWriter{ResponseWriter: w, bound: bound, migrated: migrated, t: t}, r)
		})
	}
	ts := startServerTLS(t, Policy{Kind: MigSW, Threshold: 1 << 20}, true, nil, gate)
	ts.s.mu.Lock()
	ts.s.onBound = func() {
		once.Do(func() {
			close(bound)
			select {
			case <-migrated:
			case <-time.After(5 * time.Second):
				t.Error("the handler did not migrate within 5 s of the binding")
			}
		})
	}
	ts.s.mu.Unlock()
	tr := &Transport{AllowHTTP: true, Pool: PoolConfig{OnDemand: true}, Logf: t.Logf}
	defer tr.CloseIdleConnections()
	fetch(t, tr, ts.url+"/gen/10240", 10<<10)
	fetch(t, tr, ts.url+"/gen/4194304", 4<<20)
	if got := ts.s.Stats().Migrations.Load(); got != 1 {
		t.Fatalf("server migrated %d streams, want 1 (logs: %v)", got, drain(ts.logs))
	}
	if got := tr.Stats().Migrated.Load(); got != 1 {
		t.Fatalf("client linked %d migrated streams, want 1", got)
	}
}

// gateWriter passes the first write, holds the second until bound is
// closed, and closes migrated once the second (the SMig policy's
// migration included) is done.
type gateWriter struct {
	http.ResponseWriter
	bound, migrated chan struct{}
	writes          int
	t               *testing.T
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes != 2 {
		return w.ResponseWriter.Write(p)
	}
	select {
	case <-w.bound:
	case <-time.After(5 * time.Second):
		w.t.Error("no pooled connection bound within 5 s")
	}
	defer close(w.migrated)
	return w.ResponseWriter.Write(p)
}

func (w *gateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
