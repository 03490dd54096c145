// Package mptools is issue 14's comparison of MP-H2 with the multipath
// download tools people use today (driver "mptools"): one object fetched
// over a two-path network from nginx, h2o or shunt's server (TLS, so each
// client speaks what it can: h2 by ALPN for MP-H2 and curl, HTTP/1.1 for
// aria2 and axel), every download checked by length and SHA-256.
package mptools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/multipath"
	"github.com/shunt-net/shunt/peers"
)

// Config says which tool fetches the object and what happens to the paths:
//
//	tool=mph2   package mph2 in this process over every path (source
//	            addresses), mode=aggregate|handover|interactive,
//	            budget=PATH=SIZE; a fresh client per run, so its time
//	            includes the TCP and TLS handshakes as the tools' do;
//	            path=NAME: over that path alone, the client shunt get
//	            --path NAME builds (a single-path download that must wait
//	            an outage out)
//	tool=aria2  aria2c --multiple-interface=ADDR,... -x conns -s conns
//	            -k 1M (aria2's smallest piece: objects under 2 MB are not
//	            split)
//	tool=axel   axel -n conns with every path's address in its config's
//	            interfaces, as its manual says to use several; Debian's
//	            axel 2.17.11 reads the file but binds no socket (strace:
//	            no bind() on its TCP sockets, and with only lte's address
//	            listed it still downloads at wifi's rate), so every
//	            connection takes the default route, the first path. It
//	            binds only with -4 (tcp_connect fills the local address
//	            only for AF_INET, and the default is any family), and then
//	            every connection to the first address listed: one path
//	            either way
//	tool=curl   curl --interface on path=NAME's address; http=1.1 asks
//	            for HTTP/1.1 instead of h2 (ALPN), so h2's framing can be
//	            told from the server's TLS and TCP (a floor for every h2
//	            client of that server)
//	tool=mptcp  curl run by mptcpize (Debian's mptcpd) from the first
//	            path's address against a server listening with MPTCP (run
//	            by mptcpize too); the testbed's endpoint adds the second
//	            subflow
//
// outages=PATH@START[+LEN],... cut outages into the links once the timed
// download starts: from START on, for LEN (to the end of the run without
// one), both directions of PATH lose every packet; traced links are
// restarted at the start and taken up where they would be, so the outage
// is a gap cut into the trace. restart_links=true restarts traced links at
// the start without outages; trace_shift rotates mahimahi traces rep x
// that far in.
//
// Metrics: time, from starting the tool (the process, or mph2's Download)
// to its end, the file complete. With outages, read alike for every tool
// from the emulated links (packets of at least dataPacket bytes delivered
// on each other path's downlink; see recovery): outage_first_PATH, from
// the first outage's start to PATH's first data packet after it, and
// outage_idle_PATH, the longest time from then to the end with none on
// PATH. Counts: bytes; on networks that watch their links, per path what
// the downlink delivered (wire_P, IP packets) and when its data started
// and ended (wireCounts); for mph2 per path what mph2.Counts
// records (bytes, received, budget, switches, ...); from nginx's or h2o's
// access log (every URL carries ?rep=N, so a run's requests are its own):
// server_requests, server_body_bytes (response body bytes the server wrote
// for them, into dead paths too) and redone_bytes, server_body_bytes minus
// the object's size.
type Config struct {
	Tool         string           `param:"tool" enum:"mph2,aria2,axel,curl,mptcp" help:"the client"`
	Server       string           `param:"server" enum:"nginx,h2o,shunt" help:"the server, with TLS"`
	Path         string           `param:"path" help:"tool curl: the path; tool mph2: the one path to use (default: all)"`
	Mode         string           `param:"mode" enum:"aggregate,handover,interactive" help:"tool mph2: how the paths are used"`
	Budget       string           `param:"budget" help:"tool mph2: PATH=SIZE, at most SIZE bytes on PATH"`
	Conns        int              `param:"conns" help:"tools aria2 (-x, -s) and axel (-n): connections"`
	Outages      string           `param:"outages" help:"PATH@START[+LEN],...: outages cut into the links after the timed start"`
	RestartLinks bool             `param:"restart_links" help:"restart traced links at the timed start"`
	TraceShift   time.Duration    `param:"trace_shift" help:"start mahimahi traces rep x this far in"`
	HandoverAft  time.Duration    `param:"handover_after" help:"tool mph2, mode handover: the stall that moves to the next path"`
	CC           string           `param:"cc" help:"congestion control of the client namespace (the tools') and of mph2's sockets"`
	MinSplit     experiment.Bytes `param:"min_split" help:"tool aria2: -k (its minimum is 1M)"`
	HTTP         string           `param:"http" enum:"2,1.1" help:"tool curl: 1.1 for HTTP/1.1 (default: h2 by ALPN)"`
}

