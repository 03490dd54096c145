package h2

import "time"

// maxGraceFactor bounds quietGrace at this many base graces (Config.writerGrace):
// 160 ms. A client quiet for longer comes back seldom enough that making
// the writer and its state again (tens of microseconds) costs it little,
// and a connection that has been busy keeps no more than that of memory
// it does not use.
const maxGraceFactor = 16

// quietGrace is how long a server connection with no stream left keeps its
// writer goroutine and write kit, its queues, the streams it keeps for
// reuse and its stream table, and with them its reader: a connection parks
// only once its writer has ended. Letting them go after the base grace
// costs an idle connection nothing, but a client that comes back just
// after it pays for all of them again: h2load -c 100 serves each of its
// connections every few milliseconds, unevenly, and at the base grace of
// 10 ms the server rebuilt them for a share of its bursts (231-272 bytes
// allocated per request, more garbage collections). So a connection that
// opens a stream within maxGraceFactor base graces of turning quiet gets
// a grace of twice that quiet spell (at most the bound), and one quiet for
// longer goes back to the base. A connection that never opens a stream
// keeps the base: an idle one's memory is what parking saves. Pure logic:
// the caller passes the time.
type quietGrace struct {
	d     time.Duration // 0: the base
	since time.Time     // the quiet spell whose grace ran out; zero once a stream opened
}

// of returns the grace given the base.
func (g *quietGrace) of(base time.Duration) time.Duration {
	if g.d == 0 {
		return base
	}
	return g.d
}

// ranOut records that the grace of the quiet spell that began at since
// ran out: the connection let its writer and state go. A writer started
// again for control frames alone (a PING's ACK) does not end the spell,
// which runs from the first since until a stream opens.
func (g *quietGrace) ranOut(since time.Time) {
	if g.since.IsZero() {
		g.since = since
	}
}

// pending reports whether the next stream's opening is to be told (opened).
func (g *quietGrace) pending() bool { return !g.since.IsZero() }

// opened records a stream opened at now, after a grace ran out.
func (g *quietGrace) opened(now time.Time, base time.Duration) {
	spell := now.Sub(g.since)
	g.since = time.Time{}
	limit := maxGraceFactor * base
	if spell >= limit {
		g.d = 0
		return
	}
	g.d = min(max(2*spell, base), limit)
}
