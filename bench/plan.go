package bench

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shunt-net/shunt/experiment"
)

// labels names the summary cell of a run's metric.
func labels(r *experiment.Run, metric string) Labels {
	return Labels{Condition: r.Condition.Name, Protocol: r.Protocol.Name, Object: r.Object.Name, Metric: metric}
}

// RunID is a stable identifier of a run: a hash of everything that defines
// it (the full condition, protocol and object, the scenario's seed and the
// repetition). Renaming the scenario or editing its description keeps IDs;
// changing a link, a parameter or an object makes new ones, so resume never
// mistakes an old measurement for a new one.
func RunID(seed int64, c experiment.Condition, p experiment.Protocol, o experiment.Object, rep int) string {
	h := digest(struct {
		Seed      int64
		Condition experiment.Condition
		Protocol  experiment.Protocol
		Object    experiment.Object
		Rep       int
	}{seed, c, p, o, rep})
	return hex.EncodeToString(h[:8])
}

// digest hashes the JSON of v; encoding/json sorts map keys, so the
// encoding is canonical.
func digest(v any) [32]byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("bench: run config not encodable: " + err.Error()) // only plain types
	}
	return sha256.Sum256(b)
}

// Plan expands a scenario into its runs, condition by condition (a network
// is built once for its runs), then repetition by repetition and object by
// object, and innermost every protocol: the runs a ratio compares, one
// pair (condition, object, repetition) across protocols, run back to back,
// so a drift of the machine's load hits every protocol alike. Repetitions
// come before objects so slow drifts spread over all objects. The protocols
// run in the order Order gives the repetition.
func Plan(s *Scenario) []*experiment.Run {
	var runs []*experiment.Run
	for _, c := range s.Conditions {
		for rep := 0; rep < s.Reps; rep++ {
			order := s.Order(rep)
			for _, o := range s.Objects {
				for _, p := range order {
					id := RunID(s.Seed, c, p, o, rep)
					runs = append(runs, &experiment.Run{ID: id, Scenario: s.Name, Condition: c, Protocol: p, Object: o, Rep: rep, Seed: runSeed(s.Seed, id)})
				}
			}
		}
	}
	return runs
}

// Order is the protocols' order in repetition rep: the scenario's, or with
// Rotate the members of each ratio family (protocols of one driver whose
// params differ only in Ratios.Param) take turns in the family's places:
// the family's i-th place holds member (i+rep) mod k, so over k consecutive
// repetitions every member runs in every place once. A fixed order moved
// h2load's ratios by up to 0.3 (shunt first or last in each triple, h76).
func (s *Scenario) Order(rep int) []experiment.Protocol {
	out := slices.Clone(s.Protocols)
	if !s.Rotate || s.Ratios == nil {
		return out
	}
	for _, fam := range s.families() {
		for i, place := range fam {
			out[place] = s.Protocols[fam[(i+rep)%len(fam)]]
		}
	}
	return out
}

// families groups the protocols' indices into ratio families, each in
// scenario order.
func (s *Scenario) families() [][]int {
	var fams [][]int
	for i, p := range s.Protocols {
		j := slices.IndexFunc(fams, func(f []int) bool {
			q := s.Protocols[f[0]]
			return q.Driver == p.Driver && sameBut(p.Params, q.Params, s.Ratios.Param)
		})
		if j < 0 {
			fams = append(fams, []int{i})
		} else {
			fams[j] = append(fams[j], i)
		}
	}
	return fams
}

func runSeed(seed int64, id string) int64 {
	h := sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + "/" + id))
	return int64(binary.BigEndian.Uint64(h[:8]) >> 1)
}

// Shard selects part i (1-based) of n of a sweep.
type Shard struct{ I, N int }

// ParseShard parses "i/n" with 1 <= i <= n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 1 <= i <= n, e.g. 2/4", s)
	}
	return Shard{I: i, N: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Has reports whether a run belongs to the shard. Shards split a sweep by
// pair, never inside one: every protocol's run of one (condition, object,
// repetition) is in the same shard, so a ratio never compares runs of two
// machines. Within a (condition, object) cell the repetitions go round the
// shards from a start that a hash of the cell picks, so every shard gets
// its share of every cell (tasks of equal length, and every node measures
// every cell) and the choice depends on the run alone: every machine
// computes the same partition, and more repetitions or another protocol
// do not move runs between shards.
func (s Shard) Has(r *experiment.Run) bool {
	if s.N <= 1 {
		return true
	}
	h := digest(struct {
		Condition experiment.Condition
		Object    experiment.Object
	}{r.Condition, r.Object})
	start := binary.BigEndian.Uint64(h[:8]) % uint64(s.N)
	return int((start+uint64(r.Rep))%uint64(s.N)) == s.I-1
}
