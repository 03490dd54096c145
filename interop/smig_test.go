package interop

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/replay/browser"
	"github.com/shunt-net/shunt/smig"
	"golang.org/x/net/http2"
)

// The server policies under test; thresholds well below the objects' sizes,
// so a peer that spoke SMig would see migrations.
var smigServerPolicies = []string{"migsw:100K", "migsp:50K"}

// smigStatsLine is what `shunt serve --smig` prints on exit.
var smigStatsLine = regexp.MustCompile(`smig: (\d+) migrations \(\d+ asked by clients\), \d+ refused, (\d+) SMig frames sent`)

// smigStats stops srv and returns how many streams it migrated and how many
// SMig frames it sent.
func smigStats(t *testing.T, srv *shuntServer) (migrations, frames int) {
	t.Helper()
	stderr := srv.stop()
	m := smigStatsLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("shunt serve --smig printed no SMig counters on exit; stderr:\n%s", stderr)
	}
	migrations, _ = strconv.Atoi(m[1])
	frames, _ = strconv.Atoi(m[2])
	return migrations, frames
}

// wantPlainServer checks that srv, which only peers without SMig talked to,
// never sent them an SMig frame, let alone migrated a stream.
func wantPlainServer(t *testing.T, srv *shuntServer, peer string) {
	t.Helper()
	if mig, frames := smigStats(t, srv); mig != 0 || frames != 0 {
		t.Errorf("%s against shunt serve --smig: %d migrations, %d SMig frames sent; want 0 and 0 (plain HTTP/2)", peer, mig, frames)
	}
}

// frameTrace summarises a shunt get -v frame trace.
type frameTrace struct {
	conns    int  // SETTINGS sent without ACK: one per connection
	smigSent bool // the client announced SMig
	smigRecv bool // the server announced SMig
	unknown  int  // frames received of a type HTTP/2 does not define (SMig's)
}

var traceLine = regexp.MustCompile(`^\s*[\d.]+ms (send|recv) (.*)$`)

func parseTrace(out string) frameTrace {
	known := map[string]bool{}
	for ft := http2.FrameData; ft <= http2.FrameContinuation; ft++ {
		known[ft.String()] = true
	}
	smigSetting := http2.Setting{ID: smig.SettingSMig, Val: smig.Version}.String()
	var tr frameTrace
	for _, line := range strings.Split(out, "\n") {
		m := traceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		typ, _, _ := strings.Cut(m[2], " ")
		if typ == "SETTINGS" && !strings.Contains(m[2], "ACK") {
			if m[1] == "send" {
				tr.conns++
				tr.smigSent = tr.smigSent || strings.Contains(m[2], smigSetting)
			} else {
				tr.smigRecv = tr.smigRecv || strings.Contains(m[2], smigSetting)
			}
		}
		if m[1] == "recv" && !known[typ] {
			tr.unknown++
		}
	}
	return tr
}

// TestSMigObservables: the counters and the frame trace the other SMig
// tests read do show SMig when both ends speak it. shunt get --smig nomig
// against shunt serve --smig: the server migrates /gen/3MB to the client's
// pooled connection.
func TestSMigObservables(t *testing.T) {
	big := object{"/gen/3MB", generated(t, "3MB")}
	for _, policy := range smigServerPolicies {
		t.Run(policy, func(t *testing.T) {
			srv := startShunt(t, t.TempDir(), false, "--smig", policy)
			out := fetchCase{obj: big}.checkGet(t, srv.base, false, "--smig", "nomig", "-v")
			if tr := parseTrace(out); tr.conns < 2 || !tr.smigSent || !tr.smigRecv || tr.unknown == 0 {
				t.Errorf("shunt get --smig nomig -v against shunt serve --smig %s: trace %+v; want 2+ connections, SMig announced both ways, SMig frames received", policy, tr)
			}
			if mig, frames := smigStats(t, srv); mig == 0 || frames == 0 {
				t.Errorf("shunt serve --smig %s after shunt get --smig nomig of %s: %d migrations, %d SMig frames sent; want both > 0", policy, big.path, mig, frames)
			}
		})
	}
}

// TestSMigClientsAgainstShunt: curl and nghttp, which do not speak SMig,
// download large objects whole and in ranges from shunt serve --smig over
// TLS and h2c, and the server stays plain HTTP/2 with them.
func TestSMigClientsAgainstShunt(t *testing.T) {
	needTools(t, "curl", "nghttp")
	root := t.TempDir()
	file := object{"/file.bin", writeRandom(t, root, "file.bin", 300_000)}
	big := object{"/gen/3MB", generated(t, "3MB")}
	cases := []fetchCase{
		{obj: file}, {obj: file, rng: "1000-270999"},
		{obj: big}, {obj: big, rng: "1048576-2097151"}, {obj: big, rng: "-200000"},
	}
	clients := []struct {
		name  string
		fetch func(context.Context, peers.Fetch) (peers.Response, error)
	}{{"curl", peers.Curl}, {"nghttp", peers.Nghttp}}
	for _, policy := range smigServerPolicies {
		for _, tls := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", policy, tls), func(t *testing.T) {
				srv := startShunt(t, root, tls, "--smig", policy)
				for _, client := range clients {
					for _, c := range cases {
						c.check(t, client.name, client.fetch, srv.base)
					}
				}
				if !tls {
					// Upgrade: the server's side of SMig starts from h2c's
					// SETTINGS in HTTP2-Settings, not a preface.
					fetchCase{obj: big, upgrade: true}.check(t, "nghttp", peers.Nghttp, srv.base)
				}
				wantPlainServer(t, srv, "curl and nghttp")
			})
		}
	}
}

