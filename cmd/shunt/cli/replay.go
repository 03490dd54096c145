package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/experiment/pageload"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/fetch"
)

var replayCmd = &Command{
	Name:  "replay",
	Usage: "replay PAGE [--proto h1|h2|h3] [--conns N] [--streams N] [--schedule interleaved|sequential|browser] [--pacing] [--compute] [--tls=false] [--smig POLICY] [--policy PRESET|FILE|mph2 [--expensive PATH]] [--path PATH] [--mptcp] [--browser] [--url URL [--insecure]] [--json FILE] [link options]",
	Short: "load a page's dependency graph once over HTTP/1.1, HTTP/2 or HTTP/3 and draw its waterfall",
}

func init() {
	replayCmd.Run = func(ctx context.Context, args []string) error {
		return runReplay(ctx, args, os.Stdout, os.Stderr)
	}
	Register(replayCmd)
}

// replayPort is where the page server listens in an emulated network.
const replayPort = 8443

// replay-only options, which a Chromium load (--browser) does not take.
var replayOnly = []string{"conns", "streams", "schedule", "tls", "smig", "policy", "expensive", "path", "mptcp"}

// runReplay runs the page-load experiment (package pageload) once: the
// options are the experiment's own (the same as scenario params), the
// network is the link options' emulated link, this machine's loopback, or a
// server at --url, and --json appends the run's record, as `shunt bench`
// writes it.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(replayCmd)
	fs.SetOutput(stderr)
	cfg := pageload.DefaultConfig()
	given := experiment.Flags(fs, &cfg)
	rawURL := fs.String("url", "", "load from a server at `URL` (https://HOST:PORT) that shunt serve --page PAGE [--h3] runs, instead of a server of its own")
	insecure := fs.Bool("insecure", false, "with --url: accept any server certificate")
	jsonFile := fs.String("json", "", "append the load's record (the JSON line of shunt bench's runs.jsonl) to `FILE`")
	width := fs.Int("width", 80, "waterfall width in columns")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up on the load after this long")
	seed := fs.Int64("seed", 1, "`SEED` of the emulated links' loss")
	browserMode := fs.Bool("browser", false, "load the page's generated site (replay/browser) in headless Chromium instead of walking its graph; --proto h1 disables HTTP/2")
	lf := addLinkFlags(fs)
	// Go's flag package stops at the first argument, so PAGE may come first.
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		if len(pos) == 0 {
			return errors.New("no page given")
		}
		return fmt.Errorf("one page at a time, got %q", pos)
	}
	obj := experiment.Object{Name: pos[0]}
	start, conf, err := replayKind(cfg, *browserMode, given())
	if err != nil {
		return err
	}
	w, err := openJSON(*jsonFile)
	if err != nil {
		return err
	}
	if w != nil {
		defer w.Close()
	}
	pg, err := pageload.LoadPage(obj)
	if err != nil {
		return err
	}
	for _, w := range pg.Warnings {
		fmt.Fprintf(stderr, "%s: %s\n", pg.Source, w)
	}
	nf := &emulated.Factory{Shipped: bench.ShippedFile}
	cond, err := lf.condition(nf)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "shunt-replay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := &experiment.Env{Condition: cond, Objects: []experiment.Object{obj}, Dir: dir, Log: stderr}
	var sess experiment.Session
	switch {
	case *rawURL != "":
		if lf.set() || cfg.Pacing {
			return errors.New("--url loads from a server elsewhere: link options and --pacing need the replay's own server")
		}
		u, err := url.Parse(*rawURL)
		if err != nil || u.Host == "" {
			return fmt.Errorf("--url %q: want SCHEME://HOST:PORT", *rawURL)
		}
		cfg.TLS = u.Scheme == "https" || cfg.Proto == fetch.H3
		env.Net = emulated.Local()
		env.Condition = experiment.Condition{Name: "remote", Topology: "single", Paths: []experiment.PathSpec{{Name: "remote"}}}
		if *browserMode {
			if sess, err = pageload.RemoteChromium(pageload.ChromiumConfig{Proto: cfg.Proto, Compute: cfg.Compute}, u.Host, *rawURL, stderr, env.Objects, pg); err != nil {
				return err
			}
		} else {
			sess = pageload.Remote(cfg, u.Host, &tls.Config{InsecureSkipVerify: *insecure}, *rawURL, pg)
		}
		defer sess.Close()
	case lf.set():
		if env.Net, err = emulate(ctx, nf, cond, *seed); err != nil {
			return err
		}
		defer env.Net.Close()
		env.Port = replayPort
	default:
		cond.Name = "loopback"
		env.Condition, env.Net = cond, emulated.Local()
	}
	if sess == nil {
		if sess, err = start(ctx, env); err != nil {
			return err
		}
		defer sess.Close()
	}
	run := &experiment.Run{Scenario: "shunt replay", Condition: env.Condition, Protocol: conf, Object: obj, Seed: *seed}
	rec, err := runCommand(ctx, env.Net, sess, run, *jsonFile, w, *timeout)
	if err != nil {
		return err
	}
	if *browserMode {
		return printBrowserLoad(stdout, pg, rec)
	}
	return printReplay(stdout, pg, rec, *width)
}

