package drivers

import (
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

func TestSMigParamErrors(t *testing.T) {
	obj := experiment.Object{Name: "o", Size: "10KB"}
	wantCheckErrors(t, []checkCase{
		{"http", map[string]string{"proto": "h2", "smig": "migxx"}, obj, `params.smig "migxx"`},
		{"http", map[string]string{"proto": "h1", "smig": "migsw"}, obj, "SMig needs proto h2 and server shunt"},
		{"http", map[string]string{"proto": "h2", "server": "nginx", "smig": "nomig"}, obj, "SMig needs proto h2 and server shunt"},
		{"http", map[string]string{"proto": "h2", "notsent_lowat": "-1"}, obj, `params.notsent_lowat "-1"`},
		{"http", map[string]string{"proto": "h2", "server": "h2o", "notsent_lowat": "16384"}, obj, "set per socket by shunt's server only"},
		{"http", map[string]string{"proto": "h2", "background": "forever"}, obj, `params.background "forever"`},
		{"http", map[string]string{"proto": "h2", "smig": "migsw", "smig_pool": "none"}, obj, `params.smig_pool "none"`},
		{"http", map[string]string{"proto": "h2", "smig_pool": "ondemand"}, obj, "needs params.smig"},
	})
}

// TestSMigDriverOverTestbed runs the SMig rows end to end: the server and
// client policies must each migrate the large response once, onto the
// pooled connection, and the 5 MB body must still arrive whole (the driver
// verifies every byte).
func TestSMigDriverOverTestbed(t *testing.T) {
	recs := sweep(t, `
name: smig-test
reps: 1
seed: 1
timeout: 60s
protocols:
  - {name: nomig, driver: http, params: {proto: h2, smig: nomig, priority: i, background: complete}}
  - {name: migsw, driver: http, params: {proto: h2, smig: "migsw:1M", background: complete}}
  - {name: migsp, driver: http, params: {proto: h2, smig: "migsp:100K", notsent_lowat: "16384", background: complete}}
  - {name: migcp, driver: http, params: {proto: h2, smig: "migcp:1M", background: complete}}
  - {name: migsw-ondemand, driver: http, params: {proto: h2, smig: "migsw:1M", smig_pool: ondemand, background: complete}}
objects:
  - {name: alone, size: 10KB}
  - {name: during, size: 10KB, background: 5MB, background_after: 300KB}
`+link)
	for _, rec := range recs {
		if !rec.OK() {
			continue
		}
		c := rec.Counts
		want := 0.0
		if rec.Object.Name == "during" && rec.Protocol.Name != "nomig" {
			want = 1
		}
		if c["smig_migrations"] != want || c["smig_linked"] != want {
			t.Errorf("%s/%s: %v migrations, %v linked by the client, want %v", rec.Protocol.Name, rec.Object.Name, c["smig_migrations"], c["smig_linked"], want)
		}
		if want == 1 && !(c["smig_moved_bytes"] > 0 && c["smig_moved_bytes"] < 5<<20) {
			t.Errorf("%s: %v bytes moved, want some of the 5 MB", rec.Protocol.Name, c["smig_moved_bytes"])
		}
		if got, wantAsk := c["smig_client_initiated"], map[bool]float64{true: want}[rec.Protocol.Name == "migcp"]; got != wantAsk {
			t.Errorf("%s/%s: %v client-initiated migrations, want %v", rec.Protocol.Name, rec.Object.Name, got, wantAsk)
		}
		// The primary and the pooled idle connection; a migration takes the
		// idle one, and the pool (size 1) opens its replacement on the next
		// request, which the 10 KB object's is. On demand, the pool is empty
		// until the server asks for a connection to migrate to.
		wantConns, wantAsked := 2+want, 0.0
		if rec.Protocol.Name == "migsw-ondemand" {
			wantConns, wantAsked = 1+want, want
		}
		if c["connections"] != wantConns || c["smig_conn_requests"] != wantAsked {
			t.Errorf("%s/%s: %v connections, %v asked for by the server, want %v, %v", rec.Protocol.Name, rec.Object.Name, c["connections"], c["smig_conn_requests"], wantConns, wantAsked)
		}
		// The client's sockets carried the objects' bodies at least.
		if body := map[string]float64{"alone": 10e3, "during": 5e6 + 10e3}[rec.Object.Name]; !(c["client_rx_bytes"] >= body && c["client_wire_bytes"] > c["client_rx_bytes"]) {
			t.Errorf("%s/%s: client received %v payload bytes (%v on the wire), want at least %v", rec.Protocol.Name, rec.Object.Name, c["client_rx_bytes"], c["client_wire_bytes"], body)
		}
		if rec.Object.Name == "during" && !(rec.Metrics["large_time"] > rec.Metrics["time"]) {
			t.Errorf("%s: large object %v s, small %v s", rec.Protocol.Name, rec.Metrics["large_time"], rec.Metrics["time"])
		}
		if rec.Protocol.Name == "migsp" && !strings.Contains(rec.Info["server_sockopts"], "notsent_lowat=16384") {
			t.Errorf("migsp: server socket options %q", rec.Info["server_sockopts"])
		}
	}
}
