package bench

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/shunt-net/shunt/experiment"
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

// Ratio is one protocol's median over its peer's, in one cell, and the
// same per repetition: the protocol's value over the peer's in the same
// repetition (their runs back to back), over the Pairs repetitions both
// succeeded in, with the median and range of those ratios and the count
// Ahead in which the protocol did better (Better).
type Ratio struct {
	Labels     Labels  `json:"labels"`
	To         string  `json:"to"`   // the value of Ratios.Param the peer has
	Peer       string  `json:"peer"` // the peer protocol
	Ratio      float64 `json:"ratio"`
	Pairs      int     `json:"pairs"`
	PairMedian float64 `json:"pair_median"`
	PairMin    float64 `json:"pair_min"`
	PairMax    float64 `json:"pair_max"`
	Ahead      int     `json:"ahead"`
}

// Better reports whether value a of metric beats b: a higher rate
// (NAME_per_s), else (times, CPU, memory) a lower value.
func Better(metric string, a, b float64) bool {
	if strings.HasSuffix(metric, "_per_s") {
		return a > b
	}
	return a < b
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
// the scenario's order, pairing the runs of recs by repetition; a cell
// without a successful run on either side, or a peer whose median is 0, has
// no ratio, and a repetition whose peer's value is 0 no pair.
func deriveRatios(s *Scenario, sum *Summary, recs []*experiment.Record) {
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
	// perRep[cell][repetition] is a successful run's value.
	perRep := map[Labels]map[int]float64{}
	for _, rec := range recs {
		if !rec.OK() {
			continue
		}
		for m, v := range rec.Metrics {
			l := labels(&rec.Run, m)
			if perRep[l] == nil {
				perRep[l] = map[int]float64{}
			}
			perRep[l][rec.Rep] = v
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
			x := Ratio{Labels: c.Labels, To: t, Peer: peer, Ratio: c.P50 / pc.P50}
			var pairs []float64
			for rep, v := range perRep[c.Labels] {
				if pv := perRep[l][rep]; pv != 0 {
					pairs = append(pairs, v/pv)
					if Better(l.Metric, v, pv) {
						x.Ahead++
					}
				}
			}
			if x.Pairs = len(pairs); x.Pairs > 0 {
				sort.Float64s(pairs)
				x.PairMedian, x.PairMin, x.PairMax = Quantile(pairs, 0.5), pairs[0], pairs[len(pairs)-1]
			}
			sum.Ratios = append(sum.Ratios, x)
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
