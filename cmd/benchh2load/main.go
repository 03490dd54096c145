// Command benchh2load measures `shunt serve`, h2o and nginx with h2load in one
// run: loopback, h2c with prior knowledge, the same static files from the
// same directory, and prints req/s and MB/s per server and object size with
// shunt's ratio to each other server. Run it through scripts/bench-h2load.
//
// Each cell is one run of -n requests after a short probe run: the probe's
// rate sets -n so that the measured run lasts about -target, bounded by
// -max-requests and a timeout, because h2load's -D reports 0 req/s here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/peers"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-h2load:", err)
		os.Exit(1)
	}
}

type config struct {
	servers     []string
	sizes       []string
	clients     int
	streams     int
	workers     int
	target      time.Duration
	timeout     time.Duration
	maxRequests int
	shuntBin    string
}

func run() error {
	var c config
	servers := flag.String("servers", "shunt,h2o,nginx", "servers to measure, comma-separated")
	sizes := flag.String("sizes", "16KB,1MB", "object sizes (KB=1000 bytes, KiB=1024)")
	flag.IntVar(&c.clients, "c", 10, "h2load clients (-c)")
	flag.IntVar(&c.streams, "m", 10, "h2load concurrent streams per client (-m)")
	flag.IntVar(&c.workers, "workers", runtime.NumCPU(), "server workers: nginx worker_processes, h2o num-threads, shunt GOMAXPROCS")
	flag.DurationVar(&c.target, "target", 3*time.Second, "aimed duration of each measured run")
	flag.DurationVar(&c.timeout, "timeout", time.Minute, "limit for each h2load run")
	flag.IntVar(&c.maxRequests, "max-requests", 1_000_000, "upper bound of -n")
	flag.StringVar(&c.shuntBin, "shunt", "", "shunt binary (default: go build ./cmd/shunt)")
	flag.Parse()
	c.servers = strings.Split(*servers, ",")
	c.sizes = strings.Split(*sizes, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := peers.Available("h2load"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "shunt-bench-h2load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	if err := writeObjects(root, c.sizes); err != nil {
		return err
	}
	if c.shuntBin == "" && slices.Contains(c.servers, peers.Shunt) {
		c.shuntBin = filepath.Join(dir, "shunt")
		fmt.Fprintln(os.Stderr, "building shunt...")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", c.shuntBin, "github.com/shunt-net/shunt/cmd/shunt").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/shunt: %v\n%s", err, out)
		}
	}
	printConfig(c)

	res := map[string]map[string]peers.LoadResult{} // size -> server -> result
	for _, server := range c.servers {
		if err := measureServer(ctx, c, server, root, res); err != nil {
			// One broken server must not hide the others' figures.
			fmt.Fprintf(os.Stderr, "%s: %v\n", server, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	printTable(c, res)
	return nil
}

// writeObjects writes one file per size, named by the size, filled with the
// generated content (incompressible and the same on every run).
func writeObjects(root string, sizes []string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	for _, s := range sizes {
		n, err := content.ParseSize(s)
		if err != nil {
			return fmt.Errorf("-sizes: %v", err)
		}
		b := make([]byte, n)
		content.GenAt(b, 0)
		if err := os.WriteFile(filepath.Join(root, s), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func measureServer(ctx context.Context, c config, server, root string, res map[string]map[string]peers.LoadResult) error {
	o := peers.Options{Root: root, Workers: c.workers}
	if server == peers.Shunt {
		o.Binary = c.shuntBin
	}
	startCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	p, err := peers.Start(startCtx, server, o)
	cancel()
	if err != nil {
		return err
	}
	defer p.Stop()
	var errs []error
	for _, size := range c.sizes {
		fmt.Fprintf(os.Stderr, "%s %s...\n", server, size)
		r, err := measure(ctx, c, p.URL("/"+size))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", size, err))
			continue
		}
		if res[size] == nil {
			res[size] = map[string]peers.LoadResult{}
		}
		res[size][server] = r
	}
	return errors.Join(errs...)
}

// measure runs a probe, then the measured run sized from the probe's rate.
func measure(ctx context.Context, c config, url string) (peers.LoadResult, error) {
	load := peers.Load{URLs: []string{url}, Clients: c.clients, Streams: c.streams, Requests: 10 * c.clients * c.streams}
	probe, err := loadRun(ctx, c, load)
	if err != nil {
		return probe, fmt.Errorf("probe: %v", err)
	}
	load.Requests = requestsFor(probe.ReqPerSec, c.target, load.Requests, c.maxRequests)
	return loadRun(ctx, c, load)
}

// requestsFor returns the -n that lasts about target at rate, within [lo, hi].
func requestsFor(rate float64, target time.Duration, lo, hi int) int {
	return max(lo, min(hi, int(rate*target.Seconds())))
}

func loadRun(ctx context.Context, c config, l peers.Load) (peers.LoadResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	r, out, err := peers.H2load(ctx, l)
	if err != nil {
		return r, err
	}
	if r.Succeeded != l.Requests {
		return r, fmt.Errorf("h2load -n %d: %d succeeded, %d failed, %d errored\n%s", l.Requests, r.Succeeded, r.Failed, r.Errored, out)
	}
	return r, nil
}

func printConfig(c config) {
	version := func(name string) string {
		v, err := peers.Version(name)
		if err != nil {
			return name + " (version unknown: " + err.Error() + ")"
		}
		return v
	}
	fmt.Printf("h2load -c %d -m %d -t 1 (%s), loopback h2c (prior knowledge), %d CPUs, static files from one directory\n",
		c.clients, c.streams, version("h2load"), runtime.NumCPU())
	for _, s := range c.servers {
		switch s {
		case peers.Shunt:
			fmt.Printf("  shunt serve (this tree, %s): GOMAXPROCS=%d\n", runtime.Version(), c.workers)
		case peers.H2O:
			fmt.Printf("  %s: num-threads %d, no access log\n", version(s), c.workers)
		case peers.Nginx:
			fmt.Printf("  %s: worker_processes %d, access_log off, sendfile on\n", version(s), c.workers)
		default:
			fmt.Printf("  %s: %d workers\n", version(s), c.workers)
		}
	}
	fmt.Printf("each cell: one run of about %v after a probe; MB = 10^6 bytes of h2load traffic; a single run on a shared machine is noisy\n\n", c.target)
}

func printTable(c config, res map[string]map[string]peers.LoadResult) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "object\tserver\trequests\treq/s\tMB/s\t")
	for _, size := range c.sizes {
		for _, s := range c.servers {
			r, ok := res[size][s]
			if !ok {
				fmt.Fprintf(tw, "%s\t%s\t-\tfailed\t-\t\n", size, s)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.1f\t\n", size, s, r.Total, r.ReqPerSec, r.BytesPerSec/1e6)
		}
	}
	tw.Flush()

	others := []string{}
	for _, s := range c.servers {
		if s != peers.Shunt {
			others = append(others, s)
		}
	}
	if !slices.Contains(c.servers, peers.Shunt) || len(others) == 0 {
		return
	}
	fmt.Println("\nshunt's req/s as a fraction of each server's:")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "object\t%s\t\n", strings.Join(prefixAll("vs ", others), "\t"))
	for _, size := range c.sizes {
		row := []string{size}
		for _, o := range others {
			sh, ok1 := res[size][peers.Shunt]
			ot, ok2 := res[size][o]
			if !ok1 || !ok2 || ot.ReqPerSec == 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, fmt.Sprintf("%.2fx", sh.ReqPerSec/ot.ReqPerSec))
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	tw.Flush()
}

func prefixAll(p string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = p + s
	}
	return out
}
