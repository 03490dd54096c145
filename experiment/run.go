package experiment

import (
	"fmt"
	"time"

	"github.com/shunt-net/shunt/netem"
)

// Condition is one named network setup, built once for all of its runs.
type Condition struct {
	Name     string     `yaml:"name" json:"name"`
	Topology string     `yaml:"topology" json:"topology"` // single | twopath | multihomed | loopback
	Paths    []PathSpec `yaml:"paths" json:"paths"`
}

// PathSpec is one client-server path: a link per direction.
type PathSpec struct {
	Name string   `yaml:"name" json:"name"`
	Up   LinkSpec `yaml:"up" json:"up"`     // client to server
	Down LinkSpec `yaml:"down" json:"down"` // server to client
}

// RTT is the path's round-trip delay: both directions' delays, no
// queueing, no jitter.
func (p PathSpec) RTT() (time.Duration, error) {
	var rtt time.Duration
	for _, d := range []string{p.Up.Delay, p.Down.Delay} {
		if d == "" {
			continue
		}
		one, err := netem.ParseDelay(d)
		if err != nil {
			return 0, fmt.Errorf("path %s: %w", p.Name, err)
		}
		rtt += one
	}
	return rtt, nil
}

// LinkSpec is one direction of a link, as text the link emulator parses
// (netem.ParseRate, ParseLoss, ParseQueue, trace references). Empty means the
// emulator's default: no delay, unlimited rate, no loss, default queue.
type LinkSpec struct {
	Delay string `yaml:"delay,omitempty" json:"delay,omitempty"` // one-way, e.g. 25ms
	// Jitter spreads the delay around it, packets kept in order
	// (netem.ParseJitter), e.g. 5ms or normal:5ms.
	Jitter string `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	Rate   string `yaml:"rate,omitempty" json:"rate,omitempty"`   // e.g. 10Mbit
	Loss   string `yaml:"loss,omitempty" json:"loss,omitempty"`   // e.g. 1.5%
	Queue  string `yaml:"queue,omitempty" json:"queue,omitempty"` // e.g. droptail bytes=64KB
	Trace  string `yaml:"trace,omitempty" json:"trace,omitempty"` // bandwidth trace reference (netem.ParseTraceRef)
}

// IsZero reports whether the link is the emulator's default in every respect.
func (l LinkSpec) IsZero() bool { return l == LinkSpec{} }

// Protocol is one row of an experiment: a driver and its parameters.
type Protocol struct {
	Name   string            `yaml:"name" json:"name"`
	Driver string            `yaml:"driver" json:"driver"`
	Params map[string]string `yaml:"params,omitempty" json:"params,omitempty"`
}

// Object is what one run fetches. Drivers say which fields they use (Driver.Check).
type Object struct {
	Name string `yaml:"name" json:"name"`
	Size string `yaml:"size,omitempty" json:"size,omitempty"` // e.g. 10KB
	// Background is a concurrent download in flight while Size is fetched.
	Background string `yaml:"background,omitempty" json:"background,omitempty"`
	// BackgroundAfter: the object is requested once this much of the
	// background response has arrived, so it fills the sender's buffers.
	BackgroundAfter string `yaml:"background_after,omitempty" json:"background_after,omitempty"`
	// Page is a synthetic page: an HTML document, then its images in parallel.
	Page *PageSpec `yaml:"page,omitempty" json:"page,omitempty"`
}

// PageSpec is a synthetic page: HTML fetched alone, then Images objects.
type PageSpec struct {
	HTML      string `yaml:"html" json:"html"`
	Images    int    `yaml:"images" json:"images"`
	ImageSize string `yaml:"image_size" json:"image_size"`
}

// Run is one measurement: a condition, a protocol, an object and a repetition.
type Run struct {
	ID        string    `json:"id"`
	Scenario  string    `json:"scenario"`
	Condition Condition `json:"condition"`
	Protocol  Protocol  `json:"protocol"`
	Object    Object    `json:"object"`
	Rep       int       `json:"rep"`
	// Seed is derived from the scenario seed and the run ID, so a run is
	// repeatable on its own.
	Seed int64 `json:"seed"`
}