// DefaultConfig is MP-H2 aggregating both paths from nginx.
func DefaultConfig() Config {
	return Config{Tool: "mph2", Server: peers.Nginx, Mode: "aggregate", Conns: 16, CC: origin.CC, MinSplit: 1 << 20,
		HandoverAft: multipath.DefaultHandoverAfter}
}

// Validate checks the options together.
func (c Config) Validate() error {
	switch {
	case c.Tool == "curl" && c.Path == "":
		return experiment.Errorf("params.path", "", "tool curl needs path=NAME")
	case c.Tool != "curl" && c.HTTP != "":
		return experiment.Errorf("params.http", c.HTTP, "only tool curl chooses its HTTP version")
	case c.Tool != "curl" && c.Tool != "mph2" && c.Path != "":
		return experiment.Errorf("params.path", c.Path, "only tools curl and mph2 use one path")
	case c.Tool != "mph2" && (c.Mode != "aggregate" || c.Budget != ""):
		return experiment.Errorf("params.tool", c.Tool, "mode and budget are tool mph2's")
	case c.Conns < 1 || (c.Tool == "aria2" && c.Conns > 16):
		return experiment.Errorf("params.conns", strconv.Itoa(c.Conns), "want 1..16 (aria2's -x limit)")
	case c.MinSplit < 1<<20:
		return experiment.Errorf("params.min_split", strconv.FormatInt(int64(c.MinSplit), 10), "aria2's -k is at least 1M")
	case c.TraceShift < 0:
		return experiment.Errorf("params.trace_shift", c.TraceShift.String(), "want a positive duration")
	case c.HandoverAft <= 0:
		return experiment.Errorf("params.handover_after", c.HandoverAft.String(), "want a positive duration")
	}
	if c.Budget != "" {
		if _, _, err := mph2.ParseBudget(c.Budget); err != nil {
			return experiment.Errorf("params.budget", c.Budget, "%v", err)
		}
	}
	if _, err := ParseOutages(c.Outages); err != nil {
		return experiment.Errorf("params.outages", c.Outages, "%v", err)
	}
	return nil
}

// Kind is the experiment of driver "mptools".
var Kind = experiment.Kind[Config, *Session]{
	Name:        "mptools",
	Default:     DefaultConfig,
	CheckObject: func(_ Config, o experiment.Object) error { return origin.CheckSizeOnly("mptools", o) },
	Start:       Start,
}

// Session fetches from one condition's server.
type Session struct {
	c       Config
	env     *experiment.Env
	origin  *origin.Server
	outages []Outage
	tool    string // the tool's binary (external tools)
	info    map[string]string
	undo    func() error
}

