package flow

import "testing"

func TestSendAddOverflow(t *testing.T) {
	w := NewSend(65535)
	if !w.Add(MaxWindow - 65535) {
		t.Fatal("Add to exactly MaxWindow refused")
	}
	if w.Add(1) {
		t.Fatal("Add past MaxWindow accepted")
	}
	if w.Avail() != MaxWindow {
		t.Fatalf("window changed by refused Add: %d", w.Avail())
	}
}

func TestSendShiftNegative(t *testing.T) {
	w := NewSend(100)
	w.Take(80)
	if !w.Shift(-50) {
		t.Fatal("Shift down refused")
	}
	if w.Avail() != -30 {
		t.Fatalf("Avail = %d, want -30", w.Avail())
	}
	if !w.Add(40) || w.Avail() != 10 {
		t.Fatalf("after Add(40) Avail = %d, want 10", w.Avail())
	}
	if w.Shift(MaxWindow) {
		t.Fatal("Shift past MaxWindow accepted")
	}
}

func TestRecv(t *testing.T) {
	tests := []struct {
		name    string
		size    uint32
		manual  bool
		steps   []int // >0 receive+consume that many bytes, <0 grow by -n
		wantInc []uint32
		wantAv  int64
		credit  int64 // the size plus every increment: what the peer may send in all
	}{
		{"batched", 1000, false, []int{100, 100, 100}, []uint32{0, 0, 300}, 1000, 1300},
		{"exceeds", 100, false, []int{100}, []uint32{100}, 100, 200},
		{"manual no update", 1000, true, []int{500, 500}, []uint32{0, 0}, 0, 1000},
		{"manual grow", 1000, true, []int{500, -200}, []uint32{0, 200}, 700, 1200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := NewRecv(tc.size)
			if tc.manual {
				w.SetManual()
			}
			for i, s := range tc.steps {
				var inc uint32
				if s > 0 {
					if !w.Receive(uint32(s)) {
						t.Fatalf("step %d: Receive(%d) refused with avail %d", i, s, w.Avail())
					}
					inc = w.Consume(s)
				} else {
					inc = w.Grow(uint32(-s))
				}
				if inc != tc.wantInc[i] {
					t.Fatalf("step %d: increment %d, want %d", i, inc, tc.wantInc[i])
				}
			}
			if w.Avail() != tc.wantAv {
				t.Fatalf("Avail = %d, want %d", w.Avail(), tc.wantAv)
			}
			if w.Credited() != tc.credit {
				t.Fatalf("Credited = %d, want %d", w.Credited(), tc.credit)
			}
		})
	}
}

func TestRecvViolation(t *testing.T) {
	w := NewRecv(10)
	if w.Receive(11) {
		t.Fatal("Receive beyond window accepted")
	}
	w.Shift(-5)
	if w.Receive(6) {
		t.Fatal("Receive beyond shifted window accepted")
	}
	if !w.Receive(5) {
		t.Fatal("Receive within shifted window refused")
	}
}

func TestRecvGrowClamp(t *testing.T) {
	w := NewRecv(MaxWindow - 10)
	if inc := w.Grow(100); inc != 10 {
		t.Fatalf("Grow clamped to %d, want 10", inc)
	}
}
