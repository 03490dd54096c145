package mptools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			{"tool": "aria2", "conns": "4"},
			{"tool": "axel", "conns": "4"},
			{"tool": "curl", "path": "loopback"},
			{"tool": "mptcp"},
		} {
			params["server"] = server
			t.Run(server+"/"+params["tool"]+params["mode"], func(t *testing.T) {
				for _, bin := range []string{server, map[string]string{"aria2": "aria2c", "axel": "axel", "curl": "curl", "mptcp": "mptcpize"}[params["tool"]]} {
					if bin == "" || bin == peers.Shunt {
						continue
					}
					if err := peers.Available(bin); err != nil {
						t.Skipf("skipping: %v (bash scripts/setup installs it)", err)
					}
				}
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
					t.Fatal(err)
				}
				defer s.Close()
				res, err := s.Run(context.Background(), &experiment.Run{Object: obj})
				if err != nil {
					t.Fatal(err)
				}
				if res.Counts["bytes"] != 3e6 || res.Metrics["time"] <= 0 {
					t.Fatalf("result %+v", res)
				}
				t.Logf("%v: %.3f s", params, res.Metrics["time"])
			})
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, v := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"tool": "curl"}, "params.path"},
		{map[string]string{"tool": "aria2", "path": "wifi"}, "params.path"},
		{map[string]string{"tool": "aria2", "mode": "handover"}, "params.tool"},
		{map[string]string{"tool": "aria2", "conns": "17"}, "params.conns"},
		{map[string]string{"budget": "lte"}, "params.budget"},
		{map[string]string{"outages": "lte@x"}, "params.outages"},
		{map[string]string{"min_split": "100KB"}, "params.min_split"},
	} {
		if _, err := Kind.Config(v.params); err == nil || !strings.Contains(err.Error(), v.want) {
			t.Errorf("%v: %v, want an error naming %s", v.params, err, v.want)
		}
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
