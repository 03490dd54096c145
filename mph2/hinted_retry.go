package mph2

// What a Hinted object does when the connections under its copies die:
// whether it is asked for again, from which byte, on which path and when.
// Pure decisions: no I/O, the caller passes the times.

import (
	"errors"
	"time"

	"github.com/shunt-net/shunt/h2"
)

// finalError marks a copy that failed for its request or for what its
// response said (status, length, validators, bytes that differ from those
// received before): asking again elsewhere would not help.
type finalError struct{ error }

func (e finalError) Unwrap() error { return e.error }

// connLost reports whether a copy failed with its path's connection
// (closed, reset, GOAWAY, a refused stream, silent, the path down) rather
// than for its response, so the object may be asked for again. A stream
// the server reset alone (not REFUSED_STREAM) is the server's answer.
func connLost(err error) bool {
	var re finalError
	var sr h2.StreamResetError
	switch {
	case err == nil, errors.As(err, &re):
		return false
	case errors.Is(err, h2.ErrNotProcessed):
		return true
	}
	return !errors.As(err, &sr)
}

// span is the bytes one copy of an object holds: [off, off+got).
type span struct{ off, got int64 }

// held is how far the copies hold the object from byte 0 without a gap.
func held(spans []span) int64 {
	var k int64
	for grown := true; grown; {
		grown = false
		for _, s := range spans {
			if s.off <= k && s.off+s.got > k {
				k, grown = s.off+s.got, true
			}
		}
	}
	return k
}

// resume is how an object is asked for again.
type resume struct {
	// off > 0: by Range from off, with If-Range naming the validator, so a
	// changed representation comes back whole and fails the copy.
	off int64
	// check > 0: whole, and its first check bytes must equal those held
	// before any is used: without a validator only the bytes themselves
	// show that it is the same representation.
	check int64
}

// planResume asks from the bytes the copies hold when the object has a
// validator (the lead's strong ETag or Last-Modified), else whole.
func planResume(spans []span, validator string) resume {
	k := held(spans)
	if k > 0 && validator != "" {
		return resume{off: k}
	}
	return resume{check: k}
}

// reissuePath chooses the path of an object's next copy after one failed
// on path failed: the live path of lowest RTT (0: unknown, last) other
// than failed, else failed if it is live again (a refused stream), else
// -1: wait for a path.
func reissuePath(live []bool, rtt []time.Duration, failed int) int {
	best := -1
	for i, ok := range live {
		if !ok || i == failed {
			continue
		}
		if best < 0 || rtt[i] > 0 && (rtt[best] == 0 || rtt[i] < rtt[best]) {
			best = i
		}
	}
	if best < 0 && failed >= 0 && failed < len(live) && live[failed] {
		return failed
	}
	return best
}

// reissuer paces one object's re-issues: at once when the object has made
// progress since the last one, else after the redial backoff (redial.go);
// it gives up once the next would start past the stall timeout since the
// object last made progress (a byte of any copy, or its request).
type reissuer struct {
	b    backoff
	last time.Time // when the last re-issue was due
	n    int       // re-issues so far
}

// wait returns how long from now to wait before the next re-issue, or
// false: give up.
func (r *reissuer) wait(now, progress time.Time, stall time.Duration) (time.Duration, bool) {
	deadline := progress.Add(stall)
	var w time.Duration
	if r.n == 0 || progress.After(r.last) {
		r.b.delivered()
		if now.After(deadline) {
			return 0, false
		}
	} else {
		var ok bool
		if w, ok = r.b.after(now, deadline); !ok {
			return 0, false
		}
	}
	r.last, r.n = now.Add(w), r.n+1
	return w, true
}
