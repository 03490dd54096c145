package netem

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// rateUnits maps lower-case rate suffixes to bit/s; every unit counts bits
// (tc's "mbps" meaning megabytes is a trap shunt does not set).
var rateUnits = []struct {
	suffix string
	mult   float64
	name   string // how FormatRate writes it
}{
	{"gbit", 1e9, "Gbit"}, {"mbit", 1e6, "Mbit"}, {"kbit", 1e3, "kbit"}, {"bit", 1, "bit"},
	{"gbps", 1e9, ""}, {"mbps", 1e6, ""}, {"kbps", 1e3, ""}, {"bps", 1, ""},
}

// ParseRate parses a bit rate such as "10Mbit", "100kbit", "1.5Gbit",
// "64000bit", "10Mbps" or "10Mbit/s" into bit/s. Units are decimal and
// case-insensitive, and required.
func ParseRate(s string) (float64, error) {
	num := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "/s")
	for _, u := range rateUnits {
		if !strings.HasSuffix(num, u.suffix) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), 64)
		if err != nil {
			return 0, fmt.Errorf("rate %q: not a number before %q", s, u.suffix)
		}
		bps := v * u.mult
		if !(bps > 0 && bps <= maxRateBps) || math.Round(bps) == 0 {
			return 0, fmt.Errorf("rate %q: out of range (0, 1Tbit]", s)
		}
		return bps, nil
	}
	return 0, fmt.Errorf("rate %q: want a number and a unit (bit, kbit, Mbit, Gbit), e.g. 10Mbit", s)
}

// FormatRate writes bps in ParseRate syntax, in the largest unit that keeps
// it exact.
func FormatRate(bps float64) string {
	for _, u := range rateUnits[:4] {
		if v := bps / u.mult; v*u.mult == bps && v >= 1 {
			return strconv.FormatFloat(v, 'g', -1, 64) + u.name
		}
	}
	return strconv.FormatFloat(bps, 'g', -1, 64) + "bit"
}

// ParseDelay parses a one-way delay in time.ParseDuration syntax ("25ms",
// "1.5ms", "0"); it must not be negative.
func ParseDelay(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("delay %q: %w", s, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("delay %q: negative", s)
	}
	return d, nil
}

// ParseLoss parses a loss model: "1.5%" or "0.015" (Bernoulli), "0" (none), or
// "ge:p=P,r=R[,k=K][,h=H]" (Gilbert-Elliott; see LossGilbertElliott; k
// defaults to 1 and h to 0, the simple Gilbert model).
func ParseLoss(s string) (LossConfig, error) {
	s = strings.TrimSpace(s)
	if args, ok := strings.CutPrefix(s, "ge:"); ok {
		kv, err := parseArgs("loss", s, args, "p", "r", "k", "h")
		if err != nil {
			return LossConfig{}, err
		}
		c := GilbertElliott(0, 0, 1, 0)
		for _, f := range []struct {
			key string
			dst *float64
		}{{"p", &c.P}, {"r", &c.R}, {"k", &c.K}, {"h", &c.H}} {
			v, ok := kv[f.key]
			if !ok {
				if f.key == "p" || f.key == "r" {
					return LossConfig{}, fmt.Errorf("loss %q: %s is required", s, f.key)
				}
				continue
			}
			if *f.dst, err = strconv.ParseFloat(v, 64); err != nil {
				return LossConfig{}, fmt.Errorf("loss %q: %s=%q is not a number", s, f.key, v)
			}
		}
		return c, c.validate()
	}
	num, pct := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil {
		return LossConfig{}, fmt.Errorf("loss %q: want a rate (\"1.5%%\", \"0.015\") or \"ge:p=P,r=R[,k=K][,h=H]\"", s)
	}
	if pct {
		v /= 100
	}
	if v == 0 {
		return LossConfig{}, nil
	}
	c := Bernoulli(v)
	return c, c.validate()
}

// parseArgs splits "k=v,k=v" into a map, rejecting unknown and repeated keys.
func parseArgs(what, whole, args string, keys ...string) (map[string]string, error) {
	kv := make(map[string]string)
	if args == "" {
		return kv, nil
	}
	for _, a := range strings.Split(args, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(a), "=")
		if !ok {
			return nil, fmt.Errorf("%s %q: %q is not key=value", what, whole, a)
		}
		known := false
		for _, key := range keys {
			known = known || k == key
		}
		if !known {
			return nil, fmt.Errorf("%s %q: unknown key %q (want one of %s)", what, whole, k, strings.Join(keys, ", "))
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("%s %q: %s given twice", what, whole, k)
		}
		kv[k] = v
	}
	return kv, nil
}

