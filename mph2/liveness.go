package mph2

import (
	"time"

	"github.com/shunt-net/shunt/estimate"
)

// Defaults of the silence rule (liveness).
const (
	defaultPathTimeout = 3 * time.Second
	// pathTimeoutRTTs is k in max(floor, k x smoothed RTT): a PING ACK queues
	// behind the DATA the server has buffered, so on a path whose rate has
	// just dropped under a deep queue its RTT grows to seconds, and a fixed
	// timeout mistakes a slow path for a dead one.
	pathTimeoutRTTs = 4
	rttSamples      = 5 // as the scheduler's estimator (MP-H2 §3.4.1)
)

// liveness decides when a path is silent, to be suspended: its PING has
// been unanswered and no frame at all has arrived, both for max(floor, k x
// smoothed RTT). A path still delivering DATA is slow, not silent, however
// late its PING ACK. It reads no clock: the caller passes the times.
type liveness struct {
	floor    time.Duration
	k        float64
	rtt      *estimate.RTT
	pingSent time.Time // zero: no PING outstanding
}

func newLiveness(floor time.Duration) *liveness {
	if floor <= 0 {
		floor = defaultPathTimeout
	}
	r, _ := estimate.NewRTT(rttSamples) // a positive count cannot fail
	return &liveness{floor: floor, k: pathTimeoutRTTs, rtt: r}
}

func (l *liveness) sent(now time.Time) { l.pingSent = now }

func (l *liveness) answered(rtt time.Duration) {
	l.pingSent = time.Time{}
	l.rtt.Add(rtt)
}

// timeout is max(floor, k x smoothed RTT).
func (l *liveness) timeout() time.Duration {
	t := l.floor
	if srtt, ok := l.rtt.Estimate(); ok {
		t = max(t, time.Duration(l.k*float64(srtt)))
	}
	return t
}

// silent reports whether the path is silent at now, given when its last
// frame (of any type) arrived; the zero time means none has.
func (l *liveness) silent(now, lastFrame time.Time) bool {
	if l.pingSent.IsZero() {
		return false
	}
	t := l.timeout()
	return now.Sub(l.pingSent) >= t && (lastFrame.IsZero() || now.Sub(lastFrame) >= t)
}
