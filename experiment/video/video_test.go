package video

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/internal/syncio"
)

// startLocal starts the experiment with params on this machine's loopback.
func startLocal(t *testing.T, params map[string]string) *Session {
	t.Helper()
	c, err := Kind.Config(params)
	if err != nil {
		t.Fatal(err)
	}
	env, err := emulated.LocalEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), env, c)
	if err != nil {
		t.Fatalf("%v: %v", params, err)
	}
	return s
}

// makeVideo makes a 12 s video (two segments) with scripts/dash-content.
func makeVideo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg missing (bash scripts/setup installs it)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("bash", "../../scripts/dash-content", dir, "12").CombinedOutput(); err != nil {
		t.Fatalf("scripts/dash-content: %v\n%s", err, out)
	}
	return dir
}

// Every mode plays a 12 s video made by scripts/dash-content over this
// machine's loopback (one path), each segment checked against its file.
func TestPlayLocal(t *testing.T) {
	dir := makeVideo(t)
	for _, mode := range []string{"single", "mph2", "mph2-fs", "mph2-fs-bwl", "msplayer", "mhttp"} {
		params := map[string]string{"mode": mode, "content": dir, "path": "loopback", "chunk": "128KB", "cc": "cubic"}
		if mode == "mph2-fs" {
			params["abr"] = "bola"
		}
		s := startLocal(t, params)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := s.Run(ctx, &experiment.Run{})
		cancel()
		s.Close()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if res.Counts["segments"] != 2 || res.Metrics["kbit_per_s"] < 253 || len(strings.Split(res.Info["segment_kbps"], ",")) != 2 || len(strings.Split(res.Info[SegmentRateInfo], ",")) != 2 {
			t.Fatalf("%s: %+v", mode, res)
		}
		// The path's kernel counter saw every segment's bytes, plus framing.
		var kb int64
		for _, f := range strings.Split(res.Info[SegmentKBInfo+"loopback"], ",") {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", mode, SegmentKBInfo, err)
			}
			kb += n
		}
		if bytes := int64(res.Counts["bytes"]); kb < bytes/1000-2 || kb > bytes*21/20/1000 {
			t.Errorf("%s: %d kB received on the path for %d bytes of segments", mode, kb, bytes)
		}
		// MP-H2's own account of each media segment's path: first and last
		// byte, end estimate.
		if strings.HasPrefix(mode, "mph2") {
			for _, k := range []string{SegmentFirstInfo, SegmentLastInfo, SegmentBWInfo} {
				if n := len(strings.Split(res.Info[k+"loopback"], ",")); n != 2 {
					t.Errorf("%s: %s has %d entries, want 2", mode, k+"loopback", n)
				}
			}
		}
	}
}

// dash.js in headless Chromium plays a 12 s video from shunt's server on
// loopback; every segment it received is checked against its file, and
// every segment of the manifest must have played.
func TestDashJSLocal(t *testing.T) {
	if _, err := checkDashJS(DashJSFile); err != nil {
		t.Skipf("%v (bash scripts/setup installs Chromium and dash.js)", err)
	}
	dir := makeVideo(t)
	for _, mode := range []string{"single", "proxy"} {
		s := startLocal(t, map[string]string{"player": "dashjs", "mode": mode, "path": "loopback", "content": dir, "cc": "cubic"})
		if !strings.HasPrefix(s.Info()["client"], "dash.js 5.") {
			t.Errorf("client %q, want dash.js and its version", s.Info()["client"])
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := s.Run(ctx, &experiment.Run{})
		cancel()
		s.Close()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		t.Logf("dash.js %s: %v kbit/s, startup %.2f s, %v stalls, segments %s", mode, res.Metrics["kbit_per_s"], res.Metrics["startup"], res.Counts["stalls"], res.Info["segment_kbps"])
		if res.Counts["segments"] != 2 || res.Metrics["kbit_per_s"] < 253 || res.Metrics["startup"] <= 0 ||
			len(strings.Split(res.Info[SegmentRateInfo], ",")) != 2 || res.Counts["abandoned"] != 0 {
			t.Fatalf("%s: %+v", mode, res)
		}
	}
}

// runDashJS plays a 12 s video with dash.js from shunt's server on
// loopback, its handler wrapped by wrap.
func runDashJS(t *testing.T, stuckAfter string, wrap func(http.Handler) http.Handler) (experiment.Result, error) {
	t.Helper()
	if _, err := checkDashJS(DashJSFile); err != nil {
		t.Skipf("%v (bash scripts/setup installs Chromium and dash.js)", err)
	}
	dir := makeVideo(t)
	c, err := Kind.Config(map[string]string{"player": "dashjs", "mode": "single", "path": "loopback", "content": dir, "stuck_after": stuckAfter})
	if err != nil {
		t.Fatal(err)
	}
	env, err := emulated.LocalEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := start(context.Background(), env, c, wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.Run(ctx, &experiment.Run{})
}

// holdSecond calls hold before every answer for the second segment.
func holdSecond(hold func()) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "-00002.m4s") {
				hold()
			}
			h.ServeHTTP(w, r)
		})
	}
}

