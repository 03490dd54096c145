package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/pageload"
	"github.com/shunt-net/shunt/internal/shared"
	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/fetch"
	"github.com/shunt-net/shunt/replay/site"
)

func googleGraph(t *testing.T) string {
	t.Helper()
	file, err := shared.Path("pages", "www.google.com.hk_.json")
	if err != nil {
		t.Skipf("shared pages: %v", err)
	}
	return file
}

// TestReplayLoopback loads a page once per protocol from replay's own
// loopback server and checks the JSON line against the page.
func TestReplayLoopback(t *testing.T) {
	file := googleGraph(t)
	jsonFile := filepath.Join(t.TempDir(), "loads.jsonl")
	for _, args := range [][]string{
		{"--proto", "h1", "--conns", "2", "--tls=false"},
		{"--proto", "h2", "--streams", "4"},
		{"--proto", "h2", "--streams", "4", "--schedule", "sequential", "--pacing"},
		{"--proto", "h3", "--compute"},
	} {
		var out strings.Builder
		if err := runReplay(t.Context(), append([]string{file, "--json", jsonFile}, args...), &out, io.Discard); err != nil {
			t.Fatalf("replay %v: %v", args, err)
		}
		if !strings.Contains(out.String(), "PLT ") {
			t.Errorf("replay %v printed no PLT:\n%s", args, out.String())
		}
	}
	f, err := os.Open(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var labels []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec experiment.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		r, err := pageload.LoadOf(rec.Info)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Protocol.Driver != "replay" || rec.Scenario != "shunt replay" || rec.ID == "" {
			t.Errorf("record of %+v is not the replay driver's", rec.Run)
		}
		labels = append(labels, rec.Info["transport"]+"/"+rec.Info["schedule"]+"/"+rec.Info["server_tcp_pacing"])
		if r.Bytes != 74000 || len(r.Objects) != 8 || r.PLT <= 0 || rec.Metrics["plt"] != r.PLT.Seconds() {
			t.Errorf("%s: %d bytes, %d objects, PLT %v (metric %v)", rec.Info["transport"], r.Bytes, len(r.Objects), r.PLT, rec.Metrics["plt"])
		}
		for _, o := range r.Objects {
			if !(o.Ready <= o.Request && o.Request <= o.FirstByte && o.FirstByte <= o.Done && o.Done <= r.PLT) {
				t.Errorf("%s: object %s times out of order: %+v", rec.Info["transport"], o.ID, o)
			}
		}
	}
	want := "h1-2//false h2-4/interleaved/false h2-4-seq/sequential/true h3-100/interleaved/false"
	if got := strings.Join(labels, " "); got != want {
		t.Errorf("transport/schedule/pacing %q, want %q", got, want)
	}
}

// TestServePageH3 serves a page with `shunt serve --page --h3` and loads it
// over HTTP/3 after finding the port in the TCP response's Alt-Svc.
func TestServePageH3(t *testing.T) {
	file := googleGraph(t)
	base := startServe(t, "--tls", "--h3", "--page", file)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := page.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	insecure := &tls.Config{InsecureSkipVerify: true} // serve's self-signed certificate
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: insecure}, Timeout: 10 * time.Second}
	resp, err := c.Get(base + site.URLPath(p.Name, p.Objects[0].Path))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := `h3=":` + u.Port() + `"`; resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Alt-Svc"), want) {
		t.Fatalf("TCP response %s, Alt-Svc %q; want 200 and %s", resp.Status, resp.Header.Get("Alt-Svc"), want)
	}
	f, err := fetch.New(fetch.Config{Proto: fetch.H3, Addr: u.Host, TLSConfig: insecure, Page: p.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err := replay.Run(ctx, p, f, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes != p.TotalSize() || !strings.HasPrefix(f.Protocol(), "HTTP/3") {
		t.Errorf("%d of %d bytes over %q", r.Bytes, p.TotalSize(), f.Protocol())
	}
}

// TestReplayRecordsFeedTheReport turns two replay loads' --json lines into
// a report, as a sweep's runs would be.
func TestReplayRecordsFeedTheReport(t *testing.T) {
	file := googleGraph(t)
	jsonFile := filepath.Join(t.TempDir(), "loads.jsonl")
	for _, proto := range []string{"h1", "h2", "h2"} {
		if err := runReplay(t.Context(), []string{file, "--proto", proto, "--json", jsonFile}, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "report")
	var out strings.Builder
	if err := runBenchReport([]string{dir, jsonFile}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"h1-6", "h2-100", "n=2", "plt"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report table lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
}

// Bad options are refused before anything runs, named by their flag.
func TestReplayBadOptions(t *testing.T) {
	file := googleGraph(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--conns", "0"}, `--conns "0": want at least 1`},
		{[]string{"--streams", "0"}, `--streams "0": want at least 1`},
		{[]string{"--proto", "h4"}, `want h1, h2 or h3`},
		{[]string{"--proto", "h1", "--schedule", "sequential"}, "HTTP/1.1 has no streams"},
		{[]string{"--browser", "--conns", "2"}, "--conns: the replay's option"},
		{[]string{"--json", filepath.Join(t.TempDir(), "no", "dir", "x.jsonl")}, "--json"},
		{[]string{"--url", "https://127.0.0.1:1", "--delay", "10ms"}, "link options"},
	} {
		err := runReplay(t.Context(), append([]string{file}, tc.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("replay %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestServePageByUrgency asks `shunt serve --page` for google's objects in
// one write, the first at u=0 and the rest at "u=2, i": the first comes
// whole before any other (the page server answers inline through serve's
// router; behind a ServeMux its handler goroutines answered the last
// request first). Files outside the pages are still served.
func TestServePageByUrgency(t *testing.T) {
	file := googleGraph(t)
	p, err := page.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("file"), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(startServe(t, "--root", root, "--page", file))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []testpages.Request
	for _, r := range p.Resources()[:8] {
		reqs = append(reqs, testpages.Request{Path: site.URLPath(p.Name, r.Path), Size: r.Size, Priority: "u=2, i"})
	}
	reqs[0].Priority = "u=0"
	reqs = append(reqs, testpages.Request{Path: "/f.txt", Size: 4, Priority: "u=2, i"})
	for rep := range 10 {
		if order := testpages.DataOrder(t, u.Host, reqs); testpages.Interleaved(order, 1) {
			t.Fatalf("repetition %d: DATA frames by stream %v: another object's bytes before the u=0 one's end", rep, order)
		}
	}
}
