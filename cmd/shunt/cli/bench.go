package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/bench/drivers"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
	"github.com/shunt-net/shunt/report"
)

var benchCmd = &Command{
	Name:  "bench",
	Usage: "bench [NAME|FILE] [--reps N] [--json FILE] [--out DIR] [--shard i/n] [--runs N] | bench NAME --slurm [--array N] [--nodes N] [--wait] [--out DIR] [-- SBATCH-OPTIONS...] | bench --list | bench merge OUT DIR... | bench report DIR [RECORDS...]",
	Short: "run an experiment scenario (default: holb) and report p25/p50/p75 per cell",
}

func init() {
	benchCmd.Run = runBench
	Register(benchCmd)
}

// Files of an output directory besides the report's.
const (
	linkLogDir = "linklog"   // per condition, path and direction (--link-log)
	benchLog   = "bench.log" // servers' and drivers' diagnostics
)

func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "merge" {
		return runBenchMerge(args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "report" {
		return runBenchReport(args[1:], os.Stdout)
	}
	fs := newFlags(benchCmd)
	list := fs.Bool("list", false, "print the shipped scenarios, one name a line")
	reps := fs.Int("reps", 0, "repetitions per cell (default: the scenario's)")
	jsonFile := fs.String("json", "", "write the summary as JSON to `FILE`")
	out := fs.String("out", "", "output `DIR`; an existing one is resumed (default ./shunt-results/NAME-TIME)")
	shardText := fs.String("shard", "", "run only shard `i/n` of the sweep")
	maxRuns := fs.Int("runs", 0, "do at most `N` of the runs not yet done, then stop; the same command again resumes (runs longer than a measuring hold, one or a few per hold)")
	linkLog := fs.Bool("link-log", false, "log every packet of the emulated links into DIR/"+linkLogDir)
	var sl slurmFlags
	sl.register(fs)
	args, sbatchOpts := splitDashDash(args)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := sl.check(*shardText, sbatchOpts); err != nil {
		return err
	}
	if sl.on && *jsonFile != "" {
		return errors.New("--json goes with the merge, not --slurm: shunt bench merge --json FILE OUT DIR... (the merge job writes summary.json)")
	}
	if *list {
		if len(pos) > 0 {
			return fmt.Errorf("--list takes no scenario, got %q", pos)
		}
		for _, n := range bench.Shipped() {
			fmt.Println(n)
		}
		return nil
	}
	if len(pos) > 1 {
		fs.Usage()
		return fmt.Errorf("one scenario at a time, got %q", pos)
	}
	name := "holb"
	if len(pos) == 1 {
		name = pos[0]
	}
	sc, src, err := bench.Load(name)
	if err != nil {
		return err
	}
	if *reps < 0 {
		return fmt.Errorf("--reps %d: must be positive", *reps)
	}
	if *maxRuns < 0 || (*maxRuns > 0 && sl.on) {
		return fmt.Errorf("--runs %d: want a positive count, and not with --slurm (its tasks run whole shards)", *maxRuns)
	}
	if *reps > 0 {
		sc.Reps = *reps // run IDs do not depend on the count, so more reps extend a sweep
	}
	var shard bench.Shard
	if *shardText != "" {
		if shard, err = bench.ParseShard(*shardText); err != nil {
			return err
		}
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("shunt-results", fmt.Sprintf("%s-%s", sc.Name, time.Now().Format("20060102-150405")))
		if shard.N > 1 {
			dir += fmt.Sprintf("-shard%dof%d", shard.I, shard.N)
		}
		if sl.on {
			dir += "-slurm"
		}
	}
	if os.Geteuid() != 0 {
		// Under --slurm too: the tasks run as the user who submits them.
		return errors.New("needs root: it builds network namespaces and TUN devices for the emulated links")
	}
	nf := &emulated.Factory{Shipped: bench.ShippedFile}
	if *linkLog {
		nf.LogDir = filepath.Join(dir, linkLogDir)
	}
	// A scenario refused before any run leaves no output directory behind.
	if err := sc.Check(drivers.Table, nf); err != nil {
		return err
	}
	if sl.on {
		return submitSlurm(ctx, sl, name, sc, src, dir, *linkLog, sbatchOpts, os.Stdout)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(dir, benchLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	r := &bench.Runner{
		Scenario: sc, Source: src, Networks: nf, Drivers: drivers.Table,
		OutDir: dir, Shard: shard, Progress: bench.NewProgress(os.Stderr), Log: logf,
		MaxRuns: *maxRuns, Binary: experiment.Binary(),
	}
	fmt.Fprintf(os.Stderr, "shunt bench %s: %d runs in %s\n", sc.Name, len(bench.Plan(sc)), dir)
	runErr := r.Run(ctx)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	// Report what runs.jsonl holds, also after Ctrl-C.
	if err := writeBenchReport(dir, *jsonFile, os.Stdout); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("interrupted; resume with: shunt bench %s --out %s", name, dir)
	}
	return failedRuns(dir, shard)
}

// failedRuns is an error when runs of the shard failed: a sweep with
// failed cells must not look like a success to a script.
func failedRuns(dir string, shard bench.Shard) error {
	recs, err := experiment.ReadRecords(filepath.Join(dir, bench.RunsFile))
	if err != nil {
		return err
	}
	failed, n := 0, 0
	for _, r := range bench.Latest(recs) {
		if shard.Has(&r.Run) {
			n++
			if !r.OK() {
				failed++
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (their errors are in the report's failures and in %s); resume retries them: --out %s", failed, n, bench.RunsFile, dir)
	}
	return nil
}

// parseInterspersed parses flags that may follow positional arguments
// (shunt bench holb --reps 3) and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func writeBenchReport(dir, jsonFile string, w io.Writer) error {
	secs, err := report.LinkLogSections(filepath.Join(dir, linkLogDir), filepath.Join(dir, "plots"))
	if err != nil {
		return err
	}
	sc, sum, recs, err := report.Write(dir, report.Options{Sections: secs})
	if err != nil {
		return err
	}
	if jsonFile != "" {
		if err := sum.WriteJSON(jsonFile); err != nil {
			return err
		}
	}
	if err := report.WriteTable(w, sc, sum, recs); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nresults: %s (runs.jsonl, summary.csv, plots/, report.html)\n", dir)
	return nil
}

func runBenchMerge(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench merge", flag.ContinueOnError)
	jsonFile := fs.String("json", "", "write the merged summary as JSON to `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: shunt bench merge [--json FILE] OUT DIR...")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		fs.Usage()
		return errors.New("merge needs an output directory and at least one input directory")
	}
	if _, _, err := bench.Merge(pos[0], pos[1:]); err != nil {
		return err
	}
	return writeBenchReport(pos[0], *jsonFile, w)
}

// runBenchReport writes the report of DIR's runs; record files given after
// it (--json lines of shunt replay, shunt get, or runs files) are added to
// DIR's runs first, so single runs become a table and plots.
func runBenchReport(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench report", flag.ContinueOnError)
	jsonFile := fs.String("json", "", "write the summary as JSON to `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: shunt bench report [--json FILE] DIR [RECORDS...]")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		fs.Usage()
		return errors.New("report needs a directory")
	}
	dir := pos[0]
	var recs []*experiment.Record
	for _, f := range pos[1:] {
		r, err := experiment.ReadRecords(f)
		if err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("%s: no records", f)
		}
		recs = append(recs, r...)
	}
	if len(recs) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		rw, err := experiment.OpenRecordWriter(filepath.Join(dir, bench.RunsFile))
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := rw.Write(r); err != nil {
				rw.Close()
				return err
			}
		}
		if err := rw.Close(); err != nil {
			return err
		}
	}
	return writeBenchReport(dir, *jsonFile, w)
}
