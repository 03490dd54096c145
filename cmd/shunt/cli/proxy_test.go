package cli

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/mph2"
)

func TestProxyArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, "no --path"},
		{[]string{"--path", "wifi="}, "want NAME=IFACE"},
		{[]string{"--path", "a=lo", "--path", "a=lo"}, `two paths named "a"`},
		{[]string{"--path", "a=lo", "--split-min", "lots"}, "--split-min"},
		{[]string{"--path", "a=lo", "--listen", "8118"}, "Listen"},
		{[]string{"--path", "a=lo", "extra"}, "unexpected argument"},
		{[]string{"--path", "a=lo", "--mode", "fastest"}, "--mode"},
		{[]string{"--path", "a=lo", "--policy", "nosuch"}, "--policy: no policy preset"},
		{[]string{"--path", "a=lo", "--expensive", "a"}, "only to a --policy"},
		{[]string{"--path", "a=lo", "--policy", "urgent-fast", "--expensive", "b"}, `--expensive "b"`},
		{[]string{"--path", "a=lo", "--intercept-host", "x"}, "only with --intercept"},
		{[]string{"--path", "a=lo", "--policy", "urgent-fast", "--intercept", "--ca-cert", "ca.pem"}, "go together"},
		{[]string{"--path", "a=lo", "--policy", "urgent-fast", "--intercept", "--ca-cert", "/nonexistent", "--ca-key", "/nonexistent"}, "proxy CA"},
		{[]string{"--path", "a=lo", "--intercept"}, "set one"},
		{[]string{"--path", "a=lo", "--policy", "urgent-fast", "--intercept", "--tls"}, "cleartext"},
		{[]string{"--path", "a=lo", "--budget", "b=20MB"}, "--budget b: no --path b"},
		{[]string{"--path", "a=lo", "--budget", "a=0"}, "positive size"},
		{[]string{"--path", "a=lo", "--budget", "a=20MB", "--policy", "urgent-fast"}, "budget= in its rules"},
	} {
		if _, err := parseProxyArgs(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want error %q", tc.args, err, tc.err)
		}
	}
	cfg, err := parseProxyArgs([]string{"--path", "a=127.0.0.1", "--path", "b=lo", "--split-min", "1MB", "--listen", "127.0.0.1:0", "--mode", "handover", "--handover-after", "2s",
		"--budget", "b=20MB"}, io.Discard)
	if err != nil || len(cfg.Paths) != 2 || cfg.Paths[0].Name != "a" || cfg.Paths[1].Interface != "lo" || cfg.SplitMin != 1000000 || cfg.Listen != "127.0.0.1:0" ||
		cfg.Mode != mph2.ModeHandover || cfg.HandoverAfter != 2*time.Second || cfg.Paths[0].Budget != 0 || cfg.Paths[1].Budget != 20e6 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	cfg, err = parseProxyArgs([]string{"--path", "cheap=127.0.0.1", "--path", "exp=127.0.0.2", "--policy", "urgent-fast", "--expensive", "exp", "--tls"}, io.Discard)
	if err != nil || cfg.Policy == nil || cfg.Policy.Name != "urgent-fast" || !slices.Equal(cfg.Cost, []float64{0, 1}) || !cfg.TLS {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	cfg, err = parseProxyArgs([]string{"--path", "a=lo", "--policy", "urgent-fast", "--intercept", "--intercept-host", "10.0.0.1:443"}, io.Discard)
	if err != nil || cfg.Intercept == nil || cfg.Intercept.CA == nil || !slices.Equal(cfg.Intercept.Hosts, []string{"10.0.0.1:443"}) {
		t.Fatalf("config %+v, %v", cfg, err)
	}
}

// shunt proxy as a command: an object through it over two loopback paths
// (source addresses 127.0.0.1 and 127.0.0.2) is the origin's, byte for byte.
func TestProxyCommand(t *testing.T) {
	origin := startServe(t)
	px := startListening(t, "proxy", runProxy, []string{"--listen", "127.0.0.1:0", "--path", "a=127.0.0.1", "--path", "b=127.0.0.2"})
	pu, _ := url.Parse(px)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	const size = 5<<20 + 1
	res, err := c.Get(origin + "/gen/5242881")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	if err != nil || res.StatusCode != 200 || n != size || [32]byte(h.Sum(nil)) != content.Digest(size) {
		t.Fatalf("status %d, %d bytes (%v), SHA-256 ok %v", res.StatusCode, n, err, [32]byte(h.Sum(nil)) == content.Digest(size))
	}
}
