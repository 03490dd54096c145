package cli

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/multipath"
)

// multipathOptions are shunt get's MP-H2 flags.
type multipathOptions struct {
	paths         []mph2.Path
	size          string
	endAdjust     string
	noPipelining  bool
	mode          string
	handoverAfter time.Duration
	budgets       map[string]int64 // path label: bytes
}

// interactiveMoves ends the --mode usage of get and proxy: how an
// interactive download or response moves between paths.
const interactiveMoves = "and one more of at most 512 KiB while a move to it is confirmed; then the rest moves at most once, to a path that would finish it sooner; " +
	"a path that goes silent hands the rest over at once, and that forced move does not count: a path back from silence is probed again)"

// handoverAfterUsage is --handover-after's usage in get and proxy, its
// value named placeholder.
func handoverAfterUsage(placeholder string) string {
	return "--mode handover: move on when the path in use has delivered nothing for `" + placeholder +
		"`; aggregate and interactive: a path silent this long while another is heard from gives up its ranges"
}

func (m *multipathOptions) addFlags(fs *flag.FlagSet) {
	fs.Func("path", "download over this path too (repeatable; MP-H2): an interface or a source address, "+
		"`IFACE_OR_ADDR[=MAPADDR]`; MAPADDR (HOST or HOST:PORT) is the server this path asks instead of the URL's", func(v string) error {
		p, err := mph2.ParsePath(v)
		if err == nil {
			m.paths = append(m.paths, p)
		}
		return err
	})
	fs.StringVar(&m.size, "size", "", "the object's size `N` if known (MP-H2+FS: every path starts at once)")
	fs.StringVar(&m.endAdjust, "end-adjust", "flow", "how a range end is moved: flow (HTTP/2 flow control, no tail bytes) or rst (RST_STREAM)")
	fs.BoolVar(&m.noPipelining, "no-pipelining", false, "request a path's next chunk only when its current one is complete")
	fs.StringVar(&m.mode, "mode", "aggregate", "how the paths are used: aggregate (all at once), handover (the first path; the next only while it fails or stalls) "+
		"or interactive (each download on the path expected to finish it first; a path with no bandwidth estimate from the last 10 s gets one probe range of the tail, at most 512 KiB, "+
		interactiveMoves)
	fs.DurationVar(&m.handoverAfter, "handover-after", multipath.DefaultHandoverAfter, handoverAfterUsage("DURATION"))
	budgetFlag(fs, &m.budgets, "in the download (PATH is the --path's interface or address)")
}

func (m *multipathOptions) check(o getOptions) error {
	if len(m.paths) == 0 {
		if m.size != "" || m.noPipelining || m.endAdjust != "flow" || m.mode != "aggregate" || len(m.budgets) > 0 || m.handoverAfter != multipath.DefaultHandoverAfter {
			return errors.New("--size, --end-adjust, --no-pipelining, --mode, --handover-after and --budget need --path")
		}
		return nil
	}
	if _, err := multipath.ParseMode(m.mode); err != nil {
		return fmt.Errorf("--mode: %w", err)
	}
	if m.handoverAfter <= 0 {
		return fmt.Errorf("--handover-after %v: want a positive duration", m.handoverAfter)
	}
	if err := setBudgets(m.paths, m.budgets); err != nil {
		return err
	}
	switch {
	case o.rng != "":
		return errors.New("--range and --path exclude each other: a multipath download fetches the whole object")
	case m.endAdjust != "flow" && m.endAdjust != "rst":
		return fmt.Errorf("--end-adjust %q: want flow or rst", m.endAdjust)
	}
	if m.size != "" {
		if _, err := content.ParseSize(m.size); err != nil {
			return fmt.Errorf("--size %q: %w", m.size, err)
		}
	}
	return nil
}

