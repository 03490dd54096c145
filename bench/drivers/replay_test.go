package drivers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
)

func TestReplayParamErrors(t *testing.T) {
	google := experiment.Object{Name: "google"}
	wantCheckErrors(t, []checkCase{
		{"replay", map[string]string{"proto": "h4"}, google, `params.proto "h4": want h1, h2 or h3`},
		{"replay", map[string]string{"proto": "h1", "conns": "x"}, google, `params.conns "x"`},
		{"replay", map[string]string{"proto": "h1", "conns": "0"}, google, `params.conns "0"`},
		{"replay", map[string]string{"proto": "h1", "conns": "5000"}, google, "connections 5000"},
		{"replay", map[string]string{"proto": "h2", "streams": "-1"}, google, `params.streams "-1"`},
		{"replay", map[string]string{"proto": "h2", "compute": "maybe"}, google, `params.compute "maybe"`},
		{"replay", map[string]string{"proto": "h2", "colour": "red"}, google, "params.colour"},
		{"replay", map[string]string{"proto": "h2", "schedule": "round-robin"}, google, `schedule "round-robin"`},
		{"replay", map[string]string{"proto": "h1", "schedule": "sequential"}, google, "HTTP/1.1 has no streams"},
		{"replay", map[string]string{"proto": "h2", "pacing": "maybe"}, google, `params.pacing "maybe"`},
		{"replay", map[string]string{"proto": "h1", "smig": "migsp"}, google, `params.smig "migsp": SMig needs proto h2`},
		{"replay", map[string]string{"proto": "h2", "smig": "migzz"}, google, `params.smig "migzz"`},
		{"replay", map[string]string{"proto": "h2"}, experiment.Object{Name: "nosuchpage"}, "not a Table IV page"},
		{"replay", map[string]string{"proto": "h2"}, experiment.Object{Name: "google", Size: "1KB"}, "takes a page by name only"},
	})
}

func TestReplayDriverOverTestbed(t *testing.T) {
	recs := sweep(t, `
name: replay-test
reps: 1
seed: 1
protocols:
  - {name: h1-6, driver: replay, params: {proto: h1, conns: "6"}}
  - {name: h1-1c, driver: replay, params: {proto: h1, conns: "1", tls: "false", compute: "true"}}
  - {name: h2, driver: replay, params: {proto: h2, streams: "100"}}
  - {name: h3, driver: replay, params: {proto: h3, streams: "6"}}
  - {name: h2-smig, driver: replay, params: {proto: h2, smig: "migsp:4K"}}
  - {name: h2-seq-paced, driver: replay, params: {proto: h2, schedule: sequential, pacing: "true"}}
objects:
  - {name: google}
`+link)
	tv, _ := page.LookupTableIV("www.google.com.hk_")
	for _, rec := range recs {
		var load replay.Result
		if err := json.Unmarshal([]byte(rec.Info["load"]), &load); err != nil {
			t.Fatalf("%s: load: %v", rec.Protocol.Name, err)
		}
		if int64(rec.Counts["bytes"]) != tv.Bytes() || load.Bytes != tv.Bytes() || len(load.Objects) != tv.Resources {
			t.Errorf("%s: %v bytes, %d objects; want Table IV's %d, %d", rec.Protocol.Name, rec.Counts["bytes"], len(load.Objects), tv.Bytes(), tv.Resources)
		}
		// RTT 10 ms: a handshake, then the HTML, then its children.
		if rec.Metrics["plt"] < 0.030 || load.PLT.Seconds() != rec.Metrics["plt"] {
			t.Errorf("%s: PLT %v s (load %v)", rec.Protocol.Name, rec.Metrics["plt"], load.PLT)
		}
		want := map[string]string{"h1-6": "HTTP/1.1 over TLS", "h1-1c": "HTTP/1.1", "h2": "HTTP/2.0 over TLS", "h3": "HTTP/3.0", "h2-smig": "HTTP/2.0 over TLS", "h2-seq-paced": "HTTP/2.0 over TLS"}[rec.Protocol.Name]
		if !strings.HasPrefix(rec.Info["http"], want) {
			t.Errorf("%s: responses came over %q, want %s", rec.Protocol.Name, rec.Info["http"], want)
		}
	}
}
