// Package video is the DASH experiment (driver "dash", MP-H2 §5.4, Figures
// 11 and 12): package dash's player plays a video made by
// scripts/dash-content from shunt's server over a two-path network, its
// segments fetched by one scheduler.
package video

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/dash"
	"github.com/shunt-net/shunt/estimate"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/server"
)

// The Info keys of a playback's segments, in play order: each one's rung
// (kbit/s), when its fetch started (seconds since the player started) and
// the rate it arrived at (Mbit/s: its bytes over its fetch time, request to
// last byte; for dash.js as the page saw it), which on one path shows what
// the link delivered. The Go player's also have each segment's throughput
// sample as its ABR's meter took it (milliseconds since the player started,
// response headers to last byte, "start-end"), its init segment's when one
// was fetched with it (else empty), and the sample's rate (Mbit/s).
const (
	SegmentKbpsInfo       = "segment_kbps"
	SegmentStartInfo      = "segment_start_s"
	SegmentRateInfo       = "segment_mbit_s"
	SegmentSampleInfo     = "segment_sample_ms"
	SegmentInitSampleInfo = "segment_init_sample_ms"
	SegmentSampleRateInfo = "segment_sample_mbit_s"
)

// Config says which video is played, by which scheduler and ABR:
//
//	mode=single        one path (path=NAME): one h2c connection
//	mode=mph2          MP-H2, segment size unknown
//	mode=mph2-fs       MP-H2+FS: the size from the manifest
//	mode=mph2-fs-bwl   MP-H2+FS+BW/L: path estimates carried across segments
//	mode=msplayer      MSPlayer (mph2.MSPlayer)
//	mode=mhttp         mHTTP with chunk=SIZE
//	mode=mptcp         one h2c connection over kernel MPTCP, first subflow
//	                   on the first path
//
// player=dashjs plays with the reference player instead of package dash's:
// dash.js (npm dashjs, its own adaptation) in headless Chromium, in modes
// single (the first path only: Chromium takes the main route), mptcp
// (mptcpize makes Chromium's sockets MPTCP ones) and proxy (Chromium's
// requests through shunt proxy in the client namespace, which fetches over
// MP-H2 on every path); abr does not apply; stuck_after=DURATION (30s)
// fails a playback whose position stopped moving that long.
//
// content=DIR is a directory made by scripts/dash-content (DIR/video.mpd);
// segments=N plays only the first N segments. Every run opens fresh
// connections, warmed by fetching the MPD on every path before playing.
// restart_links=true re-applies every link direction with a trace as the
// playback starts (after the warm-up; for dash.js, as Chromium is
// launched), so every scheme of one repetition plays over the same
// bandwidth from the same point; trace_shift=DURATION starts mahimahi
// traces rep x DURATION in, so repetitions see different stretches.
// Metrics: startup (s), stall (s, total), kbit_per_s (mean declared bitrate
// of the played segments), rebuffer_pct (stall time over the media played),
// switches_count. Info: the rung, the fetch start and the arrival rate of
// every segment (segment_kbps, segment_start_s, segment_mbit_s) and every
// stall (stalls); for dash.js also every download it abandoned (abandoned,
// counted in abandoned).
type Config struct {
	Mode     string           `param:"mode" enum:"single,mph2,mph2-fs,mph2-fs-bwl,msplayer,mhttp,mptcp,proxy" help:"the segment fetcher"`
	Path     string           `param:"path" help:"the path of mode single"`
	Chunk    experiment.Bytes `param:"chunk" help:"mHTTP's chunk size"`
	ABR      string           `param:"abr" enum:"exo,bola" help:"bitrate adaptation: ExoPlayer's AdaptiveTrackSelection or BOLA"`
	Content  string           `param:"content" help:"directory made by scripts/dash-content"`
	Segments int              `param:"segments" help:"play only the first N segments (0: all)"`
	CC       string           `param:"cc" help:"congestion control, both ends"`
	Player   string           `param:"player" enum:"go,dashjs" help:"the player: package dash's, or dash.js in headless Chromium"`
	DashJS   string           `param:"dashjs" help:"dash.all.min.js of npm's dashjs, for player dashjs"`
	// StuckAfter fails a dash.js playback whose position has not moved for
	// this long, instead of waiting for the run's timeout.
	StuckAfter time.Duration `param:"stuck_after" help:"player dashjs: fail a playback stopped this long"`
	// RestartLinks pairs the schemes of a repetition under traces.
	RestartLinks bool          `param:"restart_links" help:"re-apply traced links as the playback starts"`
	TraceShift   time.Duration `param:"trace_shift" help:"with restart_links: start mahimahi traces rep x this far in"`
}