// Start checks the tool and the paths, writes the objects, starts the
// server in the (first) server namespace and makes cc the client
// namespace's default (the tools cannot set it per socket).
func Start(ctx context.Context, env *experiment.Env, c Config) (*Session, error) {
	s := &Session{c: c, env: env, undo: func() error { return nil }, info: map[string]string{}}
	s.outages, _ = ParseOutages(c.Outages) // checked by Validate
	names := map[string]bool{}
	for _, p := range env.Net.Paths() {
		names[p.Name] = true
	}
	for _, o := range s.outages {
		if !names[o.Path] {
			return nil, &experiment.FieldError{Field: "params.outages", Value: c.Outages, Err: fmt.Errorf("no path %s in condition %s", o.Path, env.Condition.Name)}
		}
	}
	if c.Path != "" && !names[c.Path] {
		return nil, &experiment.FieldError{Field: "params.path", Value: c.Path, Err: fmt.Errorf("no such path in condition %s", env.Condition.Name)}
	}
	if c.Budget != "" {
		if name, _, _ := mph2.ParseBudget(c.Budget); !names[name] || c.Path != "" && name != c.Path {
			return nil, &experiment.FieldError{Field: "params.budget", Value: c.Budget, Err: fmt.Errorf("no path %s in condition %s used by the run", name, env.Condition.Name)}
		}
	}
	switch c.Tool {
	case "mph2":
		s.info["client"] = "shunt mph2 (" + c.Mode + ", in-process)"
	default:
		bin := map[string]string{"aria2": "aria2c", "axel": "axel", "curl": "curl", "mptcp": "curl"}[c.Tool]
		ver, err := peers.Version(bin)
		if err != nil {
			return nil, err
		}
		s.tool, s.info["client"] = bin, ver
		if c.Tool == "mptcp" {
			mv, err := peers.Version("mptcpize")
			if err != nil {
				return nil, err
			}
			s.info["client"] += " under " + mv
		}
	}
	if err := origin.WriteObjects(env.Dir, env.Objects); err != nil {
		return nil, err
	}
	var err error
	s.origin, err = origin.Start(ctx, env.Net.Servers()[0], c.Server, env.Dir, origin.Addr(env.Net, env.Port), true, env.Log,
		origin.Extras{MPTCP: c.Tool == "mptcp", AccessLog: c.Server != peers.Shunt})
	if err != nil {
		return nil, err
	}
	for k, v := range s.origin.Info {
		s.info[k] = v
	}
	client := env.Net.Client()
	if s.undo, err = origin.SetNamespaceCC(client, c.CC); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	if cc, err := origin.NamespaceCC(client); err == nil {
		s.info["client_cc"] = cc + " (the client namespace's default)"
	}
	return s, nil
}

func (s *Session) Info() map[string]string { return s.info }

// Close stops the server and restores the namespace's CC.
func (s *Session) Close() error {
	var errs []error
	errs = append(errs, s.undo())
	if s.origin != nil {
		errs = append(errs, s.origin.Close())
	}
	return errors.Join(errs...)
}

// Run downloads the object once, with the condition's outages, and checks
// it by length and SHA-256.
func (s *Session) Run(ctx context.Context, r *experiment.Run) (experiment.Result, error) {
	sz, err := origin.ParseSizes(r.Object)
	if err != nil {
		return experiment.Result{}, err
	}
	// The request URI tells this run's requests in the server's log from
	// those of the runs before it, which may end after it started: the
	// tag those of the other repetitions, the path those of the other
	// objects (every object runs at each repetition, on the same server).
	uri := origin.ObjectPath(sz.Size) + "?rep=" + strconv.Itoa(r.Rep)
	url := "https://" + s.origin.Addr + uri
	file := filepath.Join(s.env.Dir, "dl", fmt.Sprintf("%s-%d", r.Object.Name, r.Rep))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return experiment.Result{}, err
	}
	defer os.Remove(file)
	info := map[string]string{}
	// The links' schedules start with the download.
	if s.c.RestartLinks || len(s.outages) > 0 {
		offs, err := origin.RestartTraces(s.env, r.Rep, s.c.TraceShift)
		if err != nil {
			return experiment.Result{}, err
		}
		for k, v := range offs {
			info[k] = v
		}
	}
	watched, err := watchLinks(s.env.Net)
	if err != nil {
		return experiment.Result{}, err
	}
	shift := time.Duration(r.Rep) * s.c.TraceShift
	cut := s.cutOutages(shift)
	start := time.Now()
	var res experiment.Result
	if s.c.Tool == "mph2" {
		res, err = s.runMPH2(ctx, url, file, sz.Size)
	} else {
		err = s.runTool(ctx, url, file)
	}
	elapsed := time.Since(start)
	delivered := map[string][]experiment.Delivery{}
	for p, stop := range watched {
		delivered[p] = stop()
	}
	began, cerr := cut()
	if err == nil {
		err = cerr
	}
	rec := s.recoveries(delivered, began, start.Add(elapsed))
	if err != nil {
		return res, errors.Join(err, rec.failed())
	}
	if err := checkFile(file, sz.Size); err != nil {
		return res, fmt.Errorf("%s: %w", s.c.Tool, err)
	}
	if res.Metrics == nil {
		res.Metrics, res.Counts = map[string]float64{}, map[string]float64{"bytes": float64(sz.Size)}
	}
	res.Metrics["time"] = elapsed.Seconds()
	for k, v := range rec {
		res.Metrics[k] = v
	}
	if s.c.Server != peers.Shunt {
		reqs, err := s.origin.Requests(ctx, uri)
		if err != nil {
			return res, fmt.Errorf("the server's log of the run: %w", err)
		}
		var body int64
		for _, a := range reqs {
			body += a.Body
		}
		res.Counts["server_requests"] = float64(len(reqs))
		res.Counts["server_body_bytes"] = float64(body)
		res.Counts["redone_bytes"] = float64(body - sz.Size)
	}
	for k, v := range wireCounts(delivered, start) {
		res.Counts[k] = v
	}
	if res.Info == nil {
		res.Info = map[string]string{}
	}
	for k, v := range info {
		res.Info[k] = v
	}
	if len(s.outages) > 0 {
		res.Info["outages"] = s.c.Outages
	}
	res.Sock = experiment.SockOpts{CC: s.c.CC, MPTCP: s.c.Tool == "mptcp"}
	return res, nil
}

