package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/multipath"
	"github.com/shunt-net/shunt/proxy"
)

var proxyCmd = &Command{
	Name:  "proxy",
	Usage: "proxy --path NAME=IFACE|ADDR [--path ...] [--listen HOST:PORT] [--mode aggregate|handover|interactive] [--handover-after D] [--budget PATH=SIZE]... [--split-min SIZE] [--no-estimate-cache] [--insecure] [--connect-timeout D] [--idle-timeout D] [--policy NAME|FILE [--expensive NAME]...] [--tls | --intercept [--intercept-host HOST[:PORT]]... [--ca-cert FILE --ca-key FILE]]",
	Short: "local HTTP proxy (HTTP/1.1 and h2c) that fetches plain-HTTP origins over MP-H2 and tunnels CONNECT on one path",
}

func init() {
	proxyCmd.Run = func(ctx context.Context, args []string) error {
		return runProxy(ctx, args, os.Stdout, os.Stderr)
	}
	Register(proxyCmd)
}

// parseProxyArgs maps shunt proxy's flags onto proxy.Config.
func parseProxyArgs(args []string, stderr io.Writer) (proxy.Config, error) {
	fs := newFlags(proxyCmd)
	fs.SetOutput(stderr)
	var cfg proxy.Config
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8118", "accept applications on `HOST:PORT` (port 0 picks a free one)")
	fs.Func("path", "fetch over this path (repeatable, in order: CONNECT tunnels take the first that connects): "+
		"`NAME=IFACE|ADDR`, an interface or a source address", func(v string) error {
		p, err := proxy.ParsePath(v)
		if err == nil {
			cfg.Paths = append(cfg.Paths, p)
		}
		return err
	})
	mode := fs.String("mode", "aggregate", "how responses use the paths: aggregate (large ones split over all), handover (the first path; the next only while it fails or stalls) "+
		"or interactive (each response on the path expected to finish it first; a path with no bandwidth estimate for the origin from the last 10 s gets one probe range of the tail, at most 512 KiB, "+
		interactiveMoves)
	fs.DurationVar(&cfg.HandoverAfter, "handover-after", multipath.DefaultHandoverAfter, handoverAfterUsage("D"))
	var budgets map[string]int64
	budgetFlag(fs, &budgets, "over the proxy's life, every response it serves together (PATH is the --path's NAME; "+
		"requests passed through unsplit and CONNECT tunnels never go on a budgeted path)")
	splitMin := fs.String("split-min", "", "split responses of at least `SIZE` over the paths, smaller ones stay on the first (default 256KiB)")
	fs.BoolVar(&cfg.NoEstimateCache, "no-estimate-cache", false, "split every response evenly at first instead of by each path's bandwidth and RTT learned from earlier responses to the same origin")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "do not verify the certificates of https origins the proxy fetches itself (absolute https URLs; CONNECT is the application's TLS)")
	fs.DurationVar(&cfg.ConnectTimeout, "connect-timeout", 0, "give up dialing a path after `D` (default 15s)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "fail a response when no path has delivered a byte for `D` (default 2m); a path's outage alone is waited out")
	policy := fs.String("policy", "", "place each GET by a hints policy instead of --mode: a preset ("+strings.Join(hints.PresetNames(), ", ")+") or a rule file; "+
		"one HTTP/2 connection per path, the class from the application's Sec-Fetch-Dest, Priority and Accept headers")
	var expensive []string
	fs.Func("expensive", "with --policy: this path's bytes cost (cost 1, the others 0; repeatable)", func(v string) error {
		expensive = append(expensive, v)
		return nil
	})
	fs.BoolVar(&cfg.TLS, "tls", false, "serve the proxy over TLS, self-signed (an HTTPS proxy: browsers then speak HTTP/2 to it, with RFC 9218 Priority)")
	intercept := fs.Bool("intercept", false, "with --policy: terminate CONNECT tunnels (https origins) with certificates of a local CA, so browsers speak HTTP/2 with Sec-Fetch-Dest and Priority to the proxy and each request is placed by its class")
	var hosts []string
	fs.Func("intercept-host", "with --intercept: terminate only CONNECTs to `HOST[:PORT]` (repeatable; default every one); others stay tunnels", func(v string) error {
		hosts = append(hosts, v)
		return nil
	})
	caCert := fs.String("ca-cert", "", "with --intercept: the CA's certificate, PEM `FILE` (default: a CA generated at start, its key's SPKI hash printed)")
	caKey := fs.String("ca-key", "", "with --ca-cert: the CA's private key, PEM `FILE`")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if len(cfg.Paths) == 0 {
		return cfg, errors.New("no --path: name at least one (NAME=IFACE or NAME=ADDR)")
	}
	var err error
	if cfg.Mode, err = multipath.ParseMode(*mode); err != nil {
		return cfg, fmt.Errorf("--mode: %w", err)
	}
	if err := setBudgets(cfg.Paths, budgets); err != nil {
		return cfg, err
	}
	if err := policyFlags(&cfg, *policy, expensive); err != nil {
		return cfg, err
	}
	if err := interceptFlags(&cfg, *intercept, hosts, *caCert, *caKey); err != nil {
		return cfg, err
	}
	if *splitMin != "" {
		n, err := content.ParseSize(*splitMin)
		if err != nil {
			return cfg, fmt.Errorf("--split-min %q: %w", *splitMin, err)
		}
		cfg.SplitMin = n
	}
	return cfg, cfg.Validate()
}

