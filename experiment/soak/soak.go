// Package soak is the long-run experiment (driver "soak", issue 16): shunt
// serve (optionally with --smig) under rounds of h2load for Duration,
// cycling through six mixes of connections, streams and object sizes (many
// short connections opened and closed, a few busy ones, 1 KB to 4 MB), with
// Idle h2c connections held open throughout and PINGed at the end. With
// SMig, a shunt SMig client downloads /gen/4MB beside the load (a new client
// every 5 downloads, each body checked by SHA-256). Every 2 s the server's
// RSS and open files (/proc) and goroutines (its --debug-addr, on the
// server's address at the protocol's port + 1000) are sampled.
//
// A run fails on any failed request or SMig download, a lost idle
// connection, goroutines or open files not back within 20 and 10 of the
// start 4 s after the load stops, or RSS that keeps growing (Check).
// Metrics: failed (h2load requests), smig_failed, rss_mib_max,
// goroutines_max, fds_max; counts: duration_s, requests, rounds,
// body_bytes, smig_done, smig_migrated, idle, idle_alive, samples, rss_mib_,
// goroutines_ and fds_ _start and _end, rss_mib_first_third_peak and
// rss_mib_last_third_peak.
package soak

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/smig"
)

// Config is the length of the run and the server under it.
type Config struct {
	Duration time.Duration `param:"duration" help:"how long the load runs"`
	SMig     string        `param:"smig" help:"shunt serve --smig POLICY (empty: none); with it a shunt SMig client downloads /gen/4MB beside the load"`
	Idle     int           `param:"idle" help:"idle h2c connections held open for the whole run"`
	Workers  int           `param:"workers" help:"shunt serve's GOMAXPROCS"`
	Binary   string        `param:"binary" help:"shunt binary to serve with (default: this program)"`
}

// DefaultConfig: 10 minutes of load on shunt serve without SMig, 100 idle
// connections, a worker per CPU.
func DefaultConfig() Config {
	return Config{Duration: 10 * time.Minute, Idle: 100, Workers: runtime.NumCPU()}
}

// maxIdle bounds Idle: each is a descriptor here and in the server.
const maxIdle = 5000

// Validate checks the duration, the counts and the SMig policy.
func (c Config) Validate() error {
	switch {
	case c.Duration <= 0:
		return experiment.Errorf("params.duration", c.Duration.String(), "want a positive duration")
	case c.Idle < 0 || c.Idle > maxIdle:
		return experiment.Errorf("params.idle", strconv.Itoa(c.Idle), "want 0 to %d", maxIdle)
	case c.Workers < 1:
		return experiment.Errorf("params.workers", strconv.Itoa(c.Workers), "want at least 1")
	}
	if c.SMig != "" {
		if _, err := smig.ParsePolicy(c.SMig); err != nil {
			return experiment.Errorf("params.smig", c.SMig, "%v", err)
		}
	}
	return nil
}

// Kind is the experiment of driver "soak". Its objects only name runs.
var Kind = experiment.Kind[Config, *Session]{Name: "soak", Default: DefaultConfig, Start: Start}

// Session is one server configuration; each run starts a fresh server.
type Session struct {
	cfg    Config
	moves  bool // the SMig policy moves responses
	opts   peers.Options
	debug  string
	client experiment.Host
	log    io.Writer
	info   map[string]string
}

// debugPortOffset puts the server's --debug-addr at the protocol's port +
// 1000, clear of the other protocols' ports (bench.FirstPort + i).
const debugPortOffset = 1000

