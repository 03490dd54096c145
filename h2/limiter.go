package h2

import "time"

// resetLimiter is a token bucket bounding how fast a peer may reset streams
// it opened (CVE-2023-44487 "rapid reset"): burst tokens, refilled at burst
// per period. Pure logic: the caller passes the clock.
type resetLimiter struct {
	burst  float64
	rate   float64 // tokens per nanosecond
	tokens float64
	last   time.Time
}

func newResetLimiter(burst int, per time.Duration) resetLimiter {
	return resetLimiter{burst: float64(burst), rate: float64(burst) / float64(per), tokens: float64(burst)}
}

// allow takes one token at time now and reports whether one was available.
func (l *resetLimiter) allow(now time.Time) bool {
	if !l.last.IsZero() {
		l.tokens += float64(now.Sub(l.last)) * l.rate
		if l.tokens > l.burst {
			l.tokens = l.burst
		}
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