// A dash.js playback that stops moving fails with where it stopped, after
// stuck_after, instead of waiting for the run's timeout: here the server
// never answers the second segment.
func TestDashJSStuck(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	_, err := runDashJS(t, "3s", holdSecond(func() { <-never }))
	if err == nil || !strings.Contains(err.Error(), "playback stuck at ") || !strings.Contains(err.Error(), "segments loaded (last /") {
		t.Fatalf("error %v, want dash.js stuck, with the last segment loaded", err)
	}
	t.Log(err)
}

// A wait in the middle of the video is rebuffering, also under the rule
// that a wait with the media buffered to the end is not: here the second
// segment comes 8 s after it is asked for, after the first has played out.
func TestDashJSStallCounted(t *testing.T) {
	res, err := runDashJS(t, "30s", holdSecond(func() { time.Sleep(8 * time.Second) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v stalls (%s), rebuffering %v %%, end %s", res.Counts["stalls"], res.Info["stalls"], res.Metrics["rebuffer_pct"], res.Info[EndInfo])
	if res.Counts["stalls"] < 1 || res.Metrics["stall"] < 0.5 || res.Counts["segments"] != 2 {
		t.Fatalf("%+v: want a stall of at least 0.5 s and both segments", res)
	}
}

// A playback standing at the duration with every segment loaded has
// finished, 'ended' or not. One way to get there: dash.js can leave the
// MediaSource open after its last segment (its signalEndOfStream gives up
// while a SourceBuffer is updating and is not called again), and Chromium
// then never fires 'ended'; here endOfStream is made a no-op.
func TestDashJSEndWithoutEndedEvent(t *testing.T) {
	noEOS := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/dash.all.min.js" {
				// After the page's own script, which wraps endOfStream too.
				io.WriteString(w, `addEventListener("DOMContentLoaded", () => { MediaSource.prototype.endOfStream = function () {}; });`+"\n")
			}
			h.ServeHTTP(w, r)
		})
	}
	res, err := runDashJS(t, "5s", noEOS)
	if err != nil {
		t.Fatalf("a playback at its end with every segment loaded: %v", err)
	}
	t.Logf("%v kbit/s, %v stalls, rebuffering %v %%, end %s", res.Metrics["kbit_per_s"], res.Counts["stalls"], res.Metrics["rebuffer_pct"], res.Info[EndInfo])
	if end := res.Info[EndInfo]; !strings.HasPrefix(end, "position at 1") || !strings.Contains(end, "endOfStream never called") ||
		res.Counts["segments"] != 2 || res.Metrics["rebuffer_pct"] != 0 {
		t.Fatalf("end %q, %+v: want the position at the end, no endOfStream, both segments, no rebuffering", end, res)
	}
}

// dash.js gets the manifest without byte ranges, so that its requests are
// plain GETs of whole files.
func TestPlayerManifestHasNoRanges(t *testing.T) {
	mpd := []byte(`<Initialization sourceURL="init-0.m4s" range="0-836" />` + "\n" + `<SegmentURL media="chunk-0-00001.m4s" mediaRange="0-219318" />`)
	rec := httptest.NewRecorder()
	playerHandler(http.NotFoundHandler(), "x.js", mpd).ServeHTTP(rec, httptest.NewRequest("GET", "/player.mpd", nil))
	want := `<Initialization sourceURL="init-0.m4s" />` + "\n" + `<SegmentURL media="chunk-0-00001.m4s" />`
	if got := rec.Body.String(); got != want {
		t.Errorf("player.mpd:\n%s\nwant\n%s", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{}, "params.content"},
		{map[string]string{"content": "x", "mode": "single"}, "params.path"},
		{map[string]string{"content": "x", "mode": "mhttp"}, "params.chunk"},
		{map[string]string{"content": "x", "abr": "fastest"}, "abr"},
		{map[string]string{"content": "x", "player": "dashjs", "mode": "mph2"}, "params.mode"},
		{map[string]string{"content": "x", "mode": "proxy"}, "params.mode"},
		{map[string]string{"content": "x", "player": "dashjs", "mode": "mptcp", "segments": "3"}, "params.segments"},
		{map[string]string{"content": "x", "stuck_after": "500ms"}, "params.stuck_after"},
		{map[string]string{"content": "x", "trace_shift": "10s"}, "needs restart_links=true"},
		{map[string]string{"content": "x", "restart_links": "true", "trace_shift": "-1s"}, "positive duration"},
	} {
		if _, err := Kind.Config(tc.params); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %s", tc.params, err, tc.want)
		}
	}
	c, _ := Kind.Config(map[string]string{"content": t.TempDir()})
	if _, err := Start(context.Background(), &experiment.Env{Net: emulated.Local(), Port: 1}, c); err == nil || !strings.Contains(err.Error(), "params.content") {
		t.Errorf("a directory without video.mpd: %v", err)
	}
}

