package drivers

import (
	"testing"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/site"
)

func TestHintsParamErrors(t *testing.T) {
	google := experiment.Object{Name: "google"}
	wantCheckErrors(t, []checkCase{
		{"replay", map[string]string{"policy": "fastest"}, google, `params.policy "fastest": no policy preset "fastest"`},
		{"replay", map[string]string{"policy": "/nonexistent.rules"}, google, `params.policy "/nonexistent.rules"`},
		{"replay", map[string]string{"policy": "tail", "proto": "h3"}, google, "policy and mptcp need proto h2"},
		{"replay", map[string]string{"mptcp": "true", "smig": "migsp"}, google, "policy and mptcp need proto h2 without smig"},
		{"replay", map[string]string{"policy": "tail", "path": "wifi"}, google, "a policy uses every path"},
		{"replay", map[string]string{"expensive": "lte"}, google, "costs matter only to a policy"},
		{"replay", map[string]string{"steering": "client", "policy": "tail", "path": "exp"}, google, `params.steering "client": want server`},
		{"replay", map[string]string{"steering": "server", "policy": "urgent-fast"}, google, "server-side steering needs a hints policy (policy) and the path"},
		{"replay", map[string]string{"steering": "server", "policy": "mph2", "path": "exp"}, google, "server-side steering needs a hints policy"},
	})
}

// TestHintsOverTestbed loads Google's and Siteadvisor's pages over a two-path network (cheap
// 80 ms, expensive 20 ms RTT) with a hinted policy, redundancy and MP-H2,
// and over the expensive path alone: every object is checked by the
// fetchers, the byte counts must add up and land where the policy says.
func TestHintsOverTestbed(t *testing.T) {
	recs := sweep(t, `
name: hints-test
reps: 1
seed: 1
conditions:
  - name: latency
    topology: twopath
    paths:
      - {name: cheap, down: &c {delay: 40ms, rate: 10Mbit, queue: "droptail:packets=100"}, up: *c}
      - {name: exp, down: &e {delay: 10ms, rate: 10Mbit, queue: "droptail:packets=100"}, up: *e}
protocols:
  - {name: urgent-fast, driver: replay, params: {policy: urgent-fast, expensive: exp, schedule: browser}}
  - {name: redundant, driver: replay, params: {policy: redundant-urgent, expensive: exp, schedule: browser}}
  - {name: mph2, driver: replay, params: {policy: mph2, expensive: exp, schedule: browser}}
  - {name: exp-alone, driver: replay, params: {path: exp, schedule: browser}}
  - {name: mptcp, driver: replay, params: {mptcp: "true", expensive: exp, schedule: browser}}
  - {name: steer, driver: replay, params: {steering: server, policy: urgent-fast, path: exp, expensive: exp, schedule: browser}}
objects:
  - {name: google}
  - {name: siteadvisor}
`)
	pages, urgents := map[string]*page.Page{}, map[string]int64{}
	for _, name := range []string{"google", "siteadvisor"} {
		pg, err := page.Load(mustPageFile(t, name))
		if err != nil {
			t.Fatal(err)
		}
		pages[name] = pg
		for i, h := range hints.FromPage(pg) {
			if h.Urgent() {
				urgents[name] += pg.Objects[i].Size
			}
		}
	}
	for _, rec := range recs {
		pg, urgent := pages[rec.Object.Name], urgents[rec.Object.Name]
		c, m := rec.Counts, rec.Metrics
		if !(m["dcl"] > 0.020 && m["dcl"] <= m["plt"] && m["last_urgent"] <= m["dcl"]) {
			t.Errorf("%s: plt %v dcl %v last_urgent %v", rec.Protocol.Name, m["plt"], m["dcl"], m["last_urgent"])
		}
		if rec.Protocol.Name == "exp-alone" {
			continue
		}
		t.Logf("%s/%s: plt %.3f s, dcl %.3f s, expensive %.1f %%, received cheap %v exp %v", rec.Object.Name, rec.Protocol.Name, m["plt"], m["dcl"], m["expensive_pct"], c["received_cheap"], c["received_exp"])
		if rec.Protocol.Name == "steer" {
			// Every request on exp's connection; the server moved the bulk
			// to cheap's, and never an urgent response. Counted: TCP
			// payload, TLS and HTTP/2 framing included.
			bulk := float64(pg.TotalSize() - urgent)
			if c["smig_server_moved"] == 0 || c["received_cheap"] == 0 || c["received_exp"] < float64(urgent) || c["received_cheap"] > 1.1*bulk+16<<10 ||
				c["received_cheap"]+c["received_exp"] < float64(pg.TotalSize()) {
				t.Errorf("steer: urgent %d, bulk %v bytes: %v", urgent, bulk, c)
			}
			continue
		}
		if rec.Protocol.Name == "mptcp" {
			// Both subflows' TCP payload: the page, TLS and HTTP/2 framing.
			if got := c["received_cheap"] + c["received_exp"]; got < float64(pg.TotalSize()) || got > 1.2*float64(pg.TotalSize()) || !(m["expensive_pct"] > 0) {
				t.Errorf("mptcp: subflows received %v (page %d), expensive %v %%", got, pg.TotalSize(), m["expensive_pct"])
			}
			continue
		}
		if used := c["used_cheap"] + c["used_exp"]; used != float64(pg.TotalSize()) {
			t.Errorf("%s: paths used %v bytes, want %d", rec.Protocol.Name, used, pg.TotalSize())
		}
		if c["received_cheap"] < c["used_cheap"] || c["received_exp"] < c["used_exp"] || c["dup_bytes"] < 0 {
			t.Errorf("%s: %v", rec.Protocol.Name, c)
		}
		switch rec.Protocol.Name {
		case "urgent-fast":
			// The document, style sheets and blocking scripts on the 20 ms
			// path, the rest on the cheap one.
			if c["used_exp"] != float64(urgent) || c["wasted_body"] != 0 || c["redundant"] != 0 {
				t.Errorf("urgent-fast: %v bytes on exp, want the %d urgent: %v", c["used_exp"], urgent, c)
			}
		case "redundant":
			if c["redundant"] == 0 || c["requests_cheap"]+c["requests_exp"] <= c["objects"] {
				t.Errorf("redundant: %v", c)
			}
		case "mph2":
			if c["used_cheap"] == 0 || c["used_exp"] == 0 {
				t.Errorf("mph2: a path unused: %v", c)
			}
		}
	}
}

func mustPageFile(t *testing.T, name string) string {
	t.Helper()
	f, err := site.PageFile(name)
	if err != nil {
		t.Skipf("needs the project's graphs: %v", err)
	}
	return f
}
