package interop

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/conform"
)

// goNetHTTP is Go's net/http client (its bundled HTTP/2) as a conformance
// client, in-process: h2c with prior knowledge, or TLS with ALPN h2.
// With upload set, it POSTs that file.
func goNetHTTP(useTLS bool, upload string) conform.ClientFunc {
	return func(ctx context.Context, url string) conform.Result {
		p := new(http.Protocols)
		if useTLS {
			p.SetHTTP2(true)
		} else {
			p.SetUnencryptedHTTP2(true)
		}
		tr := &http.Transport{Protocols: p, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableCompression: true}
		defer tr.CloseIdleConnections()
		fail := func(err error) conform.Result { return conform.Result{Exit: 1, Stderr: []byte(err.Error())} }
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if upload != "" {
			var body []byte
			if body, err = os.ReadFile(upload); err != nil {
				return fail(err)
			}
			req, err = http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		}
		if err != nil {
			return fail(err)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return fail(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return conform.Result{Exit: 1, Stdout: body, Stderr: []byte(err.Error())}
		}
		if resp.StatusCode != http.StatusOK {
			return conform.Result{Exit: 1, Stdout: body, Stderr: []byte(resp.Status)}
		}
		return conform.Result{Stdout: body}
	}
}

// conformPeer is a client the suite runs against, with the cases it is
// known not to pass (docs/results.md, issue 16, says how it fails each) and
// those whose verdict depends on timing (floods racing the client's queue
// limits), which may go either way.
type conformPeer struct {
	name     string
	tool     string // the program that must be installed; "" in-process
	tls      bool
	c, up    conform.Client // up POSTs the upload file
	known    []string
	unstable []string
}

// TestConformPeers runs the client conformance suite against curl, nghttp
// and Go's net/http, over h2c and TLS. Each peer must fail exactly the cases
// docs/results.md lists for it: a new failure is a regression of the peer
// or of the suite, a new pass a table to update.
func TestConformPeers(t *testing.T) {
	file, err := conform.WriteUploadFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(line string) conform.Command { return conform.Command(strings.ReplaceAll(line, "{file}", file)) }
	for _, p := range []conformPeer{
		{name: "curl", tool: "curl", c: cmd("curl -s --http2-prior-knowledge {url}"), up: cmd("curl -s --http2-prior-knowledge --data-binary @{file} {url}"), known: curlKnown},
		{name: "curl", tool: "curl", tls: true, c: cmd("curl -sk --http2 {url}"), up: cmd("curl -sk --http2 --data-binary @{file} {url}"), known: curlKnown},
		{name: "nghttp", tool: "nghttp", c: cmd("nghttp {url}"), up: cmd("nghttp -d {file} {url}"), known: nghttpKnown, unstable: nghttpUnstable},
		{name: "nghttp", tool: "nghttp", tls: true, c: cmd("nghttp {url}"), up: cmd("nghttp -d {file} {url}"), known: nghttpKnown, unstable: nghttpUnstable},
		{name: "go", c: goNetHTTP(false, ""), up: goNetHTTP(false, file), known: goKnown},
		{name: "go", tls: true, c: goNetHTTP(true, ""), up: goNetHTTP(true, file), known: goKnown},
	} {
		mode := "h2c"
		if p.tls {
			mode = "tls"
		}
		t.Run(p.name+"/"+mode, func(t *testing.T) {
			if p.tool != "" {
				needTools(t, p.tool)
			}
			rep, err := conform.Run(context.Background(), p.c, p.name, conform.Options{TLS: p.tls, Parallel: 8, Upload: p.up})
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			rep.WriteText(&text, false)
			if testing.Verbose() || os.Getenv("CONFORM_REPORT") != "" {
				t.Log("\n" + text.String())
			}
			var failed []string
			for _, r := range rep.Results {
				if r.Verdict != conform.Pass && !slices.Contains(p.unstable, r.Case.ID) {
					failed = append(failed, r.Case.ID)
				}
			}
			if extra, fixed := diff(failed, p.known); len(extra)+len(fixed) > 0 {
				t.Errorf("%s over %s: failed %d cases; not in the known list: %v; known but passed: %v\n%s",
					p.name, mode, len(failed), extra, fixed, failureLines(text.String()))
			}
		})
	}
}

// diff returns what is in got and not in want, and the reverse.
func diff(got, want []string) (extra, missing []string) {
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	return extra, missing
}

// failureLines keeps the report's lines about cases that did not pass.
func failureLines(report string) string {
	var out []string
	lines := strings.Split(report, "\n")
	for i, l := range lines {
		if f := strings.TrimSpace(l); strings.HasPrefix(f, "FAIL") || strings.HasPrefix(f, "SKIP") {
			out = append(out, lines[i:min(i+3, len(lines))]...)
		}
	}
	return strings.Join(out, "\n")
}

// The cases each peer does not pass, the same over h2c and TLS (curl
// 7.88.1 and nghttp 1.52.0 of Debian 12, Go 1.26's net/http).
var (
	curlKnown = []string{
		"http2/5.3/5",                               // self-dependent HEADERS accepted
		"http2/6.8/4", "http2/6.8/5", "http2/6.8/9", // GOAWAY last stream 0: fails (exit 16), no retry
		"http2/6.9.2/1",                   // window overflow by SETTINGS: RST_STREAM, not GOAWAY
		"http2/8.2.1/9", "http2/8.2.1/10", // whitespace around a value accepted
		"http2/8.1/11", // RST_STREAM(NO_ERROR) after the response to an upload: exit 92
	}
	nghttpKnown = []string{
		"http2/5.3/5",
		"http2/6.4/4", "http2/6.4/5", "http2/6.4/6", "http2/6.8/11", // reset or cut response: exit 0
		"http2/6.4/7", "http2/6.8/4", "http2/6.8/5", "http2/6.8/9", // no retry, exit 0
		"http2/6.6/1",                  // skipped: push left enabled
		"http2/6.9.2/1",                // RST_STREAM, not GOAWAY
		"http2/10.5/7", "http2/10.5/8", // CONTINUATION floods: the request fails, exit 0, no GOAWAY
	}
	nghttpUnstable = []string{"http2/10.5/1", "http2/10.5/2"} // PING/SETTINGS floods: exit 0 without the body in some runs
	goKnown        = []string{
		"http2/5.1/2", "http2/5.1/3", "http2/5.1/4", "http2/5.1/5", "http2/5.1/10", // frames on idle streams ignored
		"http2/5.3/4", "http2/5.3/5", "http2/5.3/8", // priority errors ignored
		"http2/6.2/2",                     // HEADERS padding error: RST_STREAM, not GOAWAY
		"http2/6.5.2/2",                   // SETTINGS_ENABLE_PUSH = 1 from a server accepted
		"http2/6.8/9",                     // GOAWAY with an error code: no retry
		"http2/6.9.1/2", "http2/6.9.1/10", // stream window overflow: the client deadlocks (net/http's bundled x/net)
		"http2/6.9.2/1",                  // window overflow by SETTINGS accepted
		"http2/8.1.1/3", "http2/8.1.1/4", // bad content-length accepted
		"hpack/4.2/5", // a size update after a field, the dynamic table empty, accepted
		"http2/8.2.1/9", "http2/8.2.1/10",
		"http2/8.2.2/1", "http2/8.2.2/2", "http2/8.2.2/3", "http2/8.2.2/4", "http2/8.2.2/5", // connection-specific fields accepted
	}
)
