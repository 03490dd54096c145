package proxy

import (
	"strings"
	"testing"

	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		in, name, iface, addr, err string
	}{
		{in: "wifi=eth0", name: "wifi", iface: "eth0"},
		{in: "lte=10.1.0.2", name: "lte", addr: "10.1.0.2"},
		{in: "v6=fd00::2", name: "v6", addr: "fd00::2"},
		{in: "eth1", iface: "eth1"},
		{in: "10.2.0.2", addr: "10.2.0.2"},
		{in: "", err: "want NAME"},
		{in: "=eth0", err: "want NAME"},
		{in: "wifi=", err: "want NAME"},
		{in: "a=b=c", err: "want NAME"},
	} {
		p, err := ParsePath(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePath(%q) = %+v, %v; want error %q", tc.in, p, err, tc.err)
			}
			continue
		}
		addr := ""
		if p.LocalAddr.IsValid() {
			addr = p.LocalAddr.String()
		}
		if err != nil || p.Name != tc.name || p.Interface != tc.iface || addr != tc.addr {
			t.Errorf("ParsePath(%q) = %+v, %v", tc.in, p, err)
		}
		if got := FormatPath(p); got != tc.in {
			t.Errorf("FormatPath(ParsePath(%q)) = %q", tc.in, got)
		}
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"wifi=eth0", "lte=10.1.0.2", "eth1", "v6=fd00::2", "a=b=c", "=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		q, err := ParsePath(FormatPath(p))
		if err != nil || FormatPath(q) != FormatPath(p) || q.Name != p.Name || q.Interface != p.Interface || q.LocalAddr != p.LocalAddr {
			t.Fatalf("%q: parsed %+v, formatted %q, reparsed %+v, %v", s, p, FormatPath(p), q, err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	a, _ := ParsePath("a=eth0")
	b, _ := ParsePath("a=eth1")
	for _, tc := range []struct {
		c   Config
		err string
	}{
		{Config{Listen: "127.0.0.1:0"}, "Paths"},
		{Config{Listen: "nohost", Paths: []mph2.Path{a}}, "Listen"},
		{Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{a, b}}, "two paths named"},
		{Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{a}, SplitMin: -1}, "negative"},
		{Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{a}, Intercept: &Intercept{}}, "no CA"},
		{Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{a}, Intercept: &Intercept{CA: &CA{}}}, "Policy"},
		{Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{a}, Intercept: &Intercept{CA: &CA{}}, Policy: &hints.Policy{}, TLS: true}, "cleartext"},
		{Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{budgeted(a, -1)}}, "negative"},
		{Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{budgeted(a, 1000)}, Policy: &hints.Policy{}}, "budget= in its rules"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want error %q", tc.c, err, tc.err)
		}
	}
	if err := (Config{Listen: "127.0.0.1:0", Paths: []mph2.Path{budgeted(a, 1000)}}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func budgeted(p mph2.Path, n int64) mph2.Path {
	p.Budget = n
	return p
}