// runGetMultipath downloads with MP-H2 into a temporary file (bytes arrive
// out of order), verifies it, then renames it to -o or copies it to stdout.
func runGetMultipath(ctx context.Context, o getOptions, gio getIO, rec *getRecord) error {
	mode, _ := multipath.ParseMode(o.mp.mode) // checked with the flags
	c := &mph2.Client{Paths: o.mp.paths, NoPipelining: o.mp.noPipelining, Mode: mode, HandoverAfter: o.mp.handoverAfter,
		TLSConfig: &tls.Config{InsecureSkipVerify: o.insecure}, DialTimeout: o.timeouts.connect, StallTimeout: o.timeouts.idle}
	if o.mp.endAdjust == "rst" {
		c.EndAdjust = mph2.EndReset
	}
	if o.http11 {
		c.Proto = mph2.ProtoHTTP1
	}
	defer c.Close()
	var opts mph2.Options
	if o.mp.size != "" {
		opts.Size, _ = content.ParseSize(o.mp.size)
	}
	// Ranges arrive out of order, so the body goes to a file first: -o's
	// temporary file, or one of our own that stdout gets a copy of.
	out, err := openGetOutput(o, true)
	if err != nil {
		return err
	}
	if out == nil {
		f, err := os.CreateTemp("", ".shunt-get-*.part")
		if err != nil {
			return err
		}
		out = &output{tmp: f, f: f}
	}
	defer func() {
		if out != nil { // not committed: the download failed
			out.Abort()
		}
	}()
	tmp := out.File()
	if gio.progress {
		total := int64(-1) // unknown: a spinner
		if opts.Size > 0 {
			total = opts.Size
		}
		bar := progressbar.DefaultBytes(total, o.url.Path)
		per := make([]int64, len(c.Paths))
		opts.Progress = func(p int, delivered int64) {
			per[p] = delivered
			var sum int64
			parts := make([]string, len(per))
			for i, n := range per {
				sum += n
				parts[i] = fmt.Sprintf("%s %s", c.Paths[i].Name, humanBytes(n))
			}
			bar.Describe(strings.Join(parts, " | "))
			bar.Set64(sum)
		}
		for i := range c.Paths {
			if c.Paths[i].Name == "" {
				c.Paths[i].Name = c.Paths[i].Label(i)
			}
		}
		defer bar.Finish()
	}
	// mph2 fails the download once no path has brought a byte for
	// --idle-timeout (StallTimeout); a path's outage alone is waited out.
	res, err := c.Download(ctx, o.url.String(), tmp, opts)
	if res != nil {
		printPaths(gio.stderr, res)
	}
	if err != nil {
		return err
	}
	sum, n, check, err := verifyFile(tmp, o.url.Path, res.Size)
	if err != nil {
		return fmt.Errorf("GET %s: %w", o.url, err)
	}
	fmt.Fprintf(gio.stderr, "total %.2f ms, %d bytes, goodput %.1f Mbit/s, tail bytes %d\n",
		res.Total.Seconds()*1000, n, float64(n)*8/res.Total.Seconds()/1e6, res.TailBytes)
	if res.RangesIgnored {
		fmt.Fprintln(gio.stderr, "note: the server ignored Range; the download went on over one path")
	}
	fmt.Fprintf(gio.stderr, "sha256 %s  length %d\n", hex.EncodeToString(sum), n)
	counts := mph2.Counts(res)
	counts["bytes"] = float64(n)
	rec.measured(map[string]float64{"time": res.Total.Seconds()}, counts, map[string]string{"sha256": hex.EncodeToString(sum)})
	if check != "" {
		fmt.Fprintf(gio.stderr, "verified: %s match the generator\n", check)
	}
	if o.out == "" || o.out == "-" {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(gio.stdout, tmp)
		return err // the deferred Abort removes the temporary file
	}
	err, out = out.Commit(), nil
	return err
}

// verifyFile hashes the downloaded file and, for /gen objects, checks it
// against the generator; check says what matched ("" if not generated).
func verifyFile(f *os.File, urlPath string, n int64) (sum []byte, length int64, check string, err error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, "", err
	}
	h := sha256.New()
	w := io.Writer(h)
	size, gen, gerr := content.GenSize(urlPath)
	var v *content.Verifier
	if gen && gerr == nil {
		if size != n {
			return nil, 0, "", fmt.Errorf("received %d bytes of %s, want %d", n, urlPath, size)
		}
		v = content.NewVerifier(0)
		w = io.MultiWriter(h, v)
	}
	length, err = io.Copy(w, io.LimitReader(f, n))
	if err != nil {
		return nil, 0, "", err
	}
	if length != n {
		return nil, 0, "", fmt.Errorf("file holds %d bytes, downloaded %d", length, n)
	}
	if v != nil {
		check = fmt.Sprintf("bytes 0-%d of %s", n-1, urlPath)
	}
	return h.Sum(nil), length, check, nil
}

func printPaths(w io.Writer, res *mph2.Result) {
	for _, s := range res.Switches {
		if s.From == "" {
			fmt.Fprintf(w, "mode %v: path %s at the start\n", res.Mode, s.To)
			continue
		}
		fmt.Fprintf(w, "mode %v: %s -> %s at %.1f ms (%s), first byte on %s at %.1f ms\n", res.Mode, s.From, s.To, ms(s.At), s.Why, s.To, ms(s.FirstByte))
	}
	for _, p := range res.Paths {
		if p.Budget > 0 {
			full := "never full"
			if p.BudgetFull > 0 {
				full = fmt.Sprintf("full at %.1f ms: the other paths carried the rest alone", ms(p.BudgetFull))
			}
			fmt.Fprintf(w, "budget %s: received %d of %d bytes, %s\n", p.Name, p.Received, p.Budget, full)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "path\tproto\trequests\tdelivered\treceived\trtt\tbandwidth\tfirst byte\tlast byte\tstate")
	for _, p := range res.Paths {
		state := "up"
		switch {
		case p.Refused != "":
			state = "refused: " + p.Refused
		case p.Down:
			state = "down: " + p.Err
		case p.Redials > 0:
			state = fmt.Sprintf("up; connection lost and redialed %d time(s) (last: %s)", p.Redials, p.Err)
		case p.Suspensions > 0:
			state = fmt.Sprintf("up; silent %d time(s), %.1f s in all (%s)", p.Suspensions, p.Suspended.Seconds(), p.Err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f ms\t%.2f Mbit/s\t%.1f ms\t%.1f ms\t%s\n",
			p.Name, p.Proto, p.Requests, p.Delivered, p.Received, p.RTT.Seconds()*1000,
			p.Bandwidth*8/1e6, ms(p.FirstData), ms(p.LastData), state)
	}
	tw.Flush()
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