// DefaultConfig is MP-H2+FS+BW/L with ExoPlayer's adaptation.
func DefaultConfig() Config {
	return Config{Mode: "mph2-fs-bwl", ABR: "exo", CC: origin.CC, Player: "go", DashJS: DashJSFile, StuckAfter: 30 * time.Second}
}

// Validate checks the options together.
func (c Config) Validate() error {
	switch {
	case c.Content == "":
		return experiment.Errorf("params.content", "", "want the directory of a video made by scripts/dash-content DIR SECONDS")
	case c.Mode == "single" && c.Path == "":
		return experiment.Errorf("params.path", "", "mode single needs path=NAME")
	case c.Mode == "mhttp" && c.Chunk <= 0:
		return experiment.Errorf("params.chunk", strconv.FormatInt(int64(c.Chunk), 10), "mode mhttp needs chunk=SIZE, a positive size")
	case c.Segments < 0:
		return experiment.Errorf("params.segments", strconv.Itoa(c.Segments), "want 0 (all) or more")
	case c.Player == "dashjs" && c.Mode != "single" && c.Mode != "mptcp" && c.Mode != "proxy":
		return experiment.Errorf("params.mode", c.Mode, "player dashjs plays in modes single, mptcp and proxy")
	case c.Player != "dashjs" && c.Mode == "proxy":
		return experiment.Errorf("params.mode", c.Mode, "mode proxy is for player dashjs (the Go player fetches over MP-H2 itself: modes mph2*)")
	case c.Player == "dashjs" && c.Segments != 0:
		return experiment.Errorf("params.segments", strconv.Itoa(c.Segments), "player dashjs plays the whole video")
	case c.StuckAfter < time.Second:
		return experiment.Errorf("params.stuck_after", c.StuckAfter.String(), "want 1s or more (the page checks once a second)")
	}
	return origin.CheckTraceShift(c.RestartLinks, c.TraceShift)
}

// Kind is the experiment of driver "dash".
var Kind = experiment.Kind[Config, *Session]{Name: "dash", Default: DefaultConfig, Start: Start}

// Start reads the video's manifest and the SHA-256 of every file, and
// starts shunt's server on the condition's (single) server.
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	return start(ctx, env, c, nil)
}