// ParseQueue parses a queue discipline: "droptail", "fq" or "codel",
// optionally followed by ":" and comma-separated arguments: packets=N and
// bytes=N (limits, for every kind; default 1000 packets), quantum=N (fq),
// target=D and interval=D (codel, time.ParseDuration syntax).
func ParseQueue(s string) (QueueConfig, error) {
	s = strings.TrimSpace(s)
	kind, args, _ := strings.Cut(s, ":")
	c := QueueConfig{Kind: kind}
	keys := []string{"packets", "bytes"}
	switch kind {
	case QueueFQ:
		keys = append(keys, "quantum")
	case QueueCoDel:
		keys = append(keys, "target", "interval")
	case QueueDropTail:
	default:
		return c, fmt.Errorf("queue %q: unknown kind %q (want droptail, fq or codel)", s, kind)
	}
	kv, err := parseArgs("queue", s, args, keys...)
	if err != nil {
		return c, err
	}
	counts := []struct {
		key string
		dst *int
	}{{"packets", &c.Packets}, {"bytes", &c.Bytes}, {"quantum", &c.Quantum}}
	for _, f := range counts {
		if v, ok := kv[f.key]; ok {
			if *f.dst, err = strconv.Atoi(v); err != nil || *f.dst < 0 {
				return c, fmt.Errorf("queue %q: %s=%q is not a count", s, f.key, v)
			}
		}
	}
	durations := []struct {
		key string
		dst *time.Duration
	}{{"target", &c.Target}, {"interval", &c.Interval}}
	for _, f := range durations {
		if v, ok := kv[f.key]; ok {
			if *f.dst, err = time.ParseDuration(v); err != nil {
				return c, fmt.Errorf("queue %q: %s=%q is not a duration", s, f.key, v)
			}
		}
	}
	if _, err := c.normalize(); err != nil {
		return c, fmt.Errorf("queue %q: %w", s, err)
	}
	return c, nil
}

// ParseBandwidth parses the rate of a link: a constant rate (ParseRate), or a
// trace: "trace:FILE" (mahimahi), "step:FILE" (step trace), or a path whose
// format LoadTrace chooses. "unlimited" means no rate limit.
func ParseBandwidth(s string) (rateBps float64, trace *Schedule, err error) {
	return parseBandwidth(s, LoadTrace)
}

func parseBandwidth(s string, load func(string) (*Schedule, error)) (float64, *Schedule, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "unlimited":
		return 0, nil, nil
	case strings.HasPrefix(s, "trace:"), strings.HasPrefix(s, "step:"):
		t, err := load(s)
		return 0, t, err
	}
	bps, rateErr := ParseRate(s)
	if rateErr == nil {
		return bps, nil, nil
	}
	t, err := load(s)
	if err != nil {
		return 0, nil, fmt.Errorf("bandwidth %q is neither a rate (%v) nor a trace (%v)", s, rateErr, err)
	}
	return 0, t, nil
}

// ParseLinkSpec parses one direction of a link as space-separated key=value
// pairs, e.g. "rate=10Mbit delay=25ms loss=1.5% queue=codel", with keys rate
// (ParseBandwidth), delay (ParseDelay), jitter (ParseJitter), loss
// (ParseLoss) and queue (ParseQueue). Omitted keys keep their zero values. LinkConfig.String writes
// this syntax.
func ParseLinkSpec(s string) (LinkConfig, error) {
	return parseLinkSpec(s, LoadTrace)
}

func parseLinkSpec(s string, load func(string) (*Schedule, error)) (LinkConfig, error) {
	var c LinkConfig
	seen := make(map[string]bool)
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return c, fmt.Errorf("link %q: %q is not key=value", s, f)
		}
		if seen[k] {
			return c, fmt.Errorf("link %q: %s given twice", s, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "rate":
			c.RateBps, c.Trace, err = parseBandwidth(v, load)
		case "delay":
			c.Delay, err = ParseDelay(v)
		case "jitter":
			c.Jitter, err = ParseJitter(v)
		case "loss":
			c.Loss, err = ParseLoss(v)
		case "queue":
			c.Queue, err = ParseQueue(v)
		default:
			err = fmt.Errorf("unknown key %q (want rate, delay, jitter, loss or queue)", k)
		}
		if err != nil {
			return c, fmt.Errorf("link %q: %w", s, err)
		}
	}
	if err := c.Jitter.Validate(c.Delay); err != nil {
		return c, fmt.Errorf("link %q: %w", s, err)
	}
	return c, nil
}