// Start writes the file object the load mixes with generated ones and
// prepares the server in the network's server namespace on env.Port.
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	if err := peers.Available("h2load"); err != nil {
		return nil, err
	}
	root := filepath.Join(env.Dir, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	b := make([]byte, 100_000)
	rand.Read(b)
	if err := os.WriteFile(filepath.Join(root, "100k.bin"), b, 0o644); err != nil {
		return nil, err
	}
	bin, ver, err := origin.ServerBinary(ctx, peers.Shunt, c.Binary)
	if err != nil {
		return nil, err
	}
	addr := origin.Addr(env.Net, env.Port)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	debug := net.JoinHostPort(host, strconv.Itoa(env.Port+debugPortOffset))
	args := []string{"--debug-addr", debug}
	moves := false
	if c.SMig != "" {
		args = append(args, "--smig", c.SMig)
		pol, _ := smig.ParsePolicy(c.SMig) // Validate parsed it
		moves = pol.ServerSide()
	}
	o := peers.Options{Root: root, Addr: addr, Workers: c.Workers, Binary: bin, Args: args,
		Prefix: origin.Prefix(env.Net.Servers()[0]), MaxConnections: c.Idle + 1000}
	h2ver, _ := peers.Version("h2load")
	return &Session{cfg: c, moves: moves, opts: o, debug: debug, client: env.Net.Client(), log: env.Log, info: map[string]string{
		"server": ver, "client": h2ver, "workers": strconv.Itoa(c.Workers),
		"smig": c.SMig, "idle": strconv.Itoa(c.Idle)}}, nil
}

// Info describes the server and the load.
func (s *Session) Info() map[string]string { return s.info }

// Close has nothing to stop: each run stops its server.
func (s *Session) Close() error { return nil }

// dial opens a connection from the client's namespace.
func (s *Session) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.client.DialContext(ctx, network, addr, experiment.SockOpts{CC: origin.CC})
}

// Run starts the server, holds the idle connections, runs the load and the
// SMig client for Duration while sampling, and checks the figures.
func (s *Session) Run(ctx context.Context, r *experiment.Run) (res experiment.Result, err error) {
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	p, err := peers.Start(sctx, peers.Shunt, s.opts)
	cancel()
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, p.Stop()) }()
	var idle []*idleH2
	defer func() {
		for _, ic := range idle {
			ic.c.Close()
		}
	}()
	for range s.cfg.Idle {
		ic, err := s.openIdle(ctx, p.Addr)
		if err != nil {
			return res, fmt.Errorf("idle connection %d: %w", len(idle), err)
		}
		idle = append(idle, ic)
	}
	debug := &http.Client{Transport: &http.Transport{DialContext: s.dial}, Timeout: 10 * time.Second}
	defer debug.CloseIdleConnections()
	begin := time.Now()
	var samples []Sample
	var sampleErr error
	var smu sync.Mutex
	sample := func() Sample {
		x, err := s.sample(debug, p.Pid(), time.Since(begin))
		smu.Lock()
		defer smu.Unlock()
		sampleErr = errors.Join(sampleErr, err)
		samples = append(samples, x)
		return x
	}
	time.Sleep(time.Second)
	var sum Summary
	sum.Start = sample()

	lctx, lcancel := context.WithTimeout(ctx, s.cfg.Duration)
	defer lcancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	})
	var smigErrs []error
	if s.cfg.SMig != "" {
		wg.Go(func() {
			sum.SMigDone, sum.SMigFailed, sum.SMigMigrated, smigErrs = s.smigClient(lctx, p.URL("/gen/4MB"))
		})
	}
	var loadErrs []error
	for i := 0; lctx.Err() == nil; i++ {
		rd := rounds[i%len(rounds)]
		var urls []string
		for _, path := range rd.paths {
			urls = append(urls, p.URL(path))
		}
		hctx, hcancel := context.WithTimeout(ctx, 2*time.Minute)
		lr, out, err := peers.H2load(hctx, peers.Load{URLs: urls, Requests: rd.requests, Clients: rd.clients, Streams: rd.streams, Prefix: origin.Prefix(s.client)})
		hcancel()
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		sum.Rounds++
		sum.Requests += lr.Total
		sum.BodyBytes += lr.DataBytes
		bad := rd.requests - lr.Succeeded + lr.Failed + lr.Errored + lr.Timeout + rd.requests - lr.Status[0]
		if err != nil || bad > 0 {
			sum.Failed += max(bad, 1)
			loadErrs = append(loadErrs, fmt.Errorf("round %d (-c %d -m %d -n %d): %d succeeded, %d 2xx, %d failed, %d errored: %v\n%s",
				i, rd.clients, rd.streams, rd.requests, lr.Succeeded, lr.Status[0], lr.Failed, lr.Errored, err, out))
		}
	}
	wg.Wait()
	// Once the load stops, what it held must go: h2's idle handler
	// goroutines leave after 2 s.
	time.Sleep(4 * time.Second)
	sum.End = sample()
	for _, ic := range idle {
		if ic.alive() {
			sum.IdleAlive++
		}
	}
	sum.Idle = len(idle)
	sum.Elapsed = time.Since(begin)
	sum.Samples = samples
	for _, x := range samples {
		fmt.Fprintf(s.log, "soak: t=%5.0fs rss %6.1f MiB goroutines %5d fds %5d\n", x.At.Seconds(), mib(x.RSS), x.Goroutines, x.FDs)
	}
	res = experiment.Result{Metrics: map[string]float64{}, Counts: sum.Counts(), Sock: experiment.SockOpts{CC: origin.CC}}
	for _, k := range Metrics { // the figures a scenario's table shows
		res.Metrics[k] = res.Counts[k]
		delete(res.Counts, k)
	}
	if sampleErr != nil {
		return res, fmt.Errorf("sampling the server: %w", sampleErr)
	}
	return res, errors.Join(append(append(loadErrs, smigErrs...), sum.Check()...)...)
}