// recovery is how the other paths carried on after an outage began at cut,
// until the download ended at end, from the times their data packets were
// delivered: outage_first_PATH from cut to PATH's first after it (absent if
// none came), outage_idle_PATH the longest stretch of [cut, end] without
// one (a stretch under way at cut counts from cut).
type recovery map[string]float64

// recoveries reads the paths other than the first outage's; none if the
// run ended before that outage began (cut is zero).
func (s *Session) recoveries(delivered map[string][]experiment.Delivery, cut, end time.Time) recovery {
	if len(s.outages) == 0 || cut.IsZero() {
		return nil
	}
	rec := recovery{}
	for name, ds := range delivered {
		if name == s.outages[0].Path {
			continue
		}
		first, idle, ok := afterCut(ds, cut, end)
		if ok {
			rec["outage_first_"+name] = first.Seconds()
		}
		rec["outage_idle_"+name] = idle.Seconds()
	}
	return rec
}

// afterCut reads one path's deliveries (in order) around an outage that
// began at cut; only data packets count.
func afterCut(ds []experiment.Delivery, cut, end time.Time) (first, idle time.Duration, ok bool) {
	last := cut
	for _, d := range ds {
		t := d.At
		if d.Bytes < dataPacket || t.Before(cut) {
			continue
		}
		if t.After(end) {
			break
		}
		if !ok {
			first, ok = t.Sub(cut), true
		}
		idle, last = max(idle, t.Sub(last)), t
	}
	return first, max(idle, end.Sub(last)), ok
}

// failed says, for a run that failed, what the other paths delivered after
// the outage (a tool that never used them did not recover).
func (rec recovery) failed() error {
	if len(rec) == 0 {
		return nil
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		parts = append(parts, fmt.Sprintf("%s %.3f s", k, rec[k]))
	}
	return fmt.Errorf("after the outage: %s (no outage_first_PATH: no data packet on PATH)", strings.Join(parts, ", "))
}

// cutOutages applies the outages on timers from now; the returned function
// stops them, puts every path back as the condition has it, so the next
// run starts on working links, and says when the first outage began (zero
// if it did not).
func (s *Session) cutOutages(shift time.Duration) func() (time.Time, error) {
	if len(s.outages) == 0 {
		return func() (time.Time, error) { return time.Time{}, nil }
	}
	var mu sync.Mutex
	var errs []error
	var timers []*time.Timer
	var began time.Time
	done := false // a timer that fired as they were stopped must not undo the restore
	set := func(i int, at time.Duration, dead bool) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		o := s.outages[i]
		if i == 0 && dead {
			began = time.Now()
		}
		if err := origin.SetPath(s.env, o.Path, shift+at, dead); err != nil {
			errs = append(errs, fmt.Errorf("outage on %s at %v: %w", o.Path, at, err))
		}
	}
	for i, o := range s.outages {
		timers = append(timers, time.AfterFunc(o.Start, func() { set(i, o.Start, true) }))
		if o.Len > 0 {
			timers = append(timers, time.AfterFunc(o.Start+o.Len, func() { set(i, o.Start+o.Len, false) }))
		}
	}
	return func() (time.Time, error) {
		for _, t := range timers {
			t.Stop()
		}
		mu.Lock()
		defer mu.Unlock()
		done = true
		for _, o := range s.outages {
			if err := origin.SetPath(s.env, o.Path, 0, false); err != nil {
				errs = append(errs, err)
			}
		}
		return began, errors.Join(errs...)
	}
}

func (s *Session) addrs() []string {
	var a []string
	for _, p := range s.env.Net.Paths() {
		a = append(a, p.ClientAddr)
	}
	return a
}

