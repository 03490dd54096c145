package drivers

import (
	"testing"

	"github.com/shunt-net/shunt/peers"
)

// The mptools experiment over the two-path testbed, small: the primary
// path dies 300 ms into the download; MP-H2 in handover mode and aria2
// finish on lte, MP-H2 with a budget keeps to it, MP-H2 on lte alone
// waits out a 4 s outage of lte (longer than its 3 s silence rule), curl
// on lte and curl over MPTCP fetch the object; every file is checked by
// length and SHA-256 in the run.
func TestMPToolsOverTestbed(t *testing.T) {
	for _, bin := range []string{"nginx", "aria2c", "curl", "mptcpize"} {
		if err := peers.Available(bin); err != nil {
			t.Skipf("skipping: %v (bash scripts/setup installs it)", err)
		}
	}
	recs := sweep(t, `
name: mptools-test
reps: 1
seed: 1
timeout: 60s
conditions:
  - name: w10-l5
    topology: twopath
    paths:
      - {name: wifi, down: {delay: 5ms, rate: 10Mbit, queue: "droptail:bytes=100000"}, up: {delay: 5ms, rate: 10Mbit}}
      - {name: lte, down: {delay: 10ms, rate: 5Mbit, queue: "droptail:bytes=100000"}, up: {delay: 10ms, rate: 10Mbit}}
protocols:
  - {name: mph2-handover-kill, driver: mptools, params: {tool: mph2, mode: handover, outages: wifi@300ms, handover_after: 500ms}}
  - {name: aria2-kill, driver: mptools, params: {tool: aria2, conns: "4", outages: wifi@300ms}}
  - {name: mph2-budget, driver: mptools, params: {tool: mph2, budget: lte=500KB}}
  - {name: mph2-lte-gap, driver: mptools, params: {tool: mph2, path: lte, outages: lte@300ms+4s}}
  - {name: curl-lte, driver: mptools, params: {tool: curl, path: lte}}
  - {name: mptcp, driver: mptools, params: {tool: mptcp}}
objects:
  - {name: 2MB, size: 2MB}
`)
	for _, rec := range recs {
		t.Logf("%s: ok %v %.2f s %v %v", rec.Protocol.Name, rec.OK(), rec.Metrics["time"], rec.Counts, rec.Error)
		if !rec.OK() {
			if rec.Protocol.Name == "aria2-kill" {
				continue // aria2's own outcome is what the scenario measures
			}
			t.Errorf("%s: %s", rec.Protocol.Name, rec.Error)
			continue
		}
		switch rec.Protocol.Name {
		case "mph2-handover-kill":
			if rec.Counts["switches"] < 1 || rec.Counts["bytes_lte"] == 0 || rec.Counts["switch_first_byte_s"] < rec.Counts["switch_s"] {
				t.Errorf("%s: counts %v: want a switch to lte and its first byte after", rec.Protocol.Name, rec.Counts)
			}
		case "mph2-lte-gap":
			if rec.Counts["bytes_lte"] != 2e6 || rec.Counts["requests_wifi"] != 0 || rec.Counts["suspensions_lte"] < 1 || rec.Metrics["time"] < 4.3 {
				t.Errorf("%s: %.2f s, counts %v: want every byte on lte alone, after a suspension", rec.Protocol.Name, rec.Metrics["time"], rec.Counts)
			}
		case "mph2-budget":
			if rec.Counts["received_lte"] > 500e3 || rec.Counts["budget_lte"] != 500e3 {
				t.Errorf("%s: lte received %v of its budget %v", rec.Protocol.Name, rec.Counts["received_lte"], rec.Counts["budget_lte"])
			}
		}
	}
}
