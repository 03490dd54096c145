package experiment

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Node is the machine a run ran on and how busy it was as the run started,
// so a sweep spread over a cluster shows a slow or loaded node, and a ratio
// can be checked to compare runs of one machine.
type Node struct {
	Name   string  `json:"name"`
	Kernel string  `json:"kernel"`
	CPUs   int     `json:"cpus"`
	Load1  float64 `json:"load1"` // /proc/loadavg: 1, 5 and 15 minutes
	Load5  float64 `json:"load5"`
	Load15 float64 `json:"load15"`
}

// ReadNode describes this machine now. The name is $SHUNT_NODE, else the
// Slurm node the task runs on ($SLURMD_NODENAME), else the host name: a
// Kubernetes pod's host name is the pod's, so the Indexed Job example sets
// SHUNT_NODE to the node's name. What cannot be read is left zero and said
// in the error.
func ReadNode() (*Node, error) {
	n := &Node{Name: os.Getenv("SHUNT_NODE"), CPUs: runtime.NumCPU()}
	var errs []error
	if n.Name == "" {
		n.Name = os.Getenv("SLURMD_NODENAME")
	}
	if n.Name == "" {
		h, err := os.Hostname()
		n.Name = h
		errs = append(errs, err)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		n.Kernel = strings.TrimSpace(string(b))
	} else {
		errs = append(errs, err)
	}
	b, err := os.ReadFile("/proc/loadavg")
	if err == nil {
		n.Load1, n.Load5, n.Load15, err = parseLoadavg(string(b))
	}
	return n, errors.Join(append(errs, err)...)
}

// parseLoadavg reads the three load averages of /proc/loadavg
// ("0.52 0.58 0.59 1/467 12345").
func parseLoadavg(s string) (l1, l5, l15 float64, err error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return 0, 0, 0, fmt.Errorf("/proc/loadavg %q: want three load averages", s)
	}
	var v [3]float64
	for i := range v {
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return 0, 0, 0, fmt.Errorf("/proc/loadavg %q: %w", s, err)
		}
	}
	return v[0], v[1], v[2], nil
}
