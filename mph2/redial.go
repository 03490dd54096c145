package mph2

import "time"

// Redial pacing: a path whose connection died is dialed again after
// redialMin, each next attempt twice as late up to redialMax, so a server
// back after a restart of a few seconds is found within about redialMax.
const (
	redialMin = 100 * time.Millisecond
	redialMax = time.Second
)

// backoff paces the redials of one path. It reads no clock: the caller
// passes the times.
type backoff struct {
	next  time.Duration // the wait before the next attempt; 0: redialMin
	tries int           // attempts since the path last delivered
}

// after returns how long to wait, from now, before the next attempt, or
// false if that attempt would start after deadline (when the download's
// stall timeout runs out): the redialing ends there.
func (b *backoff) after(now, deadline time.Time) (time.Duration, bool) {
	wait := b.next
	if wait == 0 {
		wait = redialMin
	}
	if now.Add(wait).After(deadline) {
		return 0, false
	}
	b.next = min(2*wait, redialMax)
	b.tries++
	return wait, true
}

// delivered: the path carried data, so its next loss starts over at
// redialMin. A dial that succeeds does not reset it, or a server that
// accepts and then drops every request would be redialed every redialMin.
func (b *backoff) delivered() { b.next, b.tries = 0, 0 }
