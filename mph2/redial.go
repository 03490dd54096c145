package mph2

import (
	"context"
	"time"

	"github.com/shunt-net/shunt/multipath"
)

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

// A suspended path is dialed afresh while it stays suspended. Its own
// connection comes back only when a retransmission gets through, and by
// the suspension (max(3 s, 4 x its RTT) of silence) TCP's timer has backed
// off to seconds: on the testbed's lte (h65, nginx's socket every 0.5 s)
// the RTO went 0.67, 1.3, 2.7, 5.3 s during a 5 s gap, the connection
// moved again 2 s after the link returned, and after a 10 s gap the
// timers stood at 5-14 s; in 9 of 160 MP-H2 runs it stayed stuck after
// its link was back (an undone timeout, the receive window full behind 6
// lost segments) until the download ended. A new connection's SYN goes
// at once: a dial each freshEvery finds the link within that of its
// return, whatever the old timer says.
const (
	// freshEvery paces the fresh dials: Linux's initial SYN timeout
	// (TCP_TIMEOUT_INIT, 1 s), after which a dial into a dead link would
	// send its next SYN anyway, but backing off.
	freshEvery = time.Second
	// freshRTTs bounds a fresh dial, at least freshEvery: the TCP and TLS
	// handshakes take 2-3 of the path's round trips.
	freshRTTs = 4
)

// refresh dials suspended path p afresh, one dial at a time, a new one
// each freshEvery, until one connects (evFresh) or freshStop[p] is
// called.
func (d *download) refresh(now time.Time, p int) {
	if d.freshStop[p] != nil || d.conns[p].h2 == nil {
		return
	}
	ctx, stop := context.WithCancel(d.ctx)
	d.freshStop[p] = stop
	old := d.conns[p]
	timeout := max(freshEvery, freshRTTs*d.s.Estimate(now, multipath.PathID(p)).RTT)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			next := time.Now().Add(freshEvery)
			pc := d.c.dialFresh(ctx, p, d.u, timeout)
			<-pc.ready // within timeout, or as ctx ends
			if pc.err == nil {
				if ctx.Err() != nil || !d.send(event{kind: evFresh, path: p, pc: pc, old: old}) {
					pc.close()
				}
				return
			}
			t := time.NewTimer(time.Until(next))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}()
}

// refreshed puts suspended path p on its fresh connection pc in place of
// old, and re-admits it as a redialed path (its ranges, if it kept any,
// asked again with If-Range). A path no longer suspended on old (it came
// back by itself, or was lost) closes pc.
func (d *download) refreshed(now time.Time, p int, pc, old *pathConn) error {
	if d.suspendedAt[p].IsZero() || d.conns[p] != old || d.down[p] || d.redialing[p] {
		pc.close()
		return nil
	}
	d.c.adopt(p, d.u, old, pc)
	if err := d.unplug(now, p); err != nil {
		return err
	}
	return d.redialed(now, p, pc)
}

// endSuspension ends path p's suspension, if it is suspended: its time is
// counted, and the fresh dials stop.
func (d *download) endSuspension(now time.Time, p int) {
	if stop := d.freshStop[p]; stop != nil {
		stop()
		d.freshStop[p] = nil
	}
	if !d.suspendedAt[p].IsZero() {
		d.suspended[p] += now.Sub(d.suspendedAt[p])
		d.suspendedAt[p] = time.Time{}
	}
}
