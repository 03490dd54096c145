// Package flow does HTTP/2 flow-control accounting (RFC 9113 section 5.2 and
// 6.9): pure arithmetic on windows, no I/O, no locking. The caller owns the
// connection state and turns the returned increments into WINDOW_UPDATE frames.
package flow

// MaxWindow is the largest legal flow-control window, 2^31-1.
const MaxWindow = 1<<31 - 1

// Send is the credit the peer granted us. It may go negative after the peer
// lowers SETTINGS_INITIAL_WINDOW_SIZE (RFC 9113 6.9.2).
type Send struct{ n int64 }

// NewSend returns a send window starting at initial.
func NewSend(initial uint32) Send { return Send{n: int64(initial)} }

// Avail returns how many bytes may be sent now (<= 0 means blocked).
func (w *Send) Avail() int64 { return w.n }

// Add applies a WINDOW_UPDATE increment. It reports false, leaving the window
// unchanged, if the window would exceed MaxWindow (a FLOW_CONTROL_ERROR).
func (w *Send) Add(inc uint32) bool {
	if w.n+int64(inc) > MaxWindow {
		return false
	}
	w.n += int64(inc)
	return true
}

// Take consumes n bytes of credit for a DATA frame being sent.
func (w *Send) Take(n int) { w.n -= int64(n) }

// Shift applies a change of SETTINGS_INITIAL_WINDOW_SIZE to an open stream's
// window. It reports false if the result would exceed MaxWindow.
func (w *Send) Shift(delta int64) bool {
	if w.n+delta > MaxWindow {
		return false
	}
	w.n += delta
	return true
}

// Recv accounts for the credit we granted the peer and decides when consumed
// bytes are handed back. In manual mode nothing is handed back automatically:
// the application grows the window itself (MP-H2 stops a sender exactly at a
// byte offset this way).
type Recv struct {
	avail   int64 // bytes the peer may still send
	got     int64 // bytes the peer sent
	pending int64 // consumed bytes not yet returned in a WINDOW_UPDATE
	size    int64 // window we aim to keep open
	manual  bool
}

// NewRecv returns a receive window of size bytes, the value the peer starts with.
func NewRecv(size uint32) Recv { return Recv{avail: int64(size), size: int64(size)} }

// Avail returns the credit the peer still has.
func (w *Recv) Avail() int64 { return w.avail }

// Manual reports whether automatic window updates are off.
func (w *Recv) Manual() bool { return w.manual }

// SetManual turns off automatic WINDOW_UPDATEs; bytes consumed from then on
// are no longer handed back.
func (w *Recv) SetManual() { w.manual = true; w.pending = 0 }

// Receive records n bytes of flow-controlled payload from the peer. It reports
// false if the peer exceeded the window (a FLOW_CONTROL_ERROR).
func (w *Recv) Receive(n uint32) bool {
	if int64(n) > w.avail {
		return false
	}
	w.avail -= int64(n)
	w.got += int64(n)
	return true
}

// Credited returns the bytes the peer may send in all: those it sent and
// the credit it has left.
func (w *Recv) Credited() int64 { return w.got + max(w.avail, 0) }

// Consume records that the application consumed n received bytes and returns
// the WINDOW_UPDATE increment to send now, 0 for none. Updates are batched
// until a quarter of the window is pending, so a fast reader costs one frame
// per quarter window rather than one per DATA frame.
func (w *Recv) Consume(n int) uint32 {
	if w.manual {
		return 0
	}
	w.pending += int64(n)
	if w.pending < w.size/4 && w.pending < MaxWindow/4 || w.pending == 0 {
		return 0
	}
	inc := w.pending
	if w.avail+inc > MaxWindow {
		inc = MaxWindow - w.avail
	}
	w.pending -= inc
	w.avail += inc
	return uint32(inc)
}

// Grow opens the window by n bytes on the application's request and returns
// the increment to send, clamped so the window stays legal.
func (w *Recv) Grow(n uint32) uint32 {
	inc := int64(n)
	if w.avail+inc > MaxWindow {
		inc = MaxWindow - w.avail
	}
	if inc < 0 {
		inc = 0
	}
	w.avail += inc
	if !w.manual {
		w.size += inc
	}
	return uint32(inc)
}

// Shift applies an acknowledged change of our SETTINGS_INITIAL_WINDOW_SIZE.
func (w *Recv) Shift(delta int64) {
	w.avail += delta
	w.size += delta
}

// Pending returns the bytes consumed and not yet handed back.
func (w *Recv) Pending() int64 { return w.pending }