// policyFlags loads --policy and gives the --expensive paths cost 1.
func policyFlags(cfg *proxy.Config, policy string, expensive []string) error {
	if policy == "" {
		if len(expensive) > 0 {
			return errors.New("--expensive: costs matter only to a --policy")
		}
		return nil
	}
	var err error
	if cfg.Policy, err = hints.Load(policy); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	cfg.Cost = make([]float64, len(cfg.Paths))
	for _, e := range expensive {
		i := slices.IndexFunc(cfg.Paths, func(p mph2.Path) bool { return p.Name == e })
		if i < 0 || e == "" {
			return fmt.Errorf("--expensive %q: no --path of that name", e)
		}
		cfg.Cost[i] = 1
	}
	return nil
}

// interceptFlags loads or generates the CA of --intercept.
func interceptFlags(cfg *proxy.Config, intercept bool, hosts []string, certFile, keyFile string) error {
	switch {
	case !intercept && (len(hosts) > 0 || certFile != "" || keyFile != ""):
		return errors.New("--intercept-host, --ca-cert, --ca-key: only with --intercept")
	case !intercept:
		return nil
	case (certFile == "") != (keyFile == ""):
		return errors.New("--ca-cert and --ca-key go together")
	}
	var ca *proxy.CA
	var err error
	if certFile != "" {
		ca, err = proxy.LoadCA(certFile, keyFile)
	} else {
		ca, err = proxy.NewCA(time.Now())
	}
	if err != nil {
		return err
	}
	cfg.Intercept = &proxy.Intercept{CA: ca, Hosts: hosts}
	return nil
}

// runProxy prints "listening on http://HOST:PORT" as its first line on
// stdout once the socket accepts, then serves until ctx is done.
func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseProxyArgs(args, stderr)
	if err != nil {
		return err
	}
	r, err := proxy.Start(ctx, cfg)
	if err != nil {
		return err
	}
	scheme := "http"
	if cfg.TLS {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, r.Addr)
	for i, p := range cfg.Paths {
		fmt.Fprintf(stderr, "path %s: %s\n", p.Label(i), proxy.FormatPath(p))
	}
	if ic := cfg.Intercept; ic != nil {
		spki, err := ic.CA.SPKIHashes()
		if err != nil {
			return err
		}
		// What a browser needs to trust the proxy's certificates, e.g.
		// Chromium's --ignore-certificate-errors-spki-list.
		fmt.Fprintf(stderr, "intercepting CONNECT with CA %q; SPKI SHA-256 (base64) of the CA and the leaves: %s\n", ic.CA.Certificate().Subject.CommonName, strings.Join(spki, ","))
	}
	return r.Wait()
}
