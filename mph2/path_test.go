package mph2

import (
	"fmt"
	"slices"
	"testing"
)

// A budgeted path never carries what the scheduler does not size: the
// Transport's pass-through and the proxy's tunnels both take their paths
// from PassThroughPaths, in order, every budgeted path named as skipped.
func TestPassThroughPaths(t *testing.T) {
	paths := []Path{{Name: "lte", Budget: 1}, {Name: "wifi"}, {Interface: "wwan0", Budget: 20 << 20}, {}}
	use, skipped := PassThroughPaths(paths)
	if !slices.Equal(use, []int{1, 3}) {
		t.Errorf("paths used %v, want [1 3]", use)
	}
	if got := fmt.Sprint(skipped); got != "[path lte: has a byte budget path wwan0: has a byte budget]" {
		t.Errorf("skipped: %s", got)
	}
	if use, skipped := PassThroughPaths(paths[:1]); len(use) != 0 || len(skipped) != 1 {
		t.Errorf("only a budgeted path: use %v, skipped %v", use, skipped)
	}
}