// start is Start with the server's handler passed through wrap, if set (a
// test's misbehaving server).
func start(ctx context.Context, env *experiment.Env, c Config, wrap func(http.Handler) http.Handler) (*Session, error) {
	paths := env.Net.Paths()
	if len(env.Net.Servers()) != 1 {
		return nil, fmt.Errorf("condition %s has %d servers; the dash experiment serves from one", env.Condition.Name, len(env.Net.Servers()))
	}
	if c.Mode == "single" && !hasPath(paths, c.Path) {
		return nil, &experiment.FieldError{Field: "params.path", Value: c.Path, Err: fmt.Errorf("no such path in condition %s", env.Condition.Name)}
	}
	player := "shunt dash player (" + c.Mode + ", " + c.ABR + ")"
	if c.Player == "dashjs" {
		if c.Mode == "single" && c.Path != paths[0].Name {
			return nil, &experiment.FieldError{Field: "params.path", Value: c.Path, Err: fmt.Errorf("Chromium takes the main route, path %s, and cannot be bound to another", paths[0].Name)}
		}
		v, err := checkDashJS(c.DashJS)
		if err != nil {
			return nil, err
		}
		player = "dash.js " + v + " in headless Chromium (" + c.Mode + ")"
	}
	data, err := os.ReadFile(filepath.Join(c.Content, "video.mpd"))
	if err != nil {
		return nil, &experiment.FieldError{Field: "params.content", Value: c.Content, Err: fmt.Errorf("%w (make it with scripts/dash-content DIR SECONDS)", err)}
	}
	addr := net.JoinHostPort(paths[0].ServerAddr, strconv.Itoa(env.Port))
	mpdURL := &url.URL{Scheme: "http", Host: addr, Path: "/video.mpd"}
	m, err := dash.ParseMPD(data, mpdURL)
	if err != nil {
		return nil, &experiment.FieldError{Field: "params.content", Value: c.Content, Err: err}
	}
	if strings.HasPrefix(c.Mode, "mph2-fs") || c.Mode == "msplayer" {
		for _, r := range m.Reps {
			for _, s := range append([]dash.Segment{r.Init}, r.Segments...) {
				if s.URL != "" && s.Size <= 0 {
					return nil, &experiment.FieldError{Field: "params.mode", Value: c.Mode, Err: fmt.Errorf("the manifest gives no size for %s", s.URL)}
				}
			}
		}
	}
	sums, err := hashFiles(c.Content)
	if err != nil {
		return nil, err
	}
	hd, err := content.NewHandler(c.Content)
	if err != nil {
		return nil, err
	}
	var h http.Handler = hd
	if c.Player == "dashjs" {
		h = playerHandler(hd, c.DashJS, data)
	}
	if wrap != nil {
		h = wrap(h)
	}
	mptcp := c.Mode == "mptcp"
	ln, err := env.Net.Servers()[0].Listen("tcp", addr, experiment.SockOpts{CC: c.CC, MPTCP: mptcp})
	if err != nil {
		hd.Close()
		return nil, err
	}
	srv := &server.Server{Handler: h, CC: c.CC, MPTCP: mptcp, ErrorLog: log.New(env.Log, "shunt server "+addr+": ", log.LstdFlags)}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	s := &Session{c: c, env: env, m: m, addr: addr, mpd: mpdURL.String(), sums: sums, cache: estimate.NewCache(0), player: player}
	s.close = func() error { cancel(); <-done; return hd.Close() }
	return s, nil
}

func hasPath(ps []experiment.PathInfo, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// hashFiles is the SHA-256 of every file in dir, by URL path.
func hashFiles(dir string) (map[string][32]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	sums := map[string][32]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		sums["/"+e.Name()] = sha256.Sum256(b)
	}
	return sums, nil
}

// Session plays the video of one condition.
type Session struct {
	c      Config
	env    *experiment.Env
	m      *dash.Manifest
	addr   string // the server's HOST:PORT
	mpd    string
	sums   map[string][32]byte
	cache  *estimate.Cache // MP-H2+FS+BW/L's estimates, across the session's runs
	player string
	close  func() error
}

func (s *Session) Info() map[string]string {
	return map[string]string{"server": "shunt (in-process)", "server_cc": s.c.CC + " (per socket)",
		"client": s.player,
		"video":  fmt.Sprintf("%v in %d segments of %v, %d rungs", s.m.Duration, len(s.m.Reps[0].Segments), s.m.SegmentDuration, len(s.m.Reps))}
}

func (s *Session) Close() error { return s.close() }

// dial connects over path pi and adds the connection to conns.
func (s *Session) dial(pi experiment.PathInfo, mptcp bool, conns *origin.PathConns) func(ctx context.Context, network, addr string) (net.Conn, error) {
	client := s.env.Net.Client()
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := client.DialContext(ctx, network, addr, experiment.SockOpts{CC: s.c.CC, MPTCP: mptcp, Source: pi.ClientAddr})
		if err == nil {
			conns.Add(c, mptcp)
		}
		return c, err
	}
}