// Metrics are the figures a run reports as metrics; the rest of Summary's
// Counts are its counts.
var Metrics = []string{"failed", "smig_failed", "rss_mib_max", "goroutines_max", "fds_max"}

// round is one h2load run of the mix.
type round struct {
	clients, streams, requests int
	paths                      []string
}

var rounds = []round{
	{200, 1, 2000, []string{"/gen/1KB", "/gen/16KB", "/100k.bin"}},               // many connections, opened and closed
	{20, 20, 4000, []string{"/gen/1KB", "/gen/10KB", "/gen/100KB", "/100k.bin"}}, // multiplexed
	{8, 4, 200, []string{"/gen/1MB", "/gen/4MB", "/gen/16KB"}},                   // large objects
	{50, 10, 3000, []string{"/gen/100KB", "/gen/1KB", "/gen/1MB", "/gen/10KB"}},  // mixed
	{100, 2, 1500, []string{"/gen/1KB", "/gen/16KB", "/gen/100KB", "/gen/1MB"}},  // many, mixed
	{4, 100, 2000, []string{"/gen/1KB", "/gen/10KB", "/gen/16KB", "/gen/100KB"}}, // deep multiplexing
}

// Sample is one look at the server process.
type Sample struct {
	At         time.Duration // since the idle connections were open
	RSS        int64         // bytes, the server's process tree
	Goroutines int
	FDs        int // open files
}

// sample reads the server's RSS and open files from /proc and its
// goroutines from its --debug-addr expvar page.
func (s *Session) sample(debug *http.Client, pid int, at time.Duration) (Sample, error) {
	x := Sample{At: at}
	rss, err := peers.TreeRSS(pid)
	if err != nil {
		return x, err
	}
	x.RSS = rss
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return x, err
	}
	x.FDs = len(fds)
	res, err := debug.Get("http://" + s.debug + "/debug/vars")
	if err != nil {
		return x, err
	}
	defer res.Body.Close()
	var vars struct{ Goroutines int }
	if err := json.NewDecoder(res.Body).Decode(&vars); err != nil {
		return x, fmt.Errorf("/debug/vars: %w", err)
	}
	x.Goroutines = vars.Goroutines
	return x, nil
}