// startFunc starts an experiment's session in an environment.
type startFunc func(ctx context.Context, env *experiment.Env) (experiment.Session, error)

// replayKind picks the experiment, the replay walk or Chromium with the
// options they share, and returns what starts it and the protocol its
// record carries.
func replayKind(cfg pageload.Config, browser bool, given []string) (startFunc, experiment.Protocol, error) {
	if !browser {
		if err := cfg.Validate(); err != nil {
			return nil, experiment.Protocol{}, flagError(err)
		}
		label, _ := cfg.FetchLabel()
		start := func(ctx context.Context, env *experiment.Env) (experiment.Session, error) {
			return pageload.Start(ctx, env, cfg)
		}
		return start, pageload.Replay.Protocol(label, cfg), nil
	}
	for _, k := range replayOnly {
		if slices.Contains(given, k) {
			return nil, experiment.Protocol{}, fmt.Errorf("--%s: the replay's option; Chromium (--browser) takes --proto, --compute and --pacing", experiment.FlagName(k))
		}
	}
	cc := pageload.ChromiumConfig{Proto: cfg.Proto, Compute: cfg.Compute, Pacing: cfg.Pacing}
	start := func(ctx context.Context, env *experiment.Env) (experiment.Session, error) {
		return pageload.StartChromium(ctx, env, cc)
	}
	return start, pageload.Chromium.Protocol("chromium-"+cc.Proto, cc), nil
}

func printReplay(w io.Writer, pg *page.Page, rec *experiment.Record, width int) error {
	r, err := pageload.LoadOf(rec.Info)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s over %s (%s), %d connection(s), server %s\n", pg.Name, rec.Info["transport"], rec.Info["http"], int(rec.Counts["connections"]), rec.Info["where"])
	if p := rec.Info["smig_policy"]; p != "" {
		fmt.Fprintf(w, "SMig %s: %d response(s) migrated\n", p, int(rec.Counts["smig_migrated"]))
	}
	if err := replay.WriteWaterfall(w, r, width); err != nil {
		return err
	}
	fmt.Fprintf(w, "PLT %.1f ms\n", float64(r.PLT)/float64(time.Millisecond))
	return nil
}

func printBrowserLoad(w io.Writer, pg *page.Page, rec *experiment.Record) error {
	ms := func(metric string) float64 { return rec.Metrics[metric] * 1000 }
	fmt.Fprintf(w, "%s in %s (%s), %d of %d objects, server %s\n", pg.Name, rec.Info["client"], rec.Info["http"], int(rec.Counts["resources"])+1, int(rec.Counts["objects"]), rec.Info["where"])
	fmt.Fprintf(w, "connected %.1f ms, first byte of the HTML %.1f ms\n", ms("connected"), ms("first_byte"))
	fmt.Fprintf(w, "DOMContentLoaded %.1f ms, last response %.1f ms\nPLT %.1f ms (loadEventEnd)\n", ms("dcl"), ms("last_response"), ms("plt"))
	fmt.Fprintf(w, "graph: %s\n", rec.Info["edges_text"])
	return nil
}

// set reports whether any link option was given.
func (lf *linkFlags) set() bool {
	for _, m := range []map[string]*string{lf.both, lf.up, lf.down} {
		for _, v := range m {
			if *v != "" {
				return true
			}
		}
	}
	return false
}