func TestVerifyFile(t *testing.T) {
	sum := sha256.Sum256([]byte("segment"))
	s := &Session{sums: map[string][32]byte{"/seg-1.m4s": sum}}
	good := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		path, sum, want string
	}{
		{"/seg-1.m4s", good, ""},
		{"/seg-2.m4s", good, "no such file"},
		{"/seg-1.m4s", "", "no SHA-256 reported"},
		{"/seg-1.m4s", strings.Repeat("00", 32), "differs from the served file"},
	} {
		err := s.verifyFile(tc.path, 7, tc.sum)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %q: %v, want %q", tc.path, tc.sum, err, tc.want)
		}
	}
}

// tracedNet is this machine's loopback with a traced downlink that records
// every link replaced and how many bytes the client had read by then.
type tracedNet struct {
	experiment.Network
	read atomic.Int64
	sets []string
}

func (n *tracedNet) Client() experiment.Host { return countingHost{n.Network.Client(), &n.read} }

func (n *tracedNet) SetLink(path, dir string, l experiment.LinkSpec) error {
	n.sets = append(n.sets, fmt.Sprintf("%s %s %s after %d bytes", path, dir, l.Trace, n.read.Load()))
	return nil
}

type countingHost struct {
	experiment.Host
	read *atomic.Int64
}

func (h countingHost) DialContext(ctx context.Context, network, addr string, o experiment.SockOpts) (net.Conn, error) {
	c, err := h.Host.DialContext(ctx, network, addr, o)
	if err != nil {
		return nil, err
	}
	return countingSocket{syncio.CountingConn{Conn: c, N: h.read}}, nil
}

// countingSocket is still its socket, so the run's meter reads its counters.
type countingSocket struct{ syncio.CountingConn }

func (c countingSocket) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// With restart_links, every scheme's run of one repetition restarts the
// traced link at the same point (rep x trace_shift into the trace), once
// its connections are warm (the MPD read) and before the first segment
// (190 KB at the lowest rung) is asked for: the schemes of a repetition
// play over the same bandwidth.
func TestRestartLinksPairsSchemes(t *testing.T) {
	dir := makeVideo(t)
	cond := experiment.Condition{Name: "traced", Paths: []experiment.PathSpec{{Name: "loopback",
		Down: experiment.LinkSpec{Trace: "trace:lte.down"}, Up: experiment.LinkSpec{Rate: "10Mbit"}}}}
	for _, mode := range []string{"single", "mph2-fs-bwl", "msplayer"} {
		c, err := Kind.Config(map[string]string{"mode": mode, "path": "loopback", "content": dir, "restart_links": "true", "trace_shift": "7s"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := emulated.LocalPort()
		if err != nil {
			t.Fatal(err)
		}
		n := &tracedNet{Network: emulated.Local()}
		s, err := Start(context.Background(), &experiment.Env{Condition: cond, Net: n, Port: p, Dir: t.TempDir(), Log: io.Discard}, c)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := s.Run(ctx, &experiment.Run{Rep: 3})
		cancel()
		s.Close()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(n.sets) != 1 || !strings.HasPrefix(n.sets[0], "loopback down trace:lte.down@21s after ") {
			t.Fatalf("%s: links set %q, want the downlink's trace once, 21s in", mode, n.sets)
		}
		var read int64
		fmt.Sscanf(n.sets[0][strings.LastIndex(n.sets[0], "after ")+6:], "%d", &read)
		if read <= 0 || read >= 64<<10 {
			t.Errorf("%s: trace restarted after the client read %d bytes, want after the MPD and before the first segment", mode, read)
		}
		if res.Info["trace_offset_loopback_down"] != "21s" {
			t.Errorf("%s: info %v, want the offset recorded", mode, res.Info)
		}
	}
}
