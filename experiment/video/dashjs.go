package video

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/shunt-net/shunt/dash"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/proxy"
	"github.com/shunt-net/shunt/replay/browser"
)

// DashJSFile is where scripts/setup installs the reference player, npm's
// dashjs.
const DashJSFile = "/opt/shunt/dashjs/node_modules/dashjs/dist/modern/umd/dash.all.min.js"

// dashjsPage plays /video.mpd with /dash.all.min.js and reports the
// playback (window.shuntDone).
//
//go:embed dashjs.html
var dashjsPage []byte

// playerHandler serves the dash.js page and script beside the video, and
// the manifest without its byte ranges (player.mpd): each segment is a
// file, so dash.js then asks for whole files with plain GETs, which a proxy
// may split over paths, where a Range request is the application's own.
func playerHandler(video http.Handler, script string, mpd []byte) http.Handler {
	plain := byteRanges.ReplaceAll(mpd, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/player.mpd", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/dash+xml")
		w.Write(plain)
	})
	mux.HandleFunc("/player.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(dashjsPage)
	})
	mux.HandleFunc("/dash.all.min.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, script) })
	mux.Handle("/", video)
	return mux
}

// byteRanges are a SegmentList's byte-range attributes.
var byteRanges = regexp.MustCompile(` (mediaRange|range)="[^"]*"`)

// checkDashJS says whether the reference player can run here, and its
// version.
func checkDashJS(script string) (string, error) {
	if err := browser.Available(""); err != nil {
		return "", err
	}
	if _, err := os.Stat(script); err != nil {
		return "", &experiment.FieldError{Field: "params.dashjs", Value: script, Err: fmt.Errorf("%w (scripts/setup installs npm's dashjs there)", err)}
	}
	// dist/modern/umd/dash.all.min.js sits three folders below package.json.
	pkg, _ := os.ReadFile(filepath.Join(filepath.Dir(script), "..", "..", "..", "package.json"))
	if m := regexp.MustCompile(`"version":\s*"([^"]+)"`).FindSubmatch(pkg); m != nil {
		return string(m[1]), nil
	}
	return "unknown version", nil
}

// jsPlayback is what dashjs.html reports.
type jsPlayback struct {
	Startup  float64      `json:"startup"`
	Duration float64      `json:"duration"`
	End      string       `json:"end"`
	Stalls   [][2]float64 `json:"stalls"`
	Segs     []struct {
		Path   string  `json:"path"`
		Media  bool    `json:"media"`
		BPS    int64   `json:"bps"`
		Start  float64 `json:"start"`
		Fetch  float64 `json:"fetch"`
		Bytes  int64   `json:"bytes"`
		SHA256 string  `json:"sha256"`
	} `json:"segs"`
	Abandoned []jsAbandoned `json:"abandoned"`
	Errors    []string      `json:"errors"`
}

// jsAbandoned is a segment download dash.js gave up: its rung, when it was
// asked for and given up (seconds since the player started), and the bytes
// it had by then.
type jsAbandoned struct {
	Path  string  `json:"path"`
	BPS   int64   `json:"bps"`
	Start float64 `json:"start"`
	At    float64 `json:"at"`
	Bytes int64   `json:"bytes"`
}

// AbandonedInfo is the Info key of dash.js's abandoned downloads, each
// START-AT:KBPS:BYTES (seconds since the player started).
const AbandonedInfo = "abandoned"

// EndInfo is the Info key of how a dash.js playback ended: "ended" (the
// element's event), or "position at ..." when it stood within a frame of
// the duration without that event (with the element's readyState and when
// dash.js ended the MediaSource, if it did).
const EndInfo = "dashjs_end"

func abandonedInfo(as []jsAbandoned) string {
	var f []string
	for _, a := range as {
		f = append(f, fmt.Sprintf("%.2f-%.2f:%d:%d", a.Start, a.At, a.BPS/1000, a.Bytes))
	}
	return strings.Join(f, ",")
}

// playDashJS plays the video with dash.js in a fresh headless Chromium in
// the client namespace: directly (mode single: Chromium cannot bind a
// source address, so it takes the first path, the main route), over kernel
// MPTCP (mode mptcp: mptcpize makes its TCP sockets MPTCP ones), or through
// shunt proxy over every path (mode proxy).
// Every segment is checked against the served file's length and SHA-256,
// and every segment of the manifest must have been played. start is called
// just before Chromium is launched.
func (s *Session) playDashJS(ctx context.Context, start func() error) (*dash.Result, *jsPlayback, error) {
	stderr := &limitedBuffer{max: 4 << 10}
	cfg := browser.Config{Proto: "h2", Command: s.env.Net.Client().Command, Stderr: stderr, SecureOrigins: []string{"http://" + s.addr}}
	switch s.c.Mode {
	case "mptcp":
		cfg.Wrap = []string{"mptcpize", "run"}
	case "proxy":
		addr, stop, err := origin.StartProxy(s.env, s.addr, s.c.CC, proxy.Config{})
		if err != nil {
			return nil, nil, err
		}
		defer stop()
		cfg.Proxy = addr
	}
	if err := start(); err != nil {
		return nil, nil, err
	}
	page := fmt.Sprintf("http://%s/player.html?stuck=%g", s.addr, s.c.StuckAfter.Seconds())
	v, err := browser.Evaluate(ctx, cfg, page, "window.shuntDone")
	if err != nil {
		return nil, nil, fmt.Errorf("dash.js in Chromium: %w (Chromium said: %s)", err, stderr.String())
	}
	var pb jsPlayback
	if err := json.Unmarshal([]byte(v), &pb); err != nil {
		return nil, nil, fmt.Errorf("dash.js playback report %q: %w", v, err)
	}
	if len(pb.Errors) > 0 {
		return nil, nil, fmt.Errorf("dash.js: %v", pb.Errors)
	}
	res := &dash.Result{Media: time.Duration(pb.Duration * float64(time.Second))}
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	res.Startup = sec(pb.Startup)
	for _, st := range pb.Stalls {
		res.Stalls = append(res.Stalls, dash.Stall{At: sec(st[0]), Duration: sec(st[1])})
	}
	for _, g := range pb.Segs {
		if err := s.verifyFile(g.Path, g.Bytes, g.SHA256); err != nil {
			return nil, nil, fmt.Errorf("dash.js segment %s: %w", g.Path, err)
		}
		if !g.Media {
			continue
		}
		if n := len(res.Segments); n > 0 && res.Segments[n-1].Bitrate != g.BPS {
			res.Switches++
		}
		res.Segments = append(res.Segments, dash.SegmentLog{Index: len(res.Segments), Bitrate: g.BPS, Bytes: g.Bytes, Start: sec(g.Start), Fetch: sec(g.Fetch)})
	}
	if want := len(s.m.Reps[0].Segments); len(res.Segments) != want {
		return nil, nil, fmt.Errorf("dash.js played %d media segments of the manifest's %d", len(res.Segments), want)
	}
	return res, &pb, nil
}

// verifyFile checks what a player received of a served file.
func (s *Session) verifyFile(path string, n int64, sum string) error {
	got, err := hex.DecodeString(sum)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("no SHA-256 reported (%q)", sum)
	}
	return s.matches(path, [32]byte(got), n)
}

// limitedBuffer keeps the first max bytes written to it: Chromium's log,
// for an error message.
type limitedBuffer struct {
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
