package conform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Client fetches a URL once, as the client under test.
type Client interface {
	Get(ctx context.Context, url string) Result
}

// ClientFunc is an in-process client.
type ClientFunc func(ctx context.Context, url string) Result

func (f ClientFunc) Get(ctx context.Context, url string) Result { return f(ctx, url) }

// Command runs a shell command line per case, {url} replaced by the case's
// URL (quoted). It is killed, with its process group, when ctx ends.
type Command string

func (c Command) Get(ctx context.Context, url string) Result {
	line := strings.ReplaceAll(string(c), "{url}", "'"+url+"'")
	cmd := exec.Command("sh", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return Result{Exit: -1, Stderr: []byte(err.Error())}
	}
	done := make(chan struct{})
	// Whether the goroutine killed the command, read once it has said so
	// (the command's end orders nothing between the two goroutines).
	killedc := make(chan bool, 1)
	go func() {
		select {
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			killedc <- true
		case <-done:
			killedc <- false
		}
	}()
	err := cmd.Wait()
	close(done)
	killed := <-killedc
	r := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case killed:
		r.TimedOut, r.Exit = true, -1
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		r.Exit = -1
	}
	return r
}

// Options of a run.
type Options struct {
	TLS      bool          // serve https (ALPN h2) instead of h2c
	Timeout  time.Duration // per case; default 5 s
	Parallel int           // cases at once; default 4
	Match    string        // run the cases whose id matches this path.Match pattern or prefix
	// Upload is the client for the cases whose request has a body: it must
	// POST the file WriteUploadFile wrote. Nil: those cases are skipped.
	Upload Client
}

// CaseResult is one case's verdict.
type CaseResult struct {
	Case    *Case
	Verdict Verdict
	Detail  string // what the client did
	Elapsed time.Duration
}

// Report is a run's results, in the table's order.
type Report struct {
	Client  string
	TLS     bool
	Results []CaseResult
	Elapsed time.Duration
}

// Count returns the numbers of passed, failed and skipped cases.
func (r *Report) Count() (pass, fail, skip int) {
	for _, c := range r.Results {
		switch c.Verdict {
		case Pass:
			pass++
		case Fail:
			fail++
		default:
			skip++
		}
	}
	return
}

// Select returns the cases whose id matches pattern: a path.Match pattern
// ("http2/6.5/*") or a prefix ("hpack/", "http2/6.9"); "" is all.
func Select(pattern string) ([]*Case, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("case pattern %q: %v", pattern, err)
	}
	var out []*Case
	for _, c := range Cases() {
		if ok, _ := path.Match(pattern, c.ID); ok || strings.HasPrefix(c.ID, pattern) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no case matches %q", pattern)
	}
	return out, nil
}

// Run serves the selected cases on loopback and runs client once per case.
func Run(ctx context.Context, client Client, name string, o Options) (*Report, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	cases, err := Select(o.Match)
	if err != nil {
		return nil, err
	}
	srv, err := Listen("127.0.0.1:0", o.TLS)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	rep := &Report{Client: name, TLS: o.TLS, Results: make([]CaseResult, len(cases))}
	start := time.Now()
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, c := range cases {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			switch {
			case !c.Upload:
				rep.Results[i] = runCase(ctx, srv, client, c, o.Timeout)
			case o.Upload != nil:
				rep.Results[i] = runCase(ctx, srv, o.Upload, c, o.Timeout)
			default:
				rep.Results[i] = CaseResult{Case: c, Verdict: Skip, Detail: "the case needs a request body, and no upload command was given"}
			}
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

// abandonGrace is how long a client may take to return after its timeout.
const abandonGrace = 2 * time.Second

func runCase(ctx context.Context, srv *Server, client Client, c *Case, timeout time.Duration) CaseResult {
	start := time.Now()
	st := srv.begin(c)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	// An in-process client may not return when its context ends (one
	// deadlocked on its own lock): it is left behind after a grace.
	done := make(chan Result, 1)
	go func() { done <- client.Get(cctx, srv.URL(c)) }()
	var res Result
	select {
	case res = <-done:
	case <-time.After(timeout + abandonGrace):
		res = Result{Exit: -1, TimedOut: true, Stderr: []byte("the client did not return when its context ended")}
	}
	if cctx.Err() != nil && !res.TimedOut {
		res.TimedOut, res.Exit = true, -1
	}
	cancel()
	conns, notes := srv.end(st, time.Second)
	o := &Outcome{Case: c, Result: res, Conns: conns, Notes: notes}
	cr := CaseResult{Case: c, Elapsed: time.Since(start)}
	if len(conns) == 0 && !res.TimedOut {
		cr.Verdict, cr.Detail = Fail, "the client never sent an HTTP/2 request"+tail(res.Stderr)
		if len(notes) > 0 {
			cr.Detail = strings.Join(notes, "; ")
		}
		return cr
	}
	cr.Verdict, cr.Detail = Judge(o)
	return cr
}
