package mptools

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/peers"
)

// Every tool against every server over this machine's loopback (one path):
// the run checks the file by length and SHA-256, so a tool that fetched
// the wrong bytes or too few fails here.
func TestLocal(t *testing.T) {
	obj := experiment.Object{Name: "3MB", Size: "3MB"}
	for _, server := range []string{peers.Nginx, peers.H2O, peers.Shunt} {
		for _, params := range []map[string]string{
			{"tool": "mph2"},
			{"tool": "mph2", "mode": "handover"},
			{"tool": "mph2", "mode": "interactive", "budget": "loopback=3MB"},
			{"tool": "mph2", "path": "loopback"},
			{"tool": "aria2", "conns": "4"},
			{"tool": "axel", "conns": "4"},
			{"tool": "curl", "path": "loopback"},
			{"tool": "curl", "path": "loopback", "http": "1.1"},
			{"tool": "mptcp"},
		} {
			params["server"] = server
			t.Run(server+"/"+params["tool"]+params["mode"]+params["http"], func(t *testing.T) {
				for _, bin := range []string{server, map[string]string{"aria2": "aria2c", "axel": "axel", "curl": "curl", "mptcp": "mptcpize"}[params["tool"]]} {
					if bin == "" || bin == peers.Shunt {
						continue
					}
					if err := peers.Available(bin); err != nil {
						t.Skipf("skipping: %v (bash scripts/setup installs it)", err)
					}
				}
				s := startLocal(t, params, obj)
				res, err := s.Run(context.Background(), &experiment.Run{Object: obj})
				if err != nil {
					t.Fatal(err)
				}
				if res.Counts["bytes"] != 3e6 || res.Metrics["time"] <= 0 {
					t.Fatalf("result %+v", res)
				}
				// nginx's and h2o's logs have the run's requests: one
				// whole body for curl; never less than the object for any
				// tool.
				if server != peers.Shunt && (res.Counts["server_body_bytes"] < 3e6 || res.Counts["redone_bytes"] != res.Counts["server_body_bytes"]-3e6 ||
					params["tool"] == "curl" && (res.Counts["server_requests"] != 1 || res.Counts["redone_bytes"] != 0)) {
					t.Errorf("server's counts %v", res.Counts)
				}
				t.Logf("%v: %.3f s, %v requests, %v bytes redone", params, res.Metrics["time"], res.Counts["server_requests"], res.Counts["redone_bytes"])
			})
		}
	}
}

// A scenario with several objects downloads each at every repetition from
// the same server: a run's server counts must be its own object's requests,
// not also those of the run before it at the same repetition (h63: the
// 4 MB runs after the 1 MB ones counted 1 MB redone and one request more).
func TestServerCountsPerObject(t *testing.T) {
	for _, bin := range []string{peers.Nginx, "curl"} {
		if err := peers.Available(bin); err != nil {
			t.Skipf("skipping: %v (bash scripts/setup installs it)", err)
		}
	}
	objs := []experiment.Object{{Name: "1MB", Size: "1MB"}, {Name: "3MB", Size: "3MB"}}
	s := startLocal(t, map[string]string{"tool": "curl", "path": "loopback", "server": peers.Nginx}, objs...)
	for _, obj := range objs {
		res, err := s.Run(context.Background(), &experiment.Run{Object: obj, Rep: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Counts["server_requests"] != 1 || res.Counts["redone_bytes"] != 0 {
			t.Errorf("%s: server_requests %v, redone_bytes %v; want 1 and 0", obj.Name, res.Counts["server_requests"], res.Counts["redone_bytes"])
		}
	}
}

// startLocal starts a session with params over this machine's loopback,
// serving objs; the test's cleanup closes it.
func startLocal(t *testing.T, params map[string]string, objs ...experiment.Object) *Session {
	t.Helper()
	c, err := Kind.Config(params)
	if err != nil {
		t.Fatal(err)
	}
	env, err := emulated.LocalEnv(t.TempDir(), objs...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), env, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConfigErrors(t *testing.T) {
	for _, v := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"tool": "curl"}, "params.path"},
		{map[string]string{"tool": "aria2", "path": "wifi"}, "params.path"},
		{map[string]string{"tool": "axel", "path": "wifi"}, "params.path"},
		{map[string]string{"tool": "mptcp", "path": "wifi"}, "params.path"},
		{map[string]string{"tool": "aria2", "mode": "handover"}, "params.tool"},
		{map[string]string{"tool": "aria2", "conns": "17"}, "params.conns"},
		{map[string]string{"budget": "lte"}, "params.budget"},
		{map[string]string{"outages": "lte@x"}, "params.outages"},
		{map[string]string{"min_split": "100KB"}, "params.min_split"},
		{map[string]string{"tool": "aria2", "http": "1.1"}, "params.http"},
		{map[string]string{"tool": "curl", "path": "wifi", "http": "1.0"}, "params.http"},
	} {
		if _, err := Kind.Config(v.params); err == nil || !strings.Contains(err.Error(), v.want) {
			t.Errorf("%v: %v, want an error naming %s", v.params, err, v.want)
		}
	}
}

