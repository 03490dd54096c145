package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/pageload"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/netem"
	"github.com/shunt-net/shunt/replay/floor"
	"github.com/shunt-net/shunt/testbed"
)

var floorCmd = &Command{
	Name:  "floor",
	Usage: "floor SCENARIO [--condition NAME] [--expensive PATH --share FRACTION] [--setup N] [--headers N] [--window N] [--chain] [--compute] [--dcl] [--urgent-on PATH] [--rest-on PATH]",
	Short: "lower bounds on a scenario's page load times from the pages' graphs and the paths' rates and RTTs (package replay/floor)",
}

func init() {
	floorCmd.Run = func(ctx context.Context, args []string) error {
		return runFloor(args, os.Stdout, os.Stderr)
	}
	Register(floorCmd)
}

// runFloor prints, per page of a scenario's condition, the bound on each
// path alone, on all paths, and on all paths with the expensive one capped.
func runFloor(args []string, stdout, stderr io.Writer) error {
	fs := newFlags(floorCmd)
	fs.SetOutput(stderr)
	condName := fs.String("condition", "", "the scenario's condition `NAME` (default: its first)")
	expensive := fs.String("expensive", "", "the `PATH` whose share of the page's bytes --share caps")
	share := fs.Float64("share", 0.25, "the most of the page's bytes the expensive path may carry, a `FRACTION`")
	setup := fs.Int("setup", 2, "round trips before a path carries a request: 2 for TCP + TLS 1.3, 1 for h2c")
	compute := fs.Bool("compute", false, "computations take their recorded time")
	chain := fs.Bool("chain", false, "charge the cap along the graph's chains: each object asked for no sooner than the objects it needs can all have arrived within the caps, and the capped bytes those take not left for the objects after them (replay/floor's chain bound)")
	dcl := fs.Bool("dcl", false, "bound the DOMContentLoaded analogue instead: every activity of the urgent objects (hints.FromPage: document, style sheets, parser-blocking scripts) done")
	urgentOn := fs.String("urgent-on", "", "add a column for one placement: the urgent objects (hints.FromPage) on `PATH` only (no cap)")
	restOn := fs.String("rest-on", "", "... and the other objects on `PATH` only")
	window := fs.Int("window", 0, "add TCP's slow start: at most `N` full-size packets in each path's first round trip of response bytes (its initial window plus the handshake's packets acknowledged), each later round trip at most twice the one before; 0: the rate from the first byte on")
	headers := fs.Int("headers", 52, "header bytes of a full-size packet (IPv4 20 + TCP 20 + timestamps 12): a path's rate carries body in at most MTU-headers bytes of every MTU")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("want one scenario")
	}
	sc, _, err := bench.Load(pos[0])
	if err != nil {
		return err
	}
	i := slices.IndexFunc(sc.Conditions, func(c experiment.Condition) bool { return *condName == "" || c.Name == *condName })
	if i < 0 {
		return fmt.Errorf("scenario %s has no condition %q", sc.Name, *condName)
	}
	cond := sc.Conditions[i]
	paths := make([]floor.Path, len(cond.Paths))
	for i, ps := range cond.Paths {
		if paths[i], err = floorPath(ps, *setup, *headers); err != nil {
			return fmt.Errorf("condition %s: %w", cond.Name, err)
		}
		paths[i].Window, paths[i].Segment = *window, testbed.MTU-*headers
	}
	pathIndex := func(name string) (int, error) {
		i := slices.IndexFunc(paths, func(p floor.Path) bool { return p.Name == name })
		if name != "" && i < 0 {
			return i, fmt.Errorf("condition %s has no path %q", cond.Name, name)
		}
		return i, nil
	}
	exp, err := pathIndex(*expensive)
	if err != nil {
		return err
	}
	urgentPin, err := pathIndex(*urgentOn)
	if err != nil {
		return err
	}
	restPin, err := pathIndex(*restOn)
	if err != nil {
		return err
	}
	pinned := urgentPin >= 0 || restPin >= 0
	what := "the page load time"
	if *dcl {
		what = "the DOMContentLoaded analogue"
	}
	fmt.Fprintf(stdout, "# %s, condition %s: lower bounds on %s (s), setup %d RTT, compute %v, body at most %d of every %d bytes on the wire, slow start from %d packets (0: none)\n",
		sc.Name, cond.Name, what, *setup, *compute, testbed.MTU-*headers, testbed.MTU, *window)
	for _, p := range paths {
		fmt.Fprintf(stdout, "# path %s: %.0f bytes/s, RTT %v\n", p.Name, p.Rate, p.RTT)
	}
	configs := []floor.Config{}
	head := "| page | bytes |"
	for _, p := range paths {
		configs = append(configs, floor.Config{Paths: []floor.Path{p}})
		head += " " + p.Name + " alone |"
	}
	configs = append(configs, floor.Config{Paths: paths})
	head += " all paths |"
	if exp >= 0 {
		shares := slices.Repeat([]float64{1}, len(paths))
		shares[exp] = *share
		configs = append(configs, floor.Config{Paths: paths, MaxShare: shares})
		parts := "critical path / links"
		if *chain {
			parts += " / chain"
		}
		head += fmt.Sprintf(" all, %s <= %g %% | (%s) |", *expensive, *share*100, parts)
	}
	if pinned {
		head += fmt.Sprintf(" urgent on %s, the rest on %s |", cmp.Or(*urgentOn, "any"), cmp.Or(*restOn, "any"))
	}
	fmt.Fprintln(stdout, head)
	for _, o := range sc.Objects {
		pg, err := pageload.LoadPage(o)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "| %s | %d |", o.Name, pg.TotalSize())
		var until, pins []int
		for i, h := range hints.FromPage(pg) {
			if *dcl && h.Urgent() {
				until = append(until, i)
			}
			if h.Urgent() {
				pins = append(pins, urgentPin)
			} else {
				pins = append(pins, restPin)
			}
		}
		var last floor.Result
		for _, c := range configs {
			c.Compute, c.Until, c.Chain = *compute, until, *chain
			if last, err = floor.Bound(pg, c); err != nil {
				return fmt.Errorf("%s: %w", o.Name, err)
			}
			fmt.Fprintf(stdout, " %.3f |", last.PLT.Seconds())
		}
		if exp >= 0 {
			fmt.Fprintf(stdout, " %.3f / %.3f", last.Critical.Seconds(), last.Links.Seconds())
			if *chain {
				fmt.Fprintf(stdout, " / %.3f", last.Chain.Seconds())
			}
			fmt.Fprint(stdout, " |")
		}
		if pinned {
			r, err := floor.Bound(pg, floor.Config{Paths: paths, Pin: pins, Compute: *compute, Until: until, Chain: *chain})
			if err != nil {
				return fmt.Errorf("%s: %w", o.Name, err)
			}
			fmt.Fprintf(stdout, " %.3f |", r.PLT.Seconds())
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// floorPath is a scenario path as the bound sees it: the downlink's rate
// less the headers of full-size packets (the testbed's MTU), both
// directions' delays. Jitter can make a packet early and a trace has no one
// rate, so neither has a bound here; loss only slows a load.
func floorPath(ps experiment.PathSpec, setup, headers int) (floor.Path, error) {
	if headers < 0 || headers >= testbed.MTU {
		return floor.Path{}, fmt.Errorf("%d header bytes of a %d-byte packet", headers, testbed.MTU)
	}
	if ps.Up.Jitter != "" || ps.Down.Jitter != "" || ps.Up.Trace != "" || ps.Down.Trace != "" {
		return floor.Path{}, fmt.Errorf("path %s: jitter or a trace: no bound for them", ps.Name)
	}
	bps, err := netem.ParseRate(ps.Down.Rate)
	if err != nil {
		return floor.Path{}, fmt.Errorf("path %s: down rate: %w", ps.Name, err)
	}
	rtt, err := ps.RTT()
	if err != nil {
		return floor.Path{}, err
	}
	body := float64(testbed.MTU-headers) / testbed.MTU
	return floor.Path{Name: ps.Name, Rate: bps / 8 * body, RTT: rtt, Setup: setup}, nil
}
