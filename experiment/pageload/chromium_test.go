package pageload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/replay/browser"
)

// Chromium through shunt proxy with a policy, on loopback: every object
// arrives whole (Run checks lengths), and the classes the proxy reads from
// Chromium's headers are the page model's for the document, the style
// sheet, the parser-blocking script and the image. The model's async
// script is a plain <script src> in the generated HTML, so Chromium asks
// for it as a blocking one: the one mismatch. Both ways: an HTTPS proxy
// for the http:// site, and a cleartext one that terminates the CONNECT
// to the https:// site with its own CA, which Chromium trusts by key.
func TestChromiumThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	if err := browser.Available(""); err != nil {
		t.Skipf("needs Chromium at %s: %v (bash scripts/setup installs it)", browser.DefaultBinary, err)
	}
	file := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(file, []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := experiment.Object{Name: file}
	for _, via := range []string{"proxy", "intercept"} {
		t.Run(via, func(t *testing.T) {
			c, err := Chromium.Config(map[string]string{"via": via, "policy": "urgent-fast"})
			if err != nil {
				t.Fatal(err)
			}
			env, err := emulated.LocalEnv(t.TempDir(), obj)
			if err != nil {
				t.Fatal(err)
			}
			s, err := StartChromium(context.Background(), env, c)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := s.Run(ctx, &experiment.Run{Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts["classified"] != 5 || res.Counts["class_right"] != 4 || res.Counts["urgent_right"] != 4 || res.Info["http"] != "h2" {
				t.Errorf("via %s: counts %v, protocol %q", via, res.Counts, res.Info["http"])
			}
			if w := res.Info["class_wrong"]; !strings.HasSuffix(w, "/async.js=script/async-script") || strings.Contains(w, " ") {
				t.Errorf("mismatches %q, want the async script's only", w)
			}
			if res.Metrics["plt"] <= 0 || res.Metrics["dcl"] <= 0 || res.Metrics["dcl"] > res.Metrics["plt"] {
				t.Errorf("metrics %v", res.Metrics)
			}
		})
	}
}
