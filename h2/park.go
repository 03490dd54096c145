package h2

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Parking a quiet server connection (Server.ServeConnDetached): one with no
// stream, no writer, nothing buffered and nothing said about closing gives
// up its read goroutine, whose stack (~4 KB) is most of what an idle
// connection costs, and its socket waits in one epoll set shared by the
// process; when the socket is readable (or hung up), a new goroutine takes
// the read loop up again. The runtime's poller keeps its own registration
// of the socket; this is a second, one-shot one. TLS connections park too:
// crypto/tls may hold records it has read and not yet returned, which no
// readiness of the socket would announce, so the last look before parking
// reads through it with a deadline in the past (connReader.poll).

// parker is the process's epoll set of parked connections.
type parker struct {
	epfd int
	mu   sync.Mutex
	next uint64
	// conns maps an event's token to its connection. A token, not the fd:
	// a closed socket's number is soon another's.
	conns map[uint64]*Conn
}

var (
	parkOnce sync.Once
	parked   *parker // nil if epoll is unavailable: connections keep their goroutines
)

func theParker() *parker {
	parkOnce.Do(func() {
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		parked = &parker{epfd: fd, conns: map[uint64]*Conn{}}
		go parked.loop()
	})
	return parked
}

// add arms fd's one-shot registration for c. The caller holds c.mu and has
// checked c is not closed, and fd is held open by RawConn.Control.
func (p *parker) add(c *Conn, fd int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.parkToken == 0 {
		p.next++
		c.parkToken = p.next
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT}
	// The token in the event's data (Fd and Pad are its two 32-bit halves).
	ev.Fd, ev.Pad = int32(uint32(c.parkToken)), int32(uint32(c.parkToken>>32))
	op := unix.EPOLL_CTL_MOD
	if !c.parkAdded {
		op = unix.EPOLL_CTL_ADD
	}
	if err := unix.EpollCtl(p.epfd, op, fd, &ev); err != nil {
		return err
	}
	c.parkAdded = true
	p.conns[c.parkToken] = c
	return nil
}

// forget drops c's token: it is no longer parked (a stale event finds no
// connection). Its epoll registration, disarmed or not, goes with the
// socket's close.
func (p *parker) forget(c *Conn) {
	p.mu.Lock()
	delete(p.conns, c.parkToken)
	p.mu.Unlock()
}

func (p *parker) loop() {
	evs := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(p.epfd, evs, -1)
		if err != nil {
			continue // EINTR
		}
		for _, ev := range evs[:n] {
			token := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			p.mu.Lock()
			c := p.conns[token]
			delete(p.conns, token)
			p.mu.Unlock()
			if c != nil {
				c.mu.Lock()
				c.unparkLocked()
				c.mu.Unlock()
			}
		}
	}
}

// The reader's wait for input while busy, as seen by the nudger
// (Conn.waitState): set and checked without the connection's lock, so that
// a busy reader, which runs out of input after nearly every burst of
// requests, pays two atomic operations rather than two lock round trips
// against the writer and handlers.
const (
	waitNone    int32 = iota
	waitWaiting       // the reader waits (or is about to) for input while busy
	waitNudged        // and a nudge set a read deadline in the past to end it
)

// park gives up the read goroutine if the connection is quiet; it reports
// whether it did (the caller then returns at once), and else whether the
// reader is about to wait for input while busy (see nudgeLocked). A busy
// connection (c.busy > 0) is told from a maybe-quiet one without the lock:
// the reader says it waits, then reads busy, while whoever makes the
// connection quiet lowers busy, then looks for a waiting reader (both
// sequentially consistent), so at least one of them sees the other. Only
// maybe-quiet ones take the lock, try a read without waiting (a wake-up's
// input is read, not parked on again) and then register, under the lock
// that starting a writer or closing takes.
func (c *Conn) park() (parked, waiting bool) {
	if !c.detached || c.br.rc == nil || c.br.pre != nil && c.br.pre.Buffered() > 0 || c.br.Buffered() > 0 || c.br.pending != nil || c.hb.active {
		return false, false
	}
	p := theParker()
	if p == nil {
		return false, false
	}
	c.waitState.Store(waitWaiting)
	if c.busy.Load() > 0 {
		return false, true
	}
	c.mu.Lock()
	quiet := c.quietLocked()
	c.mu.Unlock()
	if !quiet {
		return false, true
	}
	if c.br.poll() {
		return false, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.quietLocked() {
		return false, true
	}
	var err error
	if cerr := c.br.rc.Control(func(fd uintptr) { err = p.add(c, int(fd)) }); cerr != nil || err != nil {
		return false, true
	}
	// Quiet under the lock: nobody nudges (nudgeLocked needs a writer or
	// handler ending), so the state is still waitWaiting.
	c.waitState.Store(waitNone)
	c.parkedNow = true
	// The Framer keeps a buffer as large as the largest frame it read
	// (16 KB after a DATA frame), and its last frame: not while parked.
	c.rfr = nil
	return true, false
}

// addBusyLocked adds d to busyN and publishes in busy only its changes
// between zero and not: an atomic add per stream opened and closed, on a
// cache line the reader and the writer take turns at, was ~6 % of shunt
// serve's CPU under h2load at 1 KB (issue 18), and a busy connection's
// count rarely reaches zero.
func (c *Conn) addBusyLocked(d int32) {
	n := c.busyN + d
	if (n > 0) != (c.busyN > 0) {
		c.busy.Store(min(n, 1))
	}
	c.busyN = n
}

// nudgeLocked is called where a connection may turn quiet while its
// reader waits (its writer or last handler ending, after lowering busy): a
// read deadline in the past ends the wait, and the reader goes round to
// park. Safe because the reader waits with nothing buffered and no header
// block begun, where no other read deadline is set, and clears it (unwait)
// under the same lock before it reads again.
func (c *Conn) nudgeLocked() {
	if c.quietLocked() && c.waitState.CompareAndSwap(waitWaiting, waitNudged) {
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

// unwait ends the reader's wait: it undoes a nudge, whose deadline error
// is no error, and reports whether the reader has nothing to read (so it
// goes round to park). Without a nudge it takes no lock.
func (c *Conn) unwait() (nothing bool) {
	if c.waitState.CompareAndSwap(waitWaiting, waitNone) {
		return false
	}
	// Nudged: the nudger set the deadline under c.mu, so it is set by now.
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waitState.Store(waitNone)
	c.nc.SetReadDeadline(time.Time{})
	if errors.Is(c.br.pending, os.ErrDeadlineExceeded) {
		c.br.pending = nil
	}
	return c.br.Buffered() == 0 && c.br.pending == nil
}

// quietLocked: nothing but the peer's next frame can need the reader.
func (c *Conn) quietLocked() bool {
	return !c.closing && !c.closed && !c.goAwaySent && c.goAwayRecv == nil && !c.writerRunning &&
		c.activePeer+c.activeOurs == 0 && c.handlers == 0 && len(c.deferred) == 0
}

// unparkLocked starts a read goroutine for a parked connection.
func (c *Conn) unparkLocked() {
	if !c.parkedNow {
		return
	}
	c.parkedNow = false
	if p := parked; p != nil {
		p.forget(c)
	}
	go func() {
		c.newReadFramer()
		c.runReader()
	}()
}
