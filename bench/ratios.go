package bench

import (
	"fmt"
	"github.com/shunt-net/shunt/experiment"
	"maps"
	"slices"
)

// Ratios sets protocols against peers that differ from them in one param
// only, as a server benchmark sets every server against a reference server
// under the same load: with Param "server" and To [h2o], protocol
// {server: shunt, tls: true, clients: 100} is divided by {server: h2o,
// tls: true, clients: 100}, per condition, object and metric.
type Ratios struct {
	Param   string   `yaml:"param" json:"param"`
	To      []string `yaml:"to" json:"to"`                               // the reference values of Param
	Metrics []string `yaml:"metrics,omitempty" json:"metrics,omitempty"` // default: the scenario's metrics
}

// Ratio is one protocol's median over its peer's, in one cell.
type Ratio struct {
	Labels Labels  `json:"labels"`
	To     string  `json:"to"`   // the value of Ratios.Param the peer has
	Peer   string  `json:"peer"` // the peer protocol
	Ratio  float64 `json:"ratio"`
}

// RatioMetrics are the metrics Ratios sets against peers.
func (s *Scenario) RatioMetrics() []string {
	if len(s.Ratios.Metrics) > 0 {
		return s.Ratios.Metrics
	}
	return s.Metrics
}

func (s *Scenario) validateRatios() []error {
	r := s.Ratios
	if r == nil {
		return nil
	}
	var errs []error
	if r.Param == "" {
		errs = append(errs, fieldErr("ratios.param", "", "missing"))
	}
	if len(r.To) == 0 {
		errs = append(errs, fieldErr("ratios.to", "", "name at least one value of the param"))
	}
	for i, t := range r.To {
		if !slices.ContainsFunc(s.Protocols, func(p experiment.Protocol) bool { return p.Params[r.Param] == t }) {
			errs = append(errs, fieldErr(fmt.Sprintf("ratios.to[%d]", i), t, "no protocol has %s %s", r.Param, t))
		}
	}
	if len(s.RatioMetrics()) == 0 {
		errs = append(errs, fieldErr("ratios.metrics", "", "name the metrics (or the scenario's metrics)"))
	}
	return errs
}

// deriveRatios adds the scenario's ratios to a summary whose cells are in
// the scenario's order; a cell without a successful run on either side, or
// a peer whose median is 0, has no ratio.
func deriveRatios(s *Scenario, sum *Summary) {
	r := s.Ratios
	if r == nil {
		return
	}
	cells := map[Labels]Cell{}
	for _, c := range sum.Cells {
		cells[c.Labels] = c
	}
	// peerOf[protocol][to] is the protocol that differs only in r.Param.
	peerOf := map[string]map[string]string{}
	for _, p := range s.Protocols {
		peerOf[p.Name] = map[string]string{}
		for _, q := range s.Protocols {
			t := q.Params[r.Param]
			if q.Name == p.Name || q.Driver != p.Driver || !slices.Contains(r.To, t) || !sameBut(p.Params, q.Params, r.Param) {
				continue
			}
			peerOf[p.Name][t] = q.Name
		}
	}
	metrics := s.RatioMetrics()
	for _, c := range sum.Cells {
		if c.N == 0 || !slices.Contains(metrics, c.Labels.Metric) {
			continue
		}
		for _, t := range r.To {
			peer, ok := peerOf[c.Labels.Protocol][t]
			if !ok {
				continue
			}
			l := c.Labels
			l.Protocol = peer
			pc, ok := cells[l]
			if !ok || pc.N == 0 || pc.P50 == 0 {
				continue
			}
			sum.Ratios = append(sum.Ratios, Ratio{Labels: c.Labels, To: t, Peer: peer, Ratio: c.P50 / pc.P50})
		}
	}
}

// sameBut reports whether a and b are equal except at key.
func sameBut(a, b map[string]string, key string) bool {
	a, b = maps.Clone(a), maps.Clone(b)
	delete(a, key)
	delete(b, key)
	return maps.Equal(a, b)
}