func (s *Session) addrOf(name string) string {
	for _, p := range s.env.Net.Paths() {
		if p.Name == name {
			return p.ClientAddr
		}
	}
	return ""
}

// runTool runs the external tool in the client namespace, writing file.
func (s *Session) runTool(ctx context.Context, url, file string) error {
	var args []string
	var env []string
	switch s.c.Tool {
	case "aria2":
		n := strconv.Itoa(s.c.Conns)
		args = []string{"aria2c", "--multiple-interface=" + strings.Join(s.addrs(), ","), "-x", n, "-s", n,
			"-k", strconv.FormatInt(int64(s.c.MinSplit), 10), "--check-certificate=false",
			"--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false",
			"--console-log-level=warn", "--summary-interval=0", "--download-result=hide",
			"-d", filepath.Dir(file), "-o", filepath.Base(file), url}
	case "axel":
		// axel reads its interfaces from ~/.axelrc only (and then does
		// not bind to them: see Config).
		home := filepath.Join(filepath.Dir(file), "axel-home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			return err
		}
		rc := "interfaces = " + strings.Join(s.addrs(), " ") + "\n"
		if err := os.WriteFile(filepath.Join(home, ".axelrc"), []byte(rc), 0o644); err != nil {
			return err
		}
		env = []string{"HOME=" + home}
		args = []string{"axel", "-q", "-k", "-n", strconv.Itoa(s.c.Conns), "-o", file, url}
		os.Remove(file + ".st")
		defer os.Remove(file + ".st")
	case "curl":
		args = []string{"curl", "-sS", "--fail", "-k", "--interface", s.addrOf(s.c.Path), "-o", file}
		if s.c.HTTP == "1.1" {
			args = append(args, "--http1.1")
		}
		args = append(args, url)
	case "mptcp":
		args = []string{"mptcpize", "run", "curl", "-sS", "--fail", "-k", "--interface", s.env.Net.Paths()[0].ClientAddr, "-o", file, url}
	}
	cmd := s.env.Net.Client().Command(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, tail(out.String()))
	}
	return nil
}

// tail is the end of a tool's output, for an error.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

// runMPH2 downloads with a fresh mph2.Client over every path into file.
func (s *Session) runMPH2(ctx context.Context, url, file string, size int64) (experiment.Result, error) {
	mode, _ := multipath.ParseMode(s.c.Mode) // checked by the enum
	c := &mph2.Client{Mode: mode, HandoverAfter: s.c.HandoverAft, TLSConfig: &tls.Config{InsecureSkipVerify: true}}
	budgetPath, budget := "", int64(0)
	if s.c.Budget != "" {
		budgetPath, budget, _ = mph2.ParseBudget(s.c.Budget)
	}
	client := s.env.Net.Client()
	for _, pi := range s.env.Net.Paths() {
		if s.c.Path != "" && pi.Name != s.c.Path {
			continue
		}
		p := mph2.Path{Name: pi.Name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return client.DialContext(ctx, network, addr, experiment.SockOpts{CC: s.c.CC, Source: pi.ClientAddr})
		}}
		if pi.Name == budgetPath {
			p.Budget = budget
		}
		c.Paths = append(c.Paths, p)
	}
	defer c.Close()
	f, err := os.Create(file)
	if err != nil {
		return experiment.Result{}, err
	}
	defer f.Close()
	res, err := c.Download(ctx, url, f, mph2.Options{})
	if err != nil {
		return experiment.Result{}, err
	}
	if res.Size != size {
		return experiment.Result{}, fmt.Errorf("mph2 wrote %d bytes, want %d", res.Size, size)
	}
	out := experiment.Result{Metrics: map[string]float64{}, Counts: mph2.Counts(res), Info: map[string]string{}}
	for _, p := range res.Paths {
		out.Info["proto_"+p.Name] = p.Proto
		if p.Down {
			out.Info["down_"+p.Name] = p.Err
		}
	}
	return out, f.Close()
}

// checkFile compares the downloaded file with the generated object by
// length and SHA-256.
func checkFile(file string, size int64) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if want := content.Digest(size); n != size || [32]byte(h.Sum(nil)) != want {
		return fmt.Errorf("%s: %d bytes, SHA-256 %x; want %d bytes, %x", file, n, h.Sum(nil), size, want)
	}
	return nil
}
