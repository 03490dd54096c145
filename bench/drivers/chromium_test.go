package drivers

import (
	"testing"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/replay/browser"
)

func TestChromiumParamErrors(t *testing.T) {
	google := experiment.Object{Name: "google"}
	wantCheckErrors(t, []checkCase{
		{"chromium", map[string]string{"proto": "spdy"}, google, `params.proto "spdy"`},
		{"chromium", map[string]string{"proto": "h2", "compute": "maybe"}, google, `params.compute "maybe"`},
		{"chromium", map[string]string{"proto": "h2", "pacing": "on"}, google, `params.pacing "on"`},
		{"chromium", map[string]string{"proto": "h2", "conns": "6"}, google, "params.conns"},
		{"chromium", map[string]string{"proto": "h2"}, experiment.Object{Name: "nosuchpage"}, "not a Table IV page"},
	})
}

// TestChromiumDriverOverTestbed loads Google's generated site in Chromium in
// the client namespace, over h2 and HTTP/1.1.
func TestChromiumDriverOverTestbed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	if err := browser.Available(""); err != nil {
		t.Skipf("needs Chromium: %v", err)
	}
	recs := sweep(t, `
name: chromium-test
reps: 1
seed: 1
protocols:
  - {name: chromium-h2, driver: chromium, params: {proto: h2, pacing: "true"}}
  - {name: chromium-h1, driver: chromium, params: {proto: h1}}
objects:
  - {name: google}
`+link)
	want := map[string]string{"chromium-h2": "h2", "chromium-h1": "http/1.1"}
	for _, rec := range recs {
		if rec.Info["http"] != want[rec.Protocol.Name] {
			t.Errorf("%s: protocol %q, want %q", rec.Protocol.Name, rec.Info["http"], want[rec.Protocol.Name])
		}
		// The root and every object it leads to, over a 10 ms RTT link:
		// at least the two round trips of TCP and TLS.
		if rec.Counts["resources"] != rec.Counts["objects"]-1 || rec.Metrics["plt"] < 0.02 || rec.Metrics["connected"] > rec.Metrics["plt"] {
			t.Errorf("%s: counts %v, metrics %v", rec.Protocol.Name, rec.Counts, rec.Metrics)
		}
		// Google's graph has download chains; a browser keeps some edges.
		if e, k := rec.Counts["edges"], rec.Counts["edges_kept"]; e == 0 || k > e || rec.Counts["browser_depth"] > rec.Counts["graph_depth"] || rec.Counts["browser_depth"] < 1 {
			t.Errorf("%s: edges %v of %v kept, depth %v of %v", rec.Protocol.Name, k, e, rec.Counts["browser_depth"], rec.Counts["graph_depth"])
		}
	}
	if len(recs) != 2 {
		t.Errorf("%d runs, want 2", len(recs))
	}
}
