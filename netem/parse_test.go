package netem

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"10Mbit": 10e6, "100kbit": 100e3, "1.5Gbit": 1.5e9, "64000bit": 64000,
		"10mbit": 10e6, "10Mbps": 10e6, "10Mbit/s": 10e6, " 2.5 Mbit ": 2.5e6,
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10", "Mbit", "-1Mbit", "0Mbit", "10MB", "1e13bit", "NaNbit", "0.1bit"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) succeeded", in)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for bps, want := range map[float64]string{10e6: "10Mbit", 1.5e9: "1.5Gbit", 100e3: "100kbit", 64001: "64001bit", 64500: "64.5kbit", 12.5: "12.5bit"} {
		if got := FormatRate(bps); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", bps, got, want)
		}
	}
}

func TestParseDelay(t *testing.T) {
	if d, err := ParseDelay("1.5ms"); err != nil || d != 1500*time.Microsecond {
		t.Errorf("ParseDelay(1.5ms) = %v, %v", d, err)
	}
	for _, in := range []string{"-1ms", "10", "x"} {
		if _, err := ParseDelay(in); err == nil {
			t.Errorf("ParseDelay(%q) succeeded", in)
		}
	}
}

func TestParseLoss(t *testing.T) {
	for in, want := range map[string]LossConfig{
		"1.5%":                      Bernoulli(0.015),
		"0.015":                     Bernoulli(0.015),
		"0":                         {},
		"0%":                        {},
		"ge:p=0.01,r=0.3":           GilbertElliott(0.01, 0.3, 1, 0),
		"ge:p=0.01,r=0.3,k=1,h=0.5": GilbertElliott(0.01, 0.3, 1, 0.5),
		"ge:r=0.3,h=0.5,p=0.01":     GilbertElliott(0.01, 0.3, 1, 0.5),
	} {
		got, err := ParseLoss(in)
		if err != nil || got != want {
			t.Errorf("ParseLoss(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"150%":                 "not a probability",
		"x":                    "want a rate",
		"ge:p=0.1":             "r is required",
		"ge:p=0.1,r=0.2,z=1":   "unknown key",
		"ge:p=0.1,r=0.2,p=0.3": "given twice",
		"ge:p=2,r=0.1":         "not a probability",
		"ge:p=a,r=0.1":         "not a number",
		"ge:p=0.1,r":           "not key=value",
	} {
		if _, err := ParseLoss(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseLoss(%q): error %v, want %q", in, err, msg)
		}
	}
}

func TestParseQueue(t *testing.T) {
	for in, want := range map[string]QueueConfig{
		"droptail":                         {Kind: QueueDropTail},
		"droptail:packets=100":             {Kind: QueueDropTail, Packets: 100},
		"droptail:bytes=150000":            {Kind: QueueDropTail, Bytes: 150000},
		"fq":                               {Kind: QueueFQ},
		"fq:packets=1000":                  {Kind: QueueFQ, Packets: 1000},
		"fq:quantum=3000":                  {Kind: QueueFQ, Quantum: 3000},
		"codel":                            {Kind: QueueCoDel},
		"codel:target=5ms,interval=100ms":  {Kind: QueueCoDel, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond},
		"codel:packets=50,target=1ms":      {Kind: QueueCoDel, Packets: 50, Target: time.Millisecond},
		"droptail:packets=10,bytes=100000": {Kind: QueueDropTail, Packets: 10, Bytes: 100000},
	} {
		got, err := ParseQueue(in)
		if err != nil || got != want {
			t.Errorf("ParseQueue(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"red":                    "unknown kind",
		"droptail:target=5ms":    "unknown key",
		"droptail:packets=-1":    "not a count",
		"fq:quantum=10":          "out of range",
		"codel:target=x":         "not a duration",
		"codel:target=1s":        "target <= interval",
		"droptail:packets=1,":    "not key=value",
		"droptail:packets=1e3":   "not a count",
		"codel:interval=-100ms":  "target <= interval",
		"fq:packets=1,packets=2": "given twice",
	} {
		if _, err := ParseQueue(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseQueue(%q): error %v, want %q", in, err, msg)
		}
	}
}

// fakeLoad stands in for LoadTrace: "trace:good" and "step:good" load.
func fakeLoad(s string) (*Schedule, error) {
	switch s {
	case "trace:good":
		return &Schedule{spec: s, opps: []int64{ms}}, nil
	case "step:good":
		return &Schedule{spec: s, steps: []step{{0, 1e6}}}, nil
	}
	return nil, errors.New("no such trace")
}

func TestParseLinkSpec(t *testing.T) {
	c, err := parseLinkSpec("rate=10Mbit delay=25ms loss=1.5% queue=codel:target=10ms", fakeLoad)
	if err != nil {
		t.Fatal(err)
	}
	want := LinkConfig{RateBps: 10e6, Delay: 25 * time.Millisecond, Loss: Bernoulli(0.015), Queue: QueueConfig{Kind: QueueCoDel, Target: 10 * time.Millisecond}}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	c, err = parseLinkSpec("rate=trace:good", fakeLoad)
	if err != nil || c.Trace == nil || c.Trace.String() != "trace:good" {
		t.Fatalf("rate=trace:good gave %+v, %v", c, err)
	}
	for in, msg := range map[string]string{
		"rate=10Mbit rate=5Mbit": "given twice",
		"speed=1":                "unknown key",
		"rate":                   "not key=value",
		"rate=fast":              "neither a rate",
		"delay=-1s":              "negative",
		"rate=step:bad":          "no such trace",
	} {
		if _, err := parseLinkSpec(in, fakeLoad); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseLinkSpec(%q): error %v, want %q", in, err, msg)
		}
	}
}

func TestLinkSpecRoundTrip(t *testing.T) {
	for _, c := range []LinkConfig{
		{},
		{RateBps: 12.5e6, Delay: 1500 * time.Microsecond, Loss: GilbertElliott(0.01, 0.3, 0.99, 0.5), Queue: QueueConfig{Kind: QueueFQ, Bytes: 100000}},
		{Trace: &Schedule{spec: "step:good", steps: []step{{0, 1e6}}}, Loss: Bernoulli(0.015), Queue: QueueConfig{Kind: QueueCoDel}},
		{RateBps: 10e6, Delay: 20 * time.Millisecond, Jitter: JitterConfig{JitterNormal, 5 * time.Millisecond}},
		{Delay: 20 * time.Millisecond, Jitter: JitterConfig{Spread: 20 * time.Millisecond}},
	} {
		back, err := parseLinkSpec(c.String(), fakeLoad)
		if err != nil {
			t.Fatalf("parse %q: %v", c.String(), err)
		}
		if back.String() != c.String() {
			t.Errorf("round trip %q -> %q", c.String(), back.String())
		}
	}
}

func TestParseBandwidthPath(t *testing.T) {
	rate, tr, err := ParseBandwidth(sharedTraces + "/ATT-LTE-driving-2016.up")
	if err != nil {
		t.Skipf("shared traces not available: %v", err)
	}
	if rate != 0 || tr == nil || !strings.HasPrefix(tr.String(), "trace:") {
		t.Fatalf("a trace path gave rate %v trace %v", rate, tr)
	}
}

// The fuzz targets check that parsers never panic and that what they accept
// formats back to something they parse to the same value.

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10Mbit", "100kbit", "1.5Gbit", "64000bit", "10Mbps", "10Mbit/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bps, err := ParseRate(s)
		if err != nil {
			return
		}
		back, err := ParseRate(FormatRate(bps))
		if err != nil || back != bps {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, bps, FormatRate(bps), back, err)
		}
	})
}

