package bench

import (
	"sort"

	"github.com/shunt-net/shunt/experiment"
)

// Latest keeps one record per run ID: a success over an error (a resumed run
// retries failures), and among equals the latest start. The result is sorted
// by start time then ID, so it does not depend on file order.
func Latest(recs []*experiment.Record) []*experiment.Record {
	best := map[string]*experiment.Record{}
	for _, r := range recs {
		b, ok := best[r.ID]
		if !ok || better(r, b) {
			best[r.ID] = r
		}
	}
	out := make([]*experiment.Record, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func better(a, b *experiment.Record) bool {
	if a.OK() != b.OK() {
		return a.OK()
	}
	return a.Start.After(b.Start)
}
