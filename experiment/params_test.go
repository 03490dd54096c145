package experiment

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

type testConfig struct {
	Proto  string        `param:"proto" enum:"h1,h2" help:"HTTP version"`
	Conns  int           `param:"conns" help:"connections"`
	TLS    bool          `param:"tls" help:"TLS"`
	Chunk  Bytes         `param:"chunk_size" help:"chunk"`
	Wait   time.Duration `param:"wait" help:"wait"`
	Ratio  float64       `param:"ratio" help:"ratio"`
	hidden int
}

func defaultTestConfig() testConfig { return testConfig{Proto: "h2", Conns: 6, Chunk: 1000} }

func TestDecode(t *testing.T) {
	c := defaultTestConfig()
	err := Decode("test", map[string]string{"proto": "h1", "conns": "3", "tls": "true", "chunk_size": "64KB", "wait": "300ms", "ratio": "0.5"}, &c)
	if err != nil {
		t.Fatal(err)
	}
	want := testConfig{Proto: "h1", Conns: 3, TLS: true, Chunk: 64000, Wait: 300 * time.Millisecond, Ratio: 0.5}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"proto": "h3"}, `params.proto "h3": want h1 or h2`},
		{map[string]string{"conns": "six"}, `params.conns "six": want an integer`},
		{map[string]string{"tls": "on"}, `params.tls "on": want true or false`},
		{map[string]string{"tls": "1"}, `params.tls "1": want true or false`},
		{map[string]string{"chunk_size": "10 parsecs"}, `params.chunk_size "10 parsecs": size`},
		{map[string]string{"wait": "soon"}, `params.wait "soon": want a duration`},
		{map[string]string{"conn": "6"}, `params.conn: unknown parameter of driver test (want proto, conns, tls, chunk_size, wait or ratio)`},
	} {
		c := defaultTestConfig()
		err := Decode("test", tc.params, &c)
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%v) = %v, want a FieldError with %q", tc.params, err, tc.want)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	def := defaultTestConfig()
	c := testConfig{Proto: "h1", Conns: 6, TLS: true, Chunk: 2048, Wait: time.Second}
	p := Encode(&c, &def)
	want := map[string]string{"proto": "h1", "tls": "true", "chunk_size": "2048", "wait": "1s"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Encode = %v, want %v (only what differs from the defaults)", p, want)
	}
	back := defaultTestConfig()
	if err := Decode("test", p, &back); err != nil || back != c {
		t.Errorf("Decode(Encode(c)) = %+v, %v; want %+v", back, err, c)
	}
}

func TestFlagsShareTheDeclaration(t *testing.T) {
	c := defaultTestConfig()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	given := Flags(fs, &c, "ratio")
	if err := fs.Parse([]string{"--proto", "h1", "--tls", "--chunk-size", "1KiB"}); err != nil {
		t.Fatal(err)
	}
	if c.Proto != "h1" || !c.TLS || c.Chunk != 1024 || c.Conns != 6 {
		t.Errorf("flags set %+v", c)
	}
	if got := given(); !reflect.DeepEqual(got, []string{"chunk_size", "proto", "tls"}) {
		t.Errorf("given = %v", got)
	}
	if fs.Lookup("ratio") != nil {
		t.Error("a skipped option got a flag")
	}
	if err := fs.Parse([]string{"--proto", "h3"}); err == nil || !strings.Contains(err.Error(), "want h1 or h2") {
		t.Errorf("--proto h3: %v, want the enum's error", err)
	}
	if d := fs.Lookup("conns").DefValue; d != "6" {
		t.Errorf("default of --conns shown as %q, want 6", d)
	}
}
