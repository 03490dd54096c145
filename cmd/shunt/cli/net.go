package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/netem"
	"github.com/shunt-net/shunt/testbed"
)

var netCmd = &Command{
	Name:  "net",
	Usage: "net shell [link options] [--topology single|twopath|multihomed] [--server CMD] -- CMD... | net check [NAME...] [--json] | net cleanup",
	Short: "run a command over an emulated link (net shell), check the emulator's accuracy, remove stale namespaces",
}

func init() {
	netCmd.Run = runNet
	Register(netCmd)
}

func runNet(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "usage: shunt %s\n", netCmd.Usage)
		return errors.New("no net subcommand (want shell, check or cleanup)")
	}
	switch args[0] {
	case "shell":
		return runNetShell(ctx, args[1:])
	case "check":
		return runNetCheck(ctx, args[1:], os.Stdout)
	case "cleanup":
		return runNetCleanup(args[1:], os.Stdout)
	case "-h", "-help", "--help":
		fmt.Fprintf(os.Stdout, "usage: shunt %s\n", netCmd.Usage)
		return flag.ErrHelp
	}
	fmt.Fprintf(os.Stderr, "usage: shunt %s\n", netCmd.Usage)
	return fmt.Errorf("unknown net subcommand %q (want shell, check or cleanup)", args[0])
}

// runNetCleanup removes the testbed namespaces whose process is gone; it
// takes no arguments, so a mistyped flag (or --help) runs nothing.
func runNetCleanup(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("net cleanup", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: shunt net cleanup\n\nRemoves the testbed's network namespaces (and what runs in them) whose shunt process is gone.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("net cleanup takes no arguments, got %q", fs.Args())
	}
	removed, err := testbed.CleanupStale()
	for _, n := range removed {
		fmt.Fprintln(out, "removed", n)
	}
	return err
}

// linkFlags are the link options of `net shell`: each applies to both
// directions unless its --up-/--down- form overrides it.
type linkFlags struct {
	both, up, down map[string]*string
}

var linkKeys = []struct{ key, arg, help string }{
	{"delay", "DELAY", "one-way `DELAY` (RTT is twice it), e.g. 25ms"},
	{"jitter", "JITTER", "delay `JITTER` around DELAY, packets kept in order: 5ms (uniform +/- 5ms) or normal:5ms (standard deviation)"},
	{"rate", "RATE", "`RATE` such as 10Mbit, or a trace trace:FILE / step:FILE (default unlimited)"},
	{"trace", "TRACE", "bandwidth `TRACE`: [trace:|step:]FILE[@OFFSET], mahimahi unless step: or .step"},
	{"loss", "LOSS", "random loss: `LOSS` such as 1.5% or ge:p=0.01,r=0.3"},
	{"queue", "QUEUE", "bottleneck `QUEUE`: droptail[:packets=N|bytes=N], fq[...], codel[...]"},
}

func addLinkFlags(fs *flag.FlagSet) *linkFlags {
	lf := &linkFlags{map[string]*string{}, map[string]*string{}, map[string]*string{}}
	for _, k := range linkKeys {
		lf.both[k.key] = fs.String(k.key, "", k.help+", both directions")
		lf.up[k.key] = fs.String("up-"+k.key, "", "client-to-server `"+k.arg+"`")
		lf.down[k.key] = fs.String("down-"+k.key, "", "server-to-client `"+k.arg+"`")
	}
	return lf
}

// specs returns the up and down links the flags describe, as the text a
// scenario's condition holds (experiment.LinkSpec); a rate given as a
// trace reference (trace:FILE, step:FILE) is the link's trace.
func (lf *linkFlags) specs() (up, down experiment.LinkSpec, err error) {
	pick := func(dir map[string]*string, k string) string {
		if v := *dir[k]; v != "" {
			return v
		}
		return *lf.both[k]
	}
	build := func(dir map[string]*string, name string) (experiment.LinkSpec, error) {
		l := experiment.LinkSpec{Delay: pick(dir, "delay"), Jitter: pick(dir, "jitter"), Rate: pick(dir, "rate"), Trace: pick(dir, "trace"), Loss: pick(dir, "loss"), Queue: pick(dir, "queue")}
		if strings.HasPrefix(l.Rate, "trace:") || strings.HasPrefix(l.Rate, "step:") {
			if l.Trace != "" {
				return l, fmt.Errorf("--rate and --trace (%s): give either a rate or a trace", name)
			}
			l.Rate, l.Trace = "", l.Rate
		}
		if l.Rate != "" && l.Trace != "" {
			return l, fmt.Errorf("--rate and --trace (%s): give either a rate or a trace", name)
		}
		return l, nil
	}
	up, uerr := build(lf.up, "up")
	down, derr := build(lf.down, "down")
	return up, down, errors.Join(uerr, derr)
}

