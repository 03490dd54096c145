package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Load is one h2load run. h2load's exit code says nothing about failed
// requests, and -D (duration) reports 0 req/s with this version, so runs are
// bounded by Requests and by the context.
type Load struct {
	URLs     []string // requests cycle over these
	Requests int      // -n
	Clients  int      // -c
	Streams  int      // -m, concurrent streams per client
	Threads  int      // -t; 0 means h2load's default (1)
	Prefix   []string // prepended to argv (ip netns exec NS)
	// LogFile, if set, is h2load's --log-file: a line per request
	// (ParseH2loadLog).
	LogFile string
}

// LoadResult is what h2load printed.
type LoadResult struct {
	Duration     time.Duration
	ReqPerSec    float64
	BytesPerSec  float64 // h2load prints MiB/s as "MB/s"; converted to bytes
	Total        int     // requests: total, started, done, succeeded, ...
	Started      int
	Done         int
	Succeeded    int
	Failed       int
	Errored      int
	Timeout      int
	Status       [4]int // 2xx, 3xx, 4xx, 5xx
	TrafficBytes int64  // all bytes received, headers and frames included
	DataBytes    int64  // response body bytes
	// CPU is h2load's own user and system time over the run.
	CPU time.Duration
}

// H2load runs h2load and parses its summary. It fails if h2load fails or its
// output has no summary; the caller checks Succeeded.
func H2load(ctx context.Context, l Load) (LoadResult, string, error) {
	bin, err := lookTool("h2load")
	if err != nil {
		return LoadResult{}, "", err
	}
	args := []string{bin, "-n", strconv.Itoa(l.Requests), "-c", strconv.Itoa(l.Clients), "-m", strconv.Itoa(l.Streams)}
	if l.Threads > 0 {
		args = append(args, "-t", strconv.Itoa(l.Threads))
	}
	if l.LogFile != "" {
		args = append(args, "--log-file", l.LogFile)
	}
	args = append(args, l.URLs...)
	var out bytes.Buffer
	cpu, err := runCPU(ctx, l.Prefix, args, &out)
	if err != nil {
		return LoadResult{}, out.String(), err
	}
	r, err := ParseH2load(out.Bytes())
	if err != nil {
		return LoadResult{}, out.String(), fmt.Errorf("h2load %s: %v", strings.Join(l.URLs, " "), err)
	}
	r.CPU = cpu
	return r, out.String(), nil
}

var (
	h2loadFinished = regexp.MustCompile(`(?m)^finished in ([0-9.]+)(us|ms|s), ([0-9.]+) req/s, ([0-9.]+)([KMG]?B)/s$`)
	h2loadRequests = regexp.MustCompile(`(?m)^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout$`)
	h2loadStatus   = regexp.MustCompile(`(?m)^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx$`)
	h2loadTraffic  = regexp.MustCompile(`(?m)^traffic: [0-9.]+[KMG]?B \((\d+)\) total, .* [0-9.]+[KMG]?B \((\d+)\) data$`)
)

// ParseH2load parses the summary h2load prints after a run.
func ParseH2load(out []byte) (LoadResult, error) {
	var r LoadResult
	m := h2loadFinished.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no \"finished in\" line in output:\n%s", out)
	}
	d, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return r, fmt.Errorf("duration %q: %v", m[1], err)
	}
	r.Duration = time.Duration(d * float64(map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(m[2])]))
	if r.ReqPerSec, err = strconv.ParseFloat(string(m[3]), 64); err != nil {
		return r, fmt.Errorf("req/s %q: %v", m[3], err)
	}
	tput, err := strconv.ParseFloat(string(m[4]), 64)
	if err != nil {
		return r, fmt.Errorf("throughput %q: %v", m[4], err)
	}
	// h2load's units are binary: "30.58MB (32060970)".
	r.BytesPerSec = tput * map[string]float64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[string(m[5])]

	m = h2loadRequests.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no \"requests:\" line in output:\n%s", out)
	}
	for i, p := range []*int{&r.Total, &r.Started, &r.Done, &r.Succeeded, &r.Failed, &r.Errored, &r.Timeout} {
		if *p, err = strconv.Atoi(string(m[i+1])); err != nil {
			return r, fmt.Errorf("requests line %q: %v", m[0], err)
		}
	}
	m = h2loadStatus.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no \"status codes:\" line in output:\n%s", out)
	}
	for i := range r.Status {
		if r.Status[i], err = strconv.Atoi(string(m[i+1])); err != nil {
			return r, fmt.Errorf("status line %q: %v", m[0], err)
		}
	}
	m = h2loadTraffic.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no \"traffic:\" line in output:\n%s", out)
	}
	if r.TrafficBytes, err = strconv.ParseInt(string(m[1]), 10, 64); err != nil {
		return r, fmt.Errorf("traffic line %q: %v", m[0], err)
	}
	if r.DataBytes, err = strconv.ParseInt(string(m[2]), 10, 64); err != nil {
		return r, fmt.Errorf("traffic line %q: %v", m[0], err)
	}
	return r, nil
}

// LoggedRequest is one line of h2load's --log-file.
type LoggedRequest struct {
	Start  time.Time     // when the request started
	Status int           // HTTP status; -1 for a failed stream
	Time   time.Duration // from start to the end of the response
}

// ParseH2loadLog parses h2load's --log-file: tab-separated start time in
// microseconds since the epoch, status code and microseconds to the end of
// the response; h2load may add columns, which are ignored.
func ParseH2loadLog(b []byte) ([]LoggedRequest, error) {
	var out []LoggedRequest
	n := 0
	for line := range bytes.Lines(b) {
		n++
		line = bytes.TrimSuffix(line, []byte("\n"))
		f := strings.Split(string(line), "\t")
		if len(f) < 3 {
			return nil, fmt.Errorf("h2load log line %d %q: want 3 tab-separated columns", n, line)
		}
		start, err1 := strconv.ParseInt(f[0], 10, 64)
		status, err2 := strconv.Atoi(f[1])
		us, err3 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil || start < 0 || us < 0 || us > math.MaxInt64/1000 {
			return nil, fmt.Errorf("h2load log line %d %q: want start, status and duration as integers", n, line)
		}
		out = append(out, LoggedRequest{Start: time.UnixMicro(start), Status: status, Time: time.Duration(us) * time.Microsecond})
	}
	return out, nil
}
