package conform

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// WriteText prints the report like h2spec: cases grouped by section, the
// expected and actual reaction under each failure (under every case when
// verbose), and the totals.
func (r *Report) WriteText(w io.Writer, verbose bool) {
	mode := "h2c (prior knowledge)"
	if r.TLS {
		mode = "TLS (ALPN h2)"
	}
	fmt.Fprintf(w, "HTTP/2 client conformance: %s over %s\n", r.Client, mode)
	section := ""
	for _, cr := range r.Results {
		if cr.Case == nil {
			continue
		}
		if cr.Case.Section != section {
			section = cr.Case.Section
			fmt.Fprintf(w, "\n  %s\n", section)
		}
		fmt.Fprintf(w, "    %s %s: %s\n", cr.Verdict, cr.Case.ID, cr.Case.Desc)
		if cr.Verdict != Pass || verbose {
			fmt.Fprintf(w, "        expected: %s\n          actual: %s\n", cr.Case.Expect, cr.Detail)
		}
	}
	pass, fail, skip := r.Count()
	fmt.Fprintf(w, "\nFinished in %.1f s\n%d cases, %d passed, %d skipped, %d failed\n", r.Elapsed.Seconds(), pass+fail+skip, pass, skip, fail)
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure"`
	Skipped   *junitMessage `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML, one test suite per section.
func (r *Report) WriteJUnit(w io.Writer) error {
	var out junitSuites
	idx := map[string]int{}
	for _, cr := range r.Results {
		if cr.Case == nil {
			continue
		}
		i, ok := idx[cr.Case.Section]
		if !ok {
			i = len(out.Suites)
			idx[cr.Case.Section] = i
			out.Suites = append(out.Suites, junitSuite{Name: r.Client + ": " + cr.Case.Section})
		}
		s := &out.Suites[i]
		jc := junitCase{Name: cr.Case.ID + ": " + cr.Case.Desc, ClassName: strings.ReplaceAll(cr.Case.ID, "/", "."), Time: fmt.Sprintf("%.3f", cr.Elapsed.Seconds())}
		msg := &junitMessage{Message: cr.Detail, Text: "expected: " + cr.Case.Expect.String() + "\nactual: " + cr.Detail}
		s.Tests++
		switch cr.Verdict {
		case Fail:
			jc.Failure = msg
			s.Failures++
		case Skip:
			jc.Skipped = msg
			s.Skipped++
		}
		s.Cases = append(s.Cases, jc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