// condition is the one-path condition the link flags describe, checked
// (every text parsed, trace files read) by the factory that will build it.
func (lf *linkFlags) condition(nf *emulated.Factory) (experiment.Condition, error) {
	up, down, err := lf.specs()
	if err != nil {
		return experiment.Condition{}, err
	}
	c := experiment.Condition{Name: "link", Topology: "single", Paths: []experiment.PathSpec{{Name: "link", Up: up, Down: down}}}
	return c, nf.Check(c)
}

// configs returns the emulator's configurations of the up and down links.
func (lf *linkFlags) configs(nf *emulated.Factory) (up, down netem.LinkConfig, err error) {
	c, err := lf.condition(nf)
	if err != nil {
		return up, down, err
	}
	up, uerr := nf.LinkConfig(c.Paths[0].Up, "up")
	down, derr := nf.LinkConfig(c.Paths[0].Down, "down")
	return up, down, errors.Join(uerr, derr)
}

func runNetShell(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("net shell", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: shunt net shell [link options] [--topology single|twopath|multihomed] [--wifi SPEC] [--cell SPEC] [--server CMD] [--log DIR] [--seed N] -- CMD [ARGS...]")
		fmt.Fprintln(fs.Output(), "\nRuns CMD in the client namespace over the emulated link(s); the link options set every path,")
		fmt.Fprintln(fs.Output(), "--wifi/--cell replace a path's link in both directions (\"rate=10Mbit delay=25ms loss=1%\").")
		fs.PrintDefaults()
	}
	lf := addLinkFlags(fs)
	topology := fs.String("topology", "single", "`single`, twopath (wifi+cell to one server) or multihomed (wifi to server A, cell to server B)")
	wifi := fs.String("wifi", "", "link `SPEC` of the wifi path (twopath, multihomed)")
	cell := fs.String("cell", "", "link `SPEC` of the cell path (twopath, multihomed)")
	server := fs.String("server", "", "shell `CMD` started in the server namespace(s) first")
	logDir := fs.String("log", "", "write per-direction link logs into `DIR`")
	seed := fs.Int64("seed", 1, "`SEED` of the loss models")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		fs.Usage()
		return errors.New("no command given (put it after --)")
	}
	up, down, err := lf.configs(&emulated.Factory{})
	if err != nil {
		return err
	}
	pathSpec := func(name, spec string) (testbed.PathSpec, error) {
		p := testbed.PathSpec{Name: name, Up: up, Down: down}
		if spec != "" {
			c, err := netem.ParseLinkSpec(spec)
			if err != nil {
				return p, fmt.Errorf("--%s: %w", name, err)
			}
			p.Up, p.Down = c, c
		}
		return p, nil
	}
	opts := testbed.Options{LogDir: *logDir, Seed: *seed}
	var n *testbed.Net
	switch *topology {
	case "single":
		if *wifi != "" || *cell != "" {
			return errors.New("--wifi and --cell need --topology twopath or multihomed")
		}
		n, err = testbed.NewSingle(ctx, testbed.PathSpec{Up: up, Down: down}, opts)
	case "twopath", "multihomed":
		w, werr := pathSpec("wifi", *wifi)
		c, cerr := pathSpec("cell", *cell)
		if err := errors.Join(werr, cerr); err != nil {
			return err
		}
		if *topology == "twopath" {
			n, err = testbed.NewTwoPath(ctx, w, c, opts)
		} else {
			n, err = testbed.NewMultiHomed(ctx, w, c, opts)
		}
	default:
		return fmt.Errorf("--topology %q: want single, twopath or multihomed", *topology)
	}
	if err != nil {
		return err
	}
	var servers []*exec.Cmd // reaped once the teardown has killed them
	defer func() {
		fmt.Fprintf(os.Stderr, "shunt net: emulator CPU %v\n", n.EmulatorCPU().Round(time.Millisecond))
		if cerr := n.Close(); cerr != nil {
			fmt.Fprintf(os.Stderr, "shunt net: teardown: %v\n", cerr)
		}
		for _, srv := range servers {
			srv.Wait()
		}
	}()

	env := os.Environ()
	for i, p := range n.Paths {
		fmt.Fprintf(os.Stderr, "shunt net: path %s: client %s (%s) -> server %s in %s; up: %s; down: %s\n",
			p.Name, p.ClientAddr, p.ClientIface, p.ServerAddr, p.Server.Name, pathConfig(n, i, true), pathConfig(n, i, false))
		env = append(env, fmt.Sprintf("SHUNT_%s_ADDR=%s", strings.ToUpper(p.Name), p.ClientAddr), fmt.Sprintf("SHUNT_%s_SERVER=%s", strings.ToUpper(p.Name), p.ServerAddr))
	}
	env = append(env, "SHUNT_SERVER="+n.Paths[0].ServerAddr.String())
	fmt.Fprintf(os.Stderr, "shunt net: server address %s (also in $SHUNT_SERVER)\n", n.Paths[0].ServerAddr)

	if *server != "" {
		for _, s := range n.Servers {
			srv := s.Command(ctx, "sh", "-c", *server)
			srv.Env, srv.Stdout, srv.Stderr = env, os.Stderr, os.Stderr
			if err := srv.Start(); err != nil {
				return fmt.Errorf("--server %q in %s: %w", *server, s.Name, err)
			}
			// The teardown (Close) kills whatever still runs in the
			// namespace; only then can Wait reap it.
			servers = append(servers, srv)
			if err := testbed.WaitListening(ctx, s, 3*time.Second); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				fmt.Fprintf(os.Stderr, "shunt net: --server: %v; starting the command anyway\n", err)
			}
		}
	}

	cmd := n.Client.Command(ctx, cmdArgs[0], cmdArgs[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	// On Ctrl-C the terminal already signalled the command; give it a moment
	// to exit on its own before the kill.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: %w", strings.Join(cmdArgs, " "), err)
	}
	return nil
}

