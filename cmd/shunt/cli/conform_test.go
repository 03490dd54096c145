package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/conform"
)

// shuntGet is `shunt get` in-process as a conformance client.
func shuntGet(args ...string) conform.ClientFunc {
	return func(ctx context.Context, url string) conform.Result {
		var out, errb bytes.Buffer
		err := runGet(ctx, append(append([]string(nil), args...), url), getIO{stdout: &out, stderr: &errb})
		r := conform.Result{Stdout: out.Bytes(), Stderr: errb.Bytes()}
		if err != nil {
			r.Exit = 1
			r.Stderr = append(r.Stderr, err.Error()...)
		}
		return r
	}
}

// TestConformShuntGet holds shunt's own client to every case of the client
// conformance suite, over h2c and TLS (issue 16: shunt get passes 100 %).
func TestConformShuntGet(t *testing.T) {
	for _, mode := range []struct {
		name string
		tls  bool
		args []string
	}{{"h2c", false, []string{"--h2c"}}, {"tls", true, []string{"--insecure"}}} {
		t.Run(mode.name, func(t *testing.T) {
			file, err := conform.WriteUploadFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			rep, err := conform.Run(context.Background(), shuntGet(mode.args...), "shunt get", conform.Options{TLS: mode.tls, Parallel: 8, Timeout: 20 * time.Second, // -race on a loaded CI machine
				Upload: shuntGet(append(mode.args, "--data", "@"+file)...)})
			if err != nil {
				t.Fatal(err)
			}
			pass, fail, skip := rep.Count()
			if fail+skip > 0 {
				var b bytes.Buffer
				rep.WriteText(&b, false)
				t.Errorf("%d passed, %d failed, %d skipped:\n%s", pass, fail, skip, failures(b.String()))
			}
			if pass < 146 {
				t.Errorf("%d cases passed; the suite must hold at least 146", pass)
			}
		})
	}
}

// failures keeps the report's lines about cases that did not pass.
func failures(report string) string {
	var out []string
	lines := strings.Split(report, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "FAIL") || strings.HasPrefix(strings.TrimSpace(l), "SKIP") {
			out = append(out, lines[i:min(i+3, len(lines))]...)
		}
	}
	return strings.Join(out, "\n")
}

func TestConformCommand(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "out.xml")
	// A client that never connects fails every case it is given; the
	// command says so with its exit status, the text and the XML.
	var out bytes.Buffer
	err := runConform(context.Background(), []string{"--client", "--case", "http2/6.5/", "--run", "true {url}", "--junit", junit, "--timeout", "2s"}, &out, io.Discard)
	if err != errConformFailed {
		t.Fatalf("err = %v, want %v\n%s", err, errConformFailed, out.String())
	}
	if !strings.Contains(out.String(), "FAIL http2/6.5/1") || !strings.Contains(out.String(), "never sent an HTTP/2 request") {
		t.Errorf("report does not say why http2/6.5/1 failed:\n%s", out.String())
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(x, []byte(`<testcase name="http2/6.5/1: a SETTINGS ACK with a payload"`)) || !bytes.Contains(x, []byte("<failure ")) {
		t.Errorf("JUnit XML lacks the case or its failure:\n%s", x)
	}
	for _, bad := range [][]string{
		{"--run", "curl"},                    // no {url}
		{"--client", "--run", "curl"},        // no {url}
		{"--client", "--tls", "--h2c"},       // both
		{"--client", "--case", "nosuch/1.2"}, // matches nothing
		{"--client", "--timeout", "0s"},
		{"--client", "--run", "curl {url}", "--run-upload", "curl {url}"}, // no {file}
	} {
		if err := runConform(context.Background(), bad, io.Discard, io.Discard); err == nil || err == errConformFailed {
			t.Errorf("conform %q: err = %v, want a usage error", bad, err)
		}
	}
	out.Reset()
	if err := runConform(context.Background(), []string{"--list", "--case", "hpack/"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "hpack/") || strings.Contains(out.String(), "http2/") {
		t.Errorf("--list: %q", out.String())
	}
}