func FuzzParseDelay(f *testing.F) {
	for _, s := range []string{"25ms", "1.5ms", "0", "1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDelay(s)
		if err != nil {
			return
		}
		if back, err := ParseDelay(d.String()); err != nil || back != d {
			t.Fatalf("%q -> %v -> %v, %v", s, d, back, err)
		}
	})
}

func FuzzParseLoss(f *testing.F) {
	for _, s := range []string{"1.5%", "0.015", "0", "ge:p=0.01,r=0.3", "ge:p=0.01,r=0.3,k=1,h=0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseLoss(s)
		if err != nil {
			return
		}
		if back, err := ParseLoss(c.String()); err != nil || back != c {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, c, c.String(), back, err)
		}
	})
}

func FuzzParseQueue(f *testing.F) {
	for _, s := range []string{"droptail", "droptail:packets=100", "droptail:bytes=150000", "fq", "fq:packets=1000", "codel", "codel:target=5ms,interval=100ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseQueue(s)
		if err != nil {
			return
		}
		back, err := ParseQueue(c.String())
		if err != nil || back.String() != c.String() {
			t.Fatalf("%q -> %q -> %+v, %v", s, c.String(), back, err)
		}
		if _, err := c.New(); err != nil {
			t.Fatalf("%q parsed but New failed: %v", s, err)
		}
	})
}

func FuzzParseLinkSpec(f *testing.F) {
	for _, s := range []string{"rate=10Mbit delay=25ms loss=1.5% queue=codel", "rate=trace:good loss=ge:p=0.01,r=0.3", "rate=step:good queue=fq:packets=10", "delay=20ms jitter=normal:5ms", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseLinkSpec(s, fakeLoad)
		if err != nil {
			return
		}
		if _, err := NewLink(c, 1, nil); err != nil {
			t.Fatalf("%q parsed but NewLink failed: %v", s, err)
		}
		back, err := parseLinkSpec(c.String(), fakeLoad)
		if err != nil || back.String() != c.String() {
			t.Fatalf("%q -> %q -> %v", s, c.String(), err)
		}
	})
}