func pathConfig(n *testbed.Net, i int, up bool) string {
	c, err := n.LinkConfig(n.Paths[i].Name, map[bool]testbed.Direction{true: testbed.Up, false: testbed.Down}[up])
	if err != nil {
		return err.Error()
	}
	return c.String()
}

func runNetCheck(ctx context.Context, args []string, out io.Writer) error {
	return runChecks(ctx, args, out, testbed.Checks)
}

// runChecks runs the checks args name (all of them if none) in order.
func runChecks(ctx context.Context, args []string, out io.Writer, checks []testbed.Check) error {
	fs := flag.NewFlagSet("net check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object per check")
	fs.Usage = func() {
		names := make([]string, len(checks))
		for i, c := range checks {
			names[i] = c.Name
		}
		fmt.Fprintf(fs.Output(), "usage: shunt net check [--json] [NAME...]\n\nMeasures the emulator's accuracy (needs root); checks: %s\n", strings.Join(names, " "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, a := range fs.Args() {
		want[a] = true
	}
	unknown := maps.Clone(want)
	for _, c := range checks {
		delete(unknown, c.Name)
	}
	for n := range unknown {
		return fmt.Errorf("unknown check %q", n)
	}
	var failed []string
	ran := 0
	for _, c := range checks {
		if len(want) > 0 && !want[c.Name] {
			continue
		}
		ran++
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r, err := c.Run(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("check %s: %w", c.Name, err)
		}
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(out, string(b))
		} else {
			fmt.Fprintln(out, r)
		}
		if !r.Pass {
			failed = append(failed, r.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d checks off target: %s (the machine's load shows in these figures; see docs/testbed.md)", len(failed), ran, strings.Join(failed, ", "))
	}
	return nil
}
