package viaproxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/peers"
)

// Both modes over this machine's loopback (one path): curl's body is the
// object (the run checks length and SHA-256), and through the proxy the
// one path delivered all of it.
func TestLocal(t *testing.T) {
	if err := peers.Available("curl"); err != nil {
		t.Skipf("skipping: %v (bash scripts/setup installs curl)", err)
	}
	obj := experiment.Object{Name: "3MB", Size: "3MB"}
	for _, params := range []map[string]string{{"mode": "proxy"}, {"mode": "proxy", "estimates": "false"},
		{"mode": "proxy", "path_mode": "interactive", "prime": "false"}, {"mode": "proxy", "budget": "loopback=100MB", "fresh": "true"},
		{"mode": "direct", "path": "loopback"}} {
		c, err := Kind.Config(params)
		if err != nil {
			t.Fatal(err)
		}
		env, err := emulated.LocalEnv(t.TempDir(), obj)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Start(context.Background(), env, c)
		if err != nil {
			t.Fatalf("%v: %v", params, err)
		}
		for rep := range 2 {
			res, err := s.Run(context.Background(), &experiment.Run{Object: obj, Rep: rep})
			if err != nil {
				t.Fatalf("%v run %d: %v", params, rep, err)
			}
			if res.Metrics["time"] <= 0 || res.Counts["bytes"] != 3e6 {
				t.Fatalf("%v run %d: %+v", params, rep, res)
			}
			if params["mode"] == "proxy" && res.Counts["bytes_loopback"] != 3e6 {
				t.Fatalf("run %d: the path delivered %v bytes through the proxy, want 3e6", rep, res.Counts["bytes_loopback"])
			}
			// The path read every fetch of this proxy so far (the priming
			// one included) and no more; fresh is a proxy per run.
			fetches := float64(rep + 1)
			if params["fresh"] == "true" {
				fetches = 1
			}
			if params["prime"] != "false" && params["estimates"] != "false" {
				fetches++
			}
			if w := res.Counts["wire_loopback"]; params["mode"] == "proxy" && (w < 3e6*fetches || w >= 3e6*(fetches+1)) {
				t.Fatalf("%v run %d: %v DATA bytes on the wire after %v fetches of 3e6", params, rep, w, fetches)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatalf("%v: close: %v", params, err)
		}
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		err    string
	}{
		{map[string]string{"mode": "direct"}, "params.path"},
		{map[string]string{"mode": "proxy", "path": "wifi"}, "params.path"},
		{map[string]string{"server": "apache"}, "server"},
		{map[string]string{"mode": "direct", "path": "wifi", "estimates": "false"}, "params.estimates"},
		{map[string]string{"mode": "direct", "path": "wifi", "path_mode": "interactive"}, "params.path_mode"},
		{map[string]string{"mode": "proxy", "estimates": "false", "prime": "false"}, "params.prime"},
		{map[string]string{"mode": "direct", "path": "wifi", "budget": "wifi=1MB"}, "params.mode"},
		{map[string]string{"mode": "direct", "path": "wifi", "fresh": "true"}, "params.mode"},
		{map[string]string{"mode": "proxy", "budget": "wifi=1MB"}, "fresh=true"},
		{map[string]string{"mode": "proxy", "budget": "wifi", "fresh": "true"}, "params.budget"},
	} {
		if _, err := Kind.Config(tc.params); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: %v, want an error naming %s", tc.params, err, tc.err)
		}
	}
}

func TestParseWriteOut(t *testing.T) {
	w, err := parseWriteOut("curl: warning\nshunt-curl 200 1.5 0.25\n")
	if err != nil || w.total != 1.5 || w.firstByte != 0.25 {
		t.Fatalf("%+v, %v", w, err)
	}
	for _, bad := range []string{"", "shunt-curl 404 1 1\n", "shunt-curl 200 x 1\n"} {
		if _, err := parseWriteOut(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseWriteOut(f *testing.F) {
	for _, s := range []string{"shunt-curl 200 1.5 0.25\n", "x\nshunt-curl 200 0 0", "shunt-curl 502 1 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := parseWriteOut(s)
		if err != nil {
			return
		}
		if w.total != w.total || w.firstByte != w.firstByte {
			return // NaN parses, and equals nothing
		}
		again, err := parseWriteOut(fmt.Sprintf("shunt-curl 200 %v %v", w.total, w.firstByte))
		if err != nil || again != w {
			t.Fatalf("%q: %+v, again %+v, %v", s, w, again, err)
		}
	})
}