// Summary is what one run saw.
type Summary struct {
	Elapsed                  time.Duration
	Rounds, Requests, Failed int
	BodyBytes                int64
	SMigDone, SMigFailed     int
	SMigMigrated             int // responses the SMig client saw migrate
	Idle, IdleAlive          int
	Start, End               Sample
	Samples                  []Sample // every 2 s, Start first
}

// Max is the largest of each figure over the samples.
func (m Summary) Max() Sample {
	x := m.Start
	for _, s := range m.Samples {
		x.RSS, x.Goroutines, x.FDs = max(x.RSS, s.RSS), max(x.Goroutines, s.Goroutines), max(x.FDs, s.FDs)
	}
	return x
}

// Thirds are the RSS peaks of the first, the middle and the last third of
// the samples.
func (m Summary) Thirds() (early, middle, late int64) {
	third := max(len(m.Samples)/3, 1)
	peak := func(ss []Sample) (p int64) {
		for _, s := range ss {
			p = max(p, s.RSS)
		}
		return p
	}
	first, last := min(third, len(m.Samples)), max(len(m.Samples)-third, 0)
	return peak(m.Samples[:first]), peak(m.Samples[first:max(first, last)]), peak(m.Samples[last:])
}

// Check is the soak's verdict: what went wrong, nothing if the run passed.
// No request or download may fail and no idle connection be lost;
// goroutines and open files must come back within 20 and 10 of their start
// once the load stops; RSS must not keep growing: the last third's peak
// over 1.25x the first third's + 32 MiB and still 16 MiB over the middle
// third's is a leak (a peak that repeats is load). The middle third tells
// a leak from a heap that ramped up through the first third on a loaded
// machine and then stayed (28 Nov: 46 MiB in the first third, 150 after).
func (m Summary) Check() []error {
	var errs []error
	if m.Failed > 0 {
		errs = append(errs, fmt.Errorf("%d h2load requests failed", m.Failed))
	}
	if m.SMigFailed > 0 {
		errs = append(errs, fmt.Errorf("%d SMig downloads failed", m.SMigFailed))
	}
	if m.IdleAlive != m.Idle {
		errs = append(errs, fmt.Errorf("%d of %d idle connections were lost", m.Idle-m.IdleAlive, m.Idle))
	}
	if m.End.Goroutines > m.Start.Goroutines+20 {
		errs = append(errs, fmt.Errorf("goroutines: %d at the start, %d once the load stopped: a leak", m.Start.Goroutines, m.End.Goroutines))
	}
	if m.End.FDs > m.Start.FDs+10 {
		errs = append(errs, fmt.Errorf("open files: %d at the start, %d once the load stopped: a leak", m.Start.FDs, m.End.FDs))
	}
	if early, middle, late := m.Thirds(); float64(late) > 1.25*float64(early)+32<<20 && late > middle+16<<20 {
		errs = append(errs, fmt.Errorf("RSS grows: peak %.1f MiB in the first third, %.1f in the middle, %.1f in the last", mib(early), mib(middle), mib(late)))
	}
	return errs
}

