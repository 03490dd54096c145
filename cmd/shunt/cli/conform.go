package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/shunt-net/shunt/conform"
)

var conformCmd = &Command{
	Name:  "conform",
	Usage: "conform --client [--tls|--h2c] [--run 'CMD {url}'] [--run-upload 'CMD {file} {url}'] [--case PATTERN] [--junit FILE] [--timeout D] [--parallel N] [-v] [--list]",
	Short: "HTTP/2 client conformance: a hostile server runs each case against a client command",
}

func init() {
	conformCmd.Run = func(ctx context.Context, args []string) error {
		return runConform(ctx, args, os.Stdout, os.Stderr)
	}
	Register(conformCmd)
}

// errConformFailed makes the exit status non-zero when a case failed.
var errConformFailed = errors.New("some cases failed")

func runConform(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(conformCmd)
	fs.SetOutput(stderr)
	client := fs.Bool("client", false, "test an HTTP/2 client (the only mode)")
	useTLS := fs.Bool("tls", false, "serve https with ALPN h2 and a self-signed certificate for localhost")
	h2c := fs.Bool("h2c", false, "serve h2c with prior knowledge (the default)")
	run := fs.String("run", "", "the client `COMMAND` run once per case through sh, {url} replaced by the case's URL; default: this binary's get")
	runUpload := fs.String("run-upload", "", "the `COMMAND` for the cases whose request has a body: it must POST {file} to {url}; default with the default --run: this binary's get --data @{file}, else those cases are skipped")
	pattern := fs.String("case", "", "run the cases whose id matches `PATTERN` (path.Match, or a prefix such as http2/6.5)")
	junit := fs.String("junit", "", "also write the results as JUnit XML to `FILE`")
	timeout := fs.Duration("timeout", 5*time.Second, "give each case's client `DURATION` before killing it")
	parallel := fs.Int("parallel", 4, "run `N` cases at once")
	list := fs.Bool("list", false, "list the cases and exit")
	verbose := fs.Bool("v", false, "say what the client did in every case, not only in those it failed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *list {
		cases, err := conform.Select(*pattern)
		if err != nil {
			return err
		}
		for _, c := range cases {
			fmt.Fprintf(stdout, "%-16s %-40s %s\n", c.ID, c.Section, c.Desc)
		}
		return nil
	}
	switch {
	case !*client:
		return errors.New("say --client: the suite tests HTTP/2 clients (h2spec tests servers)")
	case *useTLS && *h2c:
		return errors.New("--tls and --h2c exclude each other")
	case *timeout <= 0:
		return fmt.Errorf("--timeout %v: want a positive duration", *timeout)
	case *parallel <= 0:
		return fmt.Errorf("--parallel %d: want at least 1", *parallel)
	}
	cmd, upCmd := *run, *runUpload
	if cmd == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		mode := "--h2c"
		if *useTLS {
			mode = "--insecure"
		}
		cmd = fmt.Sprintf("'%s' get %s {url}", self, mode)
		if upCmd == "" {
			upCmd = fmt.Sprintf("'%s' get %s --data @{file} {url}", self, mode)
		}
	} else if !strings.Contains(cmd, "{url}") {
		return fmt.Errorf("--run %q: the command must contain {url}", cmd)
	}
	if upCmd != "" && (!strings.Contains(upCmd, "{url}") || !strings.Contains(upCmd, "{file}")) {
		return fmt.Errorf("--run-upload %q: the command must contain {url} and {file}", upCmd)
	}
	var upload conform.Client
	if upCmd != "" {
		dir, err := os.MkdirTemp("", "shunt-conform-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		file, err := conform.WriteUploadFile(dir)
		if err != nil {
			return err
		}
		upload = conform.Command(strings.ReplaceAll(upCmd, "{file}", "'"+file+"'"))
	}
	var jw *os.File
	if *junit != "" {
		f, err := os.Create(*junit)
		if err != nil {
			return fmt.Errorf("--junit: %w", err) // before the run, not after it
		}
		defer f.Close()
		jw = f
	}
	rep, err := conform.Run(ctx, conform.Command(cmd), cmd, conform.Options{TLS: *useTLS, Timeout: *timeout, Parallel: *parallel, Match: *pattern, Upload: upload})
	if err != nil && rep == nil {
		return err
	}
	rep.WriteText(stdout, *verbose)
	if jw != nil {
		if werr := rep.WriteJUnit(jw); werr != nil {
			return fmt.Errorf("--junit: %w", werr)
		}
		if werr := jw.Close(); werr != nil {
			return fmt.Errorf("--junit: %w", werr)
		}
	}
	if err != nil {
		return err
	}
	if _, fail, _ := rep.Count(); fail > 0 {
		return errConformFailed
	}
	return nil
}