// fetcher builds the mode's fetcher on fresh connections, which it adds to
// conns, and warms them; done closes them.
func (s *Session) fetcher(ctx context.Context, conns *origin.PathConns) (f dash.Fetcher, done func(), err error) {
	var paths []mph2.Path
	for _, pi := range s.env.Net.Paths() {
		paths = append(paths, mph2.Path{Name: pi.Name, Dial: s.dial(pi, false, conns)})
	}
	single := func(pi experiment.PathInfo, mptcp bool) (dash.Fetcher, func(), error) {
		tr := &h2.Transport{AllowHTTP: true, DialContext: s.dial(pi, mptcp, conns)}
		f := dash.HTTP{RT: tr}
		_, err := f.Fetch(ctx, dash.Segment{URL: s.mpd}, func() {})
		return f, tr.CloseIdleConnections, err
	}
	switch s.c.Mode {
	case "single":
		for _, pi := range s.env.Net.Paths() {
			if pi.Name == s.c.Path {
				return single(pi, false)
			}
		}
	case "mptcp":
		return single(s.env.Net.Paths()[0], true)
	case "mhttp":
		d := &mph2.MHTTP{Paths: paths, Chunk: int64(s.c.Chunk)}
		return dash.Chunked{D: d}, d.Close, d.Warm(ctx, s.mpd)
	case "msplayer":
		d := &mph2.MSPlayer{Paths: paths}
		return dash.MSPlayer{P: d}, d.Close, d.Warm(ctx, s.mpd)
	default:
		c := &mph2.Client{Paths: paths}
		if s.c.Mode == "mph2-fs-bwl" {
			c.Cache = s.cache
		}
		return dash.MPH2{Client: c, FS: s.c.Mode != "mph2"}, func() { c.Close() }, c.Connect(ctx, s.mpd)
	}
	return nil, nil, fmt.Errorf("mode %s: no path %q", s.c.Mode, s.c.Path)
}

func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	var restarted map[string]string
	start := func() (err error) {
		if s.c.RestartLinks {
			restarted, err = origin.RestartTraces(s.env, r.Rep, s.c.TraceShift)
		}
		return err
	}
	var res *dash.Result
	var meter *pathMeter // the Go player's only: Chromium's sockets are not ours
	var pb *jsPlayback   // dash.js's only
	var err error
	if s.c.Player == "dashjs" {
		res, pb, err = s.playDashJS(ctx, start)
	} else {
		res, meter, err = s.play(ctx, start)
	}
	if err != nil {
		return experiment.Result{}, err
	}
	out := s.result(res)
	maps.Copy(out.Info, restarted)
	if meter != nil {
		maps.Copy(out.Info, meter.info())
		missed, longest := meter.gaps()
		out.Counts[TicksMissedCount] = float64(missed)
		out.Info[LongestGapInfo] = strconv.FormatFloat(longest.Seconds(), 'f', 2, 64)
	}
	if pb != nil {
		out.Counts["abandoned"] = float64(len(pb.Abandoned))
		out.Info[AbandonedInfo] = abandonedInfo(pb.Abandoned)
		out.Info[EndInfo] = pb.End
	}
	return out, nil
}

// play plays the video with package dash's player and the mode's fetcher;
// start is called once the connections are warm, just before the first
// segment is asked for. The meter has what each path received.
func (s *Session) play(ctx context.Context, start func() error) (*dash.Result, *pathMeter, error) {
	conns := &origin.PathConns{}
	f, done, err := s.fetcher(ctx, conns)
	if done != nil {
		defer done()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("warm-up: %w", err)
	}
	if err := start(); err != nil {
		return nil, nil, err
	}
	meter, err := startMeter(conns, s.env.Net.Paths(), s.m)
	if err != nil {
		return nil, nil, err
	}
	var abr dash.ABR = dash.NewExo()
	if s.c.ABR == "bola" {
		abr = dash.NewBOLA()
	}
	if m, ok := f.(dash.MPH2); ok {
		m.Done = meter.downloaded
		f = m
	}
	p := &dash.Player{Manifest: s.m, ABR: abr, Fetcher: meteredFetcher{f, meter}, Segments: s.c.Segments, Verify: s.verify}
	res, err := p.Play(ctx)
	if err = errors.Join(err, meter.stop()); err != nil {
		return nil, nil, err
	}
	return res, meter, nil
}