// TestSMigH2spec: SMig changes nothing h2spec can see.
func TestSMigH2spec(t *testing.T) {
	needTools(t, "h2spec")
	root := t.TempDir()
	for _, policy := range smigServerPolicies {
		for _, tls := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", policy, tls), func(t *testing.T) {
				srv := startShunt(t, root, tls, "--smig", policy)
				checkH2spec(t, srv, tls)
				wantPlainServer(t, srv, "h2spec")
			})
		}
	}
}

// smigPage fetches the objects it is given in its query string (path and
// optional range, joined by "~"), hashes each with crypto.subtle and writes
// a line "STATUS SHA256 PROTOCOL" per object into #out, where --dump-dom
// shows it.
const smigPage = `<!doctype html><html><body><pre id="out">pending</pre><script>
(async () => {
  const lines = [];
  for (const spec of new URLSearchParams(location.search).getAll("get")) {
    const [path, range] = spec.split("~");
    const r = await fetch(path, range ? {headers: {Range: "bytes=" + range}} : {});
    const d = await crypto.subtle.digest("SHA-256", await r.arrayBuffer());
    const hex = Array.from(new Uint8Array(d), b => b.toString(16).padStart(2, "0")).join("");
    const proto = performance.getEntriesByName(r.url).pop()?.nextHopProtocol;
    lines.push(r.status + " " + hex + " " + proto);
  }
  document.getElementById("out").textContent = lines.join("\n");
})().catch(e => { document.getElementById("out").textContent = "error " + e; });
</script></body></html>`

var smigPageOut = regexp.MustCompile(`(?s)<pre id="out">(.*?)</pre>`)

// TestSMigChromiumAgainstShunt: headless Chromium loads a page from shunt
// serve --tls --smig migsw:100K whose script downloads /gen/3MB whole and in
// a range and hashes the bytes; the hashes match the generator's, the
// protocol is h2 and the server stays plain HTTP/2.
func TestSMigChromiumAgainstShunt(t *testing.T) {
	if err := browser.Available(""); err != nil {
		t.Skipf("skipping: %v", err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "smig.html"), []byte(smigPage), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startShunt(t, root, true, "--smig", "migsw:100K")
	const rng = "1000000-2999999"
	body := generated(t, "3MB")
	part, _, err := peers.RangeOf(body, rng)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("200 %x h2\n206 %x h2", content.Digest(int64(len(body))), sha256.Sum256(part))

	url := srv.url("/smig.html?get=/gen/3MB&get=/gen/3MB~" + rng)
	got, err := dumpDOM(timeout(t, time.Minute), t.TempDir(), url)
	if err != nil {
		t.Fatal(err)
	}
	m := smigPageOut.FindStringSubmatch(got)
	if m == nil || m[1] != want {
		t.Errorf("chromium %s: page reported\n%q\nwant (status, SHA-256, protocol of /gen/3MB and of its range %s)\n%q", url, m, rng, want)
	}
	wantPlainServer(t, srv, "chromium")
}

// dumpDOM loads url in a fresh headless Chromium and returns the DOM once
// the page is idle: virtual time stands still while fetches are pending,
// so the page's script finishes within the budget.
func dumpDOM(ctx context.Context, profile, url string) (string, error) {
	cmd := exec.CommandContext(ctx, browser.DefaultBinary, "--headless", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-quic", "--ignore-certificate-errors", "--user-data-dir="+profile,
		"--virtual-time-budget=30000", "--dump-dom", url)
	// Its own process group, so its zygote and renderers die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		return "", fmt.Errorf("chromium --dump-dom %s: %v\n%s", url, err, stderr)
	}
	return string(out), nil
}

// TestSMigShuntGetAgainstPeers: shunt get --smig (asking for migrations,
// and not) downloads whole files and ranges from nginx and h2o over TLS and
// h2c as plain HTTP/2: the bytes are right, and the trace shows one
// connection and no SMig frame.
func TestSMigShuntGetAgainstPeers(t *testing.T) {
	needShunt(t)
	root := t.TempDir()
	small := object{"/small.bin", writeRandom(t, root, "small.bin", 20_000)}
	big := object{"/big.bin", writeRandom(t, root, "big.bin", 3_000_000)}
	cases := []fetchCase{
		{obj: small}, {obj: big}, {obj: big, rng: "65535-2500000"}, {obj: big, rng: "-150000"},
	}
	eachPeer(t, root, func(t *testing.T, p *peers.Peer, server string, tls bool) {
		for _, policy := range []string{"migcp:100K", "nomig"} {
			for _, c := range cases {
				c.checkGet(t, p.URL(""), tls, "--smig", policy)
			}
		}
		out := fetchCase{obj: big}.checkGet(t, p.URL(""), tls, "--smig", "migcp:100K", "-v")
		if tr := parseTrace(out); tr.conns != 1 || !tr.smigSent || tr.smigRecv || tr.unknown != 0 {
			t.Errorf("shunt get --smig migcp:100K -v %s against %s: trace %+v; want 1 connection, SMig announced by the client only, no SMig frame", big.path, server, tr)
		}
	})
}
