package h2

import (
	"math/rand/v2"
	"testing"
)

// TestStreamTable: random opens and closes of odd and even IDs, as a map
// would keep them, including runs of IDs that share slots.
func TestStreamTable(t *testing.T) {
	var tab streamTable
	want := map[uint32]*stream{}
	r := rand.New(rand.NewPCG(1, 2))
	next := uint32(1)
	for step := 0; step < 200000; step++ {
		switch {
		case r.IntN(2) == 0 && len(want) < 300:
			id := next + uint32(r.IntN(3))*2 // mostly consecutive, some gaps
			if r.IntN(8) == 0 {
				id = uint32(r.IntN(1 << 12)) // anywhere: collisions
			}
			if want[id] != nil || id == 0 {
				continue
			}
			next = max(next, id+2)
			st := &stream{id: id}
			tab.put(st)
			want[id] = st
		default:
			for id := range want { // any one
				tab.del(id)
				delete(want, id)
				break
			}
		}
		if step%97 == 0 {
			if tab.n != len(want) || len(tab.list()) != len(want) {
				t.Fatalf("step %d: %d streams in the table, %d listed, want %d", step, tab.n, len(tab.list()), len(want))
			}
			for id, st := range want {
				if got := tab.get(id); got != st {
					t.Fatalf("step %d: get(%d) = %v, want the stream put", step, id, got)
				}
			}
			for k := 0; k < 20; k++ {
				id := uint32(r.IntN(1 << 13))
				if want[id] == nil && tab.get(id) != nil {
					t.Fatalf("step %d: get(%d) found a stream never put or deleted", step, id)
				}
			}
		}
	}
	tab.del(12345) // absent: no change
	if tab.n != len(want) {
		t.Fatal("deleting an absent ID changed the count")
	}
	tab.shrink() // streams open: kept
	for id, st := range want {
		if tab.get(id) != st {
			t.Fatalf("after shrink with %d streams open, get(%d) lost its stream", len(want), id)
		}
		tab.del(id)
	}
	tab.shrink()
	if tab.slots != nil || tab.get(1) != nil {
		t.Fatal("shrink of an empty table kept its slots")
	}
	tab.put(&stream{id: 7}) // and it grows again
	if tab.get(7) == nil {
		t.Fatal("put after shrink: stream not found")
	}
}
