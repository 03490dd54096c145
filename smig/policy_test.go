package smig

import "testing"

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{
		"nomig":      {},
		"migsw":      {Kind: MigSW, Threshold: DefaultThreshold},
		"MigSW:2m":   {Kind: MigSW, Threshold: 2 << 20},
		"migsp":      {Kind: MigSP, AfterBytes: DefaultAfterBytes},
		"migsp:1000": {Kind: MigSP, AfterBytes: 1000},
		"migcp:512k": {Kind: MigCP, Threshold: 512 << 10},
	} {
		got, err := ParsePolicy(in)
		if err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"migxx", "migsw:abc", "nomig:5", "migsp:-1"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", bad)
		}
	}
}

func TestPolicyDecisions(t *testing.T) {
	sw := Policy{Kind: MigSW, Threshold: 1000}
	sp := Policy{Kind: MigSP, AfterBytes: 100}
	cp := Policy{Kind: MigCP, Threshold: 1000}
	for _, c := range []struct {
		p        Policy
		cl, sent int64
		server   bool
		client   bool
	}{
		{sw, 999, 0, false, false},
		{sw, 1000, 0, true, false},
		{sw, -1, 1 << 30, false, false}, // unknown size: MigSW cannot tell
		{sp, -1, 99, false, false},
		{sp, -1, 100, true, false},
		{sp, 10, 100, true, false},
		{cp, 1000, 0, false, true},
		{cp, -1, 0, false, false},
		{Policy{}, 1 << 40, 1 << 40, false, false},
	} {
		if got := c.p.ServerMigrate(c.cl, c.sent); got != c.server {
			t.Errorf("%v.ServerMigrate(%d, %d) = %v", c.p, c.cl, c.sent, got)
		}
		if got := c.p.ClientMigrate(c.cl); got != c.client {
			t.Errorf("%v.ClientMigrate(%d) = %v", c.p, c.cl, got)
		}
	}
}

func TestPolicySplit(t *testing.T) {
	for _, c := range []struct {
		in, server, client string
	}{
		{"migsw:1M", "migsw:1M", "nomig"},
		{"migsp:100K", "migsp:100K", "nomig"},
		{"migcp:1M", "nomig", "migcp:1M"},
		{"nomig", "nomig", "nomig"},
	} {
		p, err := ParsePolicy(c.in)
		if err != nil {
			t.Fatal(err)
		}
		want := func(s string) Policy {
			q, err := ParsePolicy(s)
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		if srv, cli := p.Split(); srv != want(c.server) || cli != want(c.client) {
			t.Errorf("%s: split into server %+v, client %+v; want %s and %s", c.in, srv, cli, c.server, c.client)
		}
	}
}