// Counts are the summary as a record's counts.
func (m Summary) Counts() map[string]float64 {
	mx := m.Max()
	early, _, late := m.Thirds()
	c := map[string]float64{
		"duration_s": m.Elapsed.Seconds(), "rounds": float64(m.Rounds), "requests": float64(m.Requests),
		"body_bytes": float64(m.BodyBytes), "failed": float64(m.Failed),
		"smig_done": float64(m.SMigDone), "smig_failed": float64(m.SMigFailed), "smig_migrated": float64(m.SMigMigrated),
		"idle": float64(m.Idle), "idle_alive": float64(m.IdleAlive), "samples": float64(len(m.Samples)),
		"rss_mib_first_third_peak": mib(early), "rss_mib_last_third_peak": mib(late),
	}
	for _, f := range []struct {
		name            string
		start, end, max float64
	}{
		{"rss_mib", mib(m.Start.RSS), mib(m.End.RSS), mib(mx.RSS)},
		{"goroutines", float64(m.Start.Goroutines), float64(m.End.Goroutines), float64(mx.Goroutines)},
		{"fds", float64(m.Start.FDs), float64(m.End.FDs), float64(mx.FDs)},
	} {
		c[f.name+"_start"], c[f.name+"_end"], c[f.name+"_max"] = f.start, f.end, f.max
	}
	return c
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// idleH2 is an h2c connection that said its preface and SETTINGS, answers
// what needs answering and otherwise stays silent; alive checks with a
// PING that the server still keeps it.
type idleH2 struct {
	c    net.Conn
	fr   *http2.Framer
	mu   sync.Mutex
	pong chan struct{}
}

func (s *Session) openIdle(ctx context.Context, addr string) (*idleH2, error) {
	c, err := s.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	ic := &idleH2{c: c, fr: http2.NewFramer(c, bufio.NewReader(c)), pong: make(chan struct{}, 1)}
	if _, err := io.WriteString(c, http2.ClientPreface); err == nil {
		err = ic.fr.WriteSettings()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	go func() {
		for {
			f, err := ic.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					ic.mu.Lock()
					ic.fr.WriteSettingsAck()
					ic.mu.Unlock()
				}
			case *http2.PingFrame:
				if f.IsAck() {
					select {
					case ic.pong <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	return ic, nil
}

func (ic *idleH2) alive() bool {
	ic.mu.Lock()
	err := ic.fr.WritePing(false, [8]byte{1})
	ic.mu.Unlock()
	if err != nil {
		return false
	}
	select {
	case <-ic.pong:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// smigClient downloads url with shunt's SMig client until ctx ends, a new
// client (and connections) every 5 downloads, each body checked by length
// and SHA-256; it returns the downloads verified, those that failed, the
// responses that migrated, and what went wrong (with a server policy that
// moves responses, also that none moved).
func (s *Session) smigClient(ctx context.Context, url string) (done, failed, migrated int, errs []error) {
	size, _, err := content.GenSize(url[strings.Index(url, "/gen/"):])
	if err != nil {
		return 0, 0, 0, []error{err}
	}
	want := content.Digest(size)
	var tr *smig.Transport
	// Every client's migrations count, not only the last one's: the soak
	// may end in the first download of a new client, which has none yet.
	retire := func() {
		if tr != nil {
			migrated += int(tr.Stats().Migrated.Load())
			tr.CloseIdleConnections()
		}
	}
	for i := 0; !ended(ctx); i++ {
		if i%5 == 0 {
			retire()
			tr = &smig.Transport{AllowHTTP: true, DialContext: s.dial}
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		res, err := tr.RoundTrip(req)
		if err == nil {
			h := sha256.New()
			var n int64
			n, err = io.Copy(h, res.Body)
			res.Body.Close()
			if err == nil && (n != size || [32]byte(h.Sum(nil)) != want) {
				err = fmt.Errorf("%d bytes, SHA-256 %x; want %d bytes, %x", n, h.Sum(nil), size, want)
			}
		}
		switch {
		case err == nil:
			done++
		case ended(ctx):
			// the soak ended in the middle of this one
		default:
			failed++
			errs = append(errs, fmt.Errorf("SMig download %d: %w", i, err))
		}
	}
	retire()
	if s.moves && done > 0 && migrated == 0 {
		errs = append(errs, fmt.Errorf("SMig: none of the %d downloads migrated", done))
	}
	return done, failed, migrated, errs
}

// ended reports whether the soak's load is over: ctx is done or its
// deadline has passed. The deadline too, because a dialer gives up at the
// deadline ("dial tcp ...: i/o timeout", at once for a dial begun after
// it) while ctx.Err() stays nil until the context's timer has run, which
// under load takes milliseconds: downloads that fail in between are the
// soak's end, not failures (the CI flake: 72 counted in its last moments).
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