// MP-H2 over one path is shunt get --path NAME: the single-path
// row through the outages.
func TestSinglePathMPH2(t *testing.T) {
	c, err := Kind.Config(map[string]string{"tool": "mph2", "path": "lte"})
	if err != nil || c.Path != "lte" {
		t.Fatalf("tool mph2 path lte: %+v, %v", c, err)
	}
}

// checkFile refuses a file one byte short or one byte wrong.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	good := make([]byte, 100_000)
	content.GenAt(good, 0)
	for _, v := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"whole", good, true},
		{"short", good[:len(good)-1], false},
		{"flipped", append(append([]byte(nil), good[:500]...), append([]byte{good[500] ^ 1}, good[501:]...)...), false},
	} {
		f := filepath.Join(dir, v.name)
		if err := os.WriteFile(f, v.data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkFile(f, int64(len(good))); (err == nil) != v.ok {
			t.Errorf("%s: %v", v.name, err)
		}
	}
}

// afterCut reads a path's deliveries around an outage at 2 s of a run that
// ended at 10 s.
func TestAfterCut(t *testing.T) {
	t0 := time.Now()
	at := func(s ...float64) []experiment.Delivery {
		var out []experiment.Delivery
		for _, x := range s {
			out = append(out, experiment.Delivery{At: t0.Add(time.Duration(x * float64(time.Second))), Bytes: 1500})
		}
		return out
	}
	cut, end := t0.Add(2*time.Second), t0.Add(10*time.Second)
	// An ACK or a PING answer is not data.
	acked := append(at(1.9), experiment.Delivery{At: t0.Add(2500 * time.Millisecond), Bytes: 52})
	acked = append(acked, at(9.5)...)
	for _, v := range []struct {
		name        string
		ds          []experiment.Delivery
		first, idle float64
		ok          bool
	}{
		// Busy throughout (aggregate): the next packet 10 ms after the cut.
		{"busy", at(1.99, 2.01, 2.02, 9.99), 0.01, 7.97, true},
		{"steady", at(1.9, 2.05, 2.1, 2.15, 5, 7.5, 9.95), 0.05, 2.85, true},
		// Unused until a handover 1.2 s after the cut.
		{"handover", at(3.2, 3.3, 9.9), 1.2, 6.6, true},
		// Its own pieces until 4 s, then idle until a timeout at 9.5 s.
		{"timeout", at(1, 2.5, 4, 9.5, 10), 0.5, 5.5, true},
		// Never: idle from the cut to the end; packets after the end do not count.
		{"never", at(1, 1.5, 10.5), 0, 8, false},
		{"acks", acked, 7.5, 7.5, true},
	} {
		first, idle, ok := afterCut(v.ds, cut, end)
		if ok != v.ok || (ok && !near(first.Seconds(), v.first)) || !near(idle.Seconds(), v.idle) {
			t.Errorf("%s: first %v (%v), idle %v; want %v (%v), %v", v.name, first, ok, idle, v.first, v.ok, v.idle)
		}
	}
	s := &Session{outages: []Outage{{Path: "wifi", Start: 2 * time.Second}}}
	delivered := map[string][]experiment.Delivery{"wifi": at(1, 1.5), "lte": at(3.2, 9.9)}
	rec := s.recoveries(delivered, cut, end)
	if len(rec) != 2 || !near(rec["outage_first_lte"], 1.2) || !near(rec["outage_idle_lte"], 6.7) {
		t.Errorf("recoveries: %v, want lte's only", rec)
	}
	if rec := s.recoveries(delivered, time.Time{}, end); len(rec) != 0 {
		t.Errorf("no outage before the end: %v, want no metrics", rec)
	}
	if rec := (&Session{}).recoveries(delivered, cut, end); len(rec) != 0 {
		t.Errorf("no outages: %v, want no metrics", rec)
	}
	if err := (recovery{"outage_idle_lte": 8}).failed(); err == nil || !strings.Contains(err.Error(), "outage_idle_lte 8.000 s") {
		t.Errorf("failed: %v", err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