// result is a playback's metrics, counts and per-segment info.
func (s *Session) result(res *dash.Result) experiment.Result {
	out := experiment.Result{
		Metrics: map[string]float64{
			"startup": res.Startup.Seconds(), "stall": res.StallTime().Seconds(),
			"kbit_per_s": res.AvgBitrate() / 1000, "rebuffer_pct": 100 * res.RebufferRatio(),
			"switches_count": float64(res.Switches),
		},
		Counts: map[string]float64{"stalls": float64(len(res.Stalls)), "segments": float64(len(res.Segments))},
		Info:   map[string]string{},
		Sock:   experiment.SockOpts{CC: s.c.CC, MPTCP: s.c.Mode == "mptcp"},
	}
	var kbps, starts, rates, stalls, samples, inits, sampleRates []string
	var bytes int64
	span := func(t dash.Transfer) string {
		return strconv.FormatInt(t.Start.Milliseconds(), 10) + "-" + strconv.FormatInt(t.End.Milliseconds(), 10)
	}
	for _, g := range res.Segments {
		if g.Sample.End > g.Sample.Start {
			samples = append(samples, span(g.Sample))
			sampleRates = append(sampleRates, strconv.FormatFloat(float64(g.Sample.Bytes)*8/(g.Sample.End-g.Sample.Start).Seconds()/1e6, 'f', 3, 64))
			init := ""
			if g.Init.End > 0 {
				init = span(g.Init)
			}
			inits = append(inits, init)
		}
		kbps = append(kbps, strconv.FormatInt(g.Bitrate/1000, 10))
		starts = append(starts, strconv.FormatFloat(g.Start.Seconds(), 'f', 2, 64))
		if g.Fetch > 0 {
			rates = append(rates, strconv.FormatFloat(float64(g.Bytes)*8/g.Fetch.Seconds()/1e6, 'f', 2, 64))
		}
		bytes += g.Bytes
	}
	if len(rates) == len(res.Segments) && len(rates) > 0 {
		out.Info[SegmentRateInfo] = strings.Join(rates, ",")
	}
	if len(samples) == len(res.Segments) && len(samples) > 0 {
		out.Info[SegmentSampleInfo] = strings.Join(samples, ",")
		out.Info[SegmentInitSampleInfo] = strings.Join(inits, ",")
		out.Info[SegmentSampleRateInfo] = strings.Join(sampleRates, ",")
	}
	for _, st := range res.Stalls {
		stalls = append(stalls, fmt.Sprintf("%.2f+%.2f", st.At.Seconds(), st.Duration.Seconds()))
	}
	out.Counts["bytes"] = float64(bytes)
	out.Info[SegmentKbpsInfo] = strings.Join(kbps, ",")
	out.Info[SegmentStartInfo] = strings.Join(starts, ",")
	out.Info["stalls"] = strings.Join(stalls, ",")
	return out
}

// verify checks a segment against the SHA-256 of the file served.
func (s *Session) verify(seg dash.Segment, data []byte) error {
	u, err := url.Parse(seg.URL)
	if err != nil {
		return err
	}
	return s.matches(u.Path, sha256.Sum256(data), int64(len(data)))
}

// matches checks the SHA-256 of n bytes a player received against the
// served file at path.
func (s *Session) matches(path string, sum [32]byte, n int64) error {
	want, ok := s.sums[path]
	if !ok {
		return errors.New("no such file in the content directory")
	}
	if sum != want {
		return fmt.Errorf("SHA-256 of the %d bytes received differs from the served file", n)
	}
	return nil
}
