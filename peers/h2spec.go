package peers

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Conformance is one h2spec run against a server.
type Conformance struct {
	Host    string
	Port    int
	TLS     bool // certificates are not verified (-k)
	Strict  bool // -S: include the strict test cases
	Timeout int  // seconds per test case (-o); 0 means h2spec's default (2)
	Specs   []string
	Prefix  []string
}

// ConformanceResult is h2spec's summary and the IDs of the failed cases, in
// the form h2spec accepts as arguments ("http2/5.1.1/2") to re-run one.
type ConformanceResult struct {
	Tests, Passed, Skipped, Failed int
	Failures                       []string
}

// H2spec runs h2spec and parses its report. h2spec exits non-zero when a
// case fails, so only a missing summary is an error here: the caller checks
// Failed.
func H2spec(ctx context.Context, c Conformance) (ConformanceResult, string, error) {
	bin, err := lookTool("h2spec")
	if err != nil {
		return ConformanceResult{}, "", err
	}
	args := []string{bin, "-h", c.Host, "-p", strconv.Itoa(c.Port)}
	if c.TLS {
		args = append(args, "-t", "-k")
	}
	if c.Strict {
		args = append(args, "-S")
	}
	if c.Timeout > 0 {
		args = append(args, "-o", strconv.Itoa(c.Timeout))
	}
	args = append(args, c.Specs...)
	var out bytes.Buffer
	runErr := run(ctx, c.Prefix, args, &out)
	r, err := ParseH2spec(out.Bytes())
	if err != nil {
		if runErr != nil {
			return r, out.String(), runErr
		}
		return r, out.String(), fmt.Errorf("h2spec %s:%d: %v", c.Host, c.Port, err)
	}
	return r, out.String(), nil
}

var (
	h2specSummary = regexp.MustCompile(`(?m)^(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed\s*$`)
	h2specSection = regexp.MustCompile(`^\s+(\d+(?:\.\d+)*)\.\s`)
	h2specFailure = regexp.MustCompile(`^\s+× (\d+):`)
)

// h2specGroups maps the report's group titles to h2spec's spec names.
var h2specGroups = map[string]string{
	"Generic tests for HTTP/2 server":                "generic",
	"Hypertext Transfer Protocol Version 2 (HTTP/2)": "http2",
	"HPACK: Header Compression for HTTP/2":           "hpack",
}

// ParseH2spec parses an h2spec report: the summary line and the list after
// "Failures:".
func ParseH2spec(out []byte) (ConformanceResult, error) {
	var r ConformanceResult
	m := h2specSummary.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no \"N tests, N passed, N skipped, N failed\" line in output:\n%s", out)
	}
	for i, p := range []*int{&r.Tests, &r.Passed, &r.Skipped, &r.Failed} {
		var err error
		if *p, err = strconv.Atoi(string(m[i+1])); err != nil {
			return r, fmt.Errorf("summary %q: %v", m[0], err)
		}
	}
	_, failures, found := bytes.Cut(out, []byte("\nFailures:"))
	if !found {
		return r, nil
	}
	group, section := "", ""
	sc := bufio.NewScanner(bytes.NewReader(failures))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case line[0] != ' ':
			if g, ok := h2specGroups[strings.TrimSpace(line)]; ok {
				group, section = g, ""
			}
		case h2specFailure.MatchString(line):
			id := group
			if section != "" {
				id += "/" + section
			}
			r.Failures = append(r.Failures, id+"/"+h2specFailure.FindStringSubmatch(line)[1])
		case h2specSection.MatchString(line):
			section = h2specSection.FindStringSubmatch(line)[1]
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("failures list: %v", err)
	}
	return r, nil
}
