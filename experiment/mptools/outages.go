package mptools

import (
	"fmt"
	"strings"
	"time"
)

// Outage is a time during which a path's links lose every packet, from
// Start after the timed download begins, for Len (0: to the end of the run).
type Outage struct {
	Path       string
	Start, Len time.Duration
}

func (o Outage) String() string {
	s := o.Path + "@" + o.Start.String()
	if o.Len > 0 {
		s += "+" + o.Len.String()
	}
	return s
}

// ParseOutages reads PATH@START[+LEN],... ("" is none).
func ParseOutages(s string) ([]Outage, error) {
	if s == "" {
		return nil, nil
	}
	var out []Outage
	for _, item := range strings.Split(s, ",") {
		path, when, ok := strings.Cut(item, "@")
		if !ok || path == "" || strings.ContainsAny(path, "@+,") {
			return nil, fmt.Errorf("outage %q: want PATH@START[+LEN]", item)
		}
		start, length, hasLen := strings.Cut(when, "+")
		o := Outage{Path: path}
		var err error
		if o.Start, err = time.ParseDuration(start); err != nil || o.Start < 0 {
			return nil, fmt.Errorf("outage %q: start %q: want a duration such as 2s", item, start)
		}
		if hasLen {
			if o.Len, err = time.ParseDuration(length); err != nil || o.Len <= 0 {
				return nil, fmt.Errorf("outage %q: length %q: want a positive duration", item, length)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// FormatOutages writes outages back in ParseOutages' syntax.
func FormatOutages(os []Outage) string {
	var parts []string
	for _, o := range os {
		parts = append(parts, o.String())
	}
	return strings.Join(parts, ",")
}
