package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/internal/shared"
)

func TestFloorHintsLatency(t *testing.T) {
	if _, err := shared.Path("pages"); err != nil {
		t.Skipf("shared pages: %v", err)
	}
	var out, errs bytes.Buffer
	if err := runFloor([]string{"hints-latency", "--expensive", "exp", "--share", "0.25"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	text := out.String()
	for _, want := range []string{
		"# path cheap: 1206667 bytes/s, RTT 80ms", "# path exp: 1206667 bytes/s, RTT 20ms",
		"| page | bytes | cheap alone | exp alone | all paths | all, exp <= 25 % |",
		"| google | 74000 |", "| mediafire | 2474000 |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "\n| "); n != 7 {
		t.Errorf("%d table lines, want the head and 6 pages:\n%s", n, text)
	}
	// google's only urgent object is its 12333-byte document (hints.FromPage):
	// its first byte on cheap at 240 ms, on exp at 60 ms, and 10 ms of bytes.
	out.Reset()
	if err := runFloor([]string{"hints-latency", "--dcl"}, &out, &errs); err != nil {
		t.Fatalf("--dcl: %v\n%s", err, errs.String())
	}
	if want := "| google | 74000 | 0.250 | 0.070 | 0.070 |"; !strings.Contains(out.String(), want) {
		t.Errorf("--dcl: output lacks %q:\n%s", want, out.String())
	}
	// With slow start, dmm's capped bound is the links' 0.568 s; the chain
	// makes its bulk wait for the nine urgent objects it needs, which the
	// cap cannot hold all on exp (replay/floor's tests check the bound).
	for _, c := range []struct {
		chain bool
		want  string
	}{{false, "| 0.568 | 0.166 / 0.568 |"}, {true, "| 0.630 | 0.166 / 0.568 / 0.630 |"}} {
		out.Reset()
		args := []string{"hints-latency", "--expensive", "exp", "--window", "14"}
		if c.chain {
			args = append(args, "--chain")
		}
		if err := runFloor(args, &out, &errs); err != nil {
			t.Fatalf("%q: %v\n%s", args, err, errs.String())
		}
		_, line, _ := strings.Cut(out.String(), "| dmm | 330000 |")
		if line, _, _ = strings.Cut(line, "\n"); !strings.HasSuffix(line, c.want) {
			t.Errorf("%q: dmm's line ends %q, want %q:\n%s", args, line, c.want, out.String())
		}
	}
	// Every object pinned to exp is exp alone.
	out.Reset()
	if err := runFloor([]string{"hints-latency", "--urgent-on", "exp", "--rest-on", "exp"}, &out, &errs); err != nil {
		t.Fatalf("pinned: %v\n%s", err, errs.String())
	}
	for _, want := range []string{"| urgent on exp, the rest on exp |", "| google | 74000 | 0.446 | 0.146 | 0.146 | 0.146 |", "| mediafire | 2474000 | 2.370 | 2.130 | 1.185 | 2.130 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("pinned: output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestFloorRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"hints-jitter"}, "jitter or a trace: no bound"},
		{[]string{"hints-latency", "--expensive", "wifi"}, `no path "wifi"`},
		{[]string{"hints-latency", "--rest-on", "wifi"}, `no path "wifi"`},
		{[]string{"hints-latency", "--condition", "loss"}, `no condition "loss"`},
		{[]string{"hints-latency", "--headers", "1500"}, "1500 header bytes"},
		{[]string{"hints-latency", "--expensive", "exp", "--share", "-0.5"}, "share -0.5 out of [0, 1]"},
		{[]string{"hints-latency", "--window", "-1"}, "a window wants a segment size"},
	} {
		var out, errs bytes.Buffer
		if err := runFloor(c.args, &out, &errs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}
