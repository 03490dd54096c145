package h2

import (
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A short send queue (Config.KernelSendQueue false, the default).
//
// Left alone, Linux lets a socket's unsent bytes grow to several MB (the
// send buffer autotunes up to tcp_wmem's maximum), so a response queued
// behind a bulk download waits for all of it however the scheduler orders
// the frames: about 0.5 s at 10 Mbit/s. The engine keeps the unsent part of
// the kernel's queue to a few milliseconds of sending instead, so the
// scheduler, not the socket, decides what goes next; the kernel still holds
// the congestion window's worth in flight (about one round trip).
//
// How: TCP_NOTSENT_LOWAT is set to mark = the connection's rate
// (cwnd*mss/srtt from TCP_INFO) times sendQueueTime, at least a floor and at
// most maxSendMark. The floor is there for a writer the runtime wakes late:
// what is unsent when it is woken (half the mark) and what waits in the
// bottleneck's queue (srtt - min_rtt of sending) must keep the link busy
// for sendWakeCover. Where the bottleneck's queue covers it, as on a
// drop-tail link filled by cubic, the floor is minSendMark, a few
// segments, as little as h2o keeps; where the queue is short it grows up to
// 2 x sendWakeCover of sending. Write then
// stops taking bytes once mark of them are unsent. Where the mark is at
// most one write batch (a slow link), the writer also waits until the
// kernel would take more (poll POLLOUT: unsent bytes under half the mark)
// before it lets the scheduler choose the next batch, and makes that batch
// (and its frames) no larger than half the mark plus what the congestion
// window lets go at once, so a response that arrives meanwhile waits behind
// at most a mark of unsent bytes (at 10 Mbit/s, 8 KB when the bottleneck's
// queue holds 13 ms or more, up to 32 KB, 26 ms, when it is empty). On a
// fast link (loopback) the mark is large and nothing waits; the cost there
// is one TCP_INFO read per refresh.
//
// h2o 2.2.5 does much the same by default on connections whose RTT is at
// least 50 ms: TCP_NOTSENT_LOWAT 1 and writes of (cwnd - unacked + 2)
// segments, sized from TCP_INFO once (measured on the holb link: 17,376-byte
// writes, at most 17,376 unsent bytes while cwnd was 40-155 segments).

const (
	sendQueueTime = 2 * time.Millisecond
	// sendWakeCover is how late a writer may be woken without the link
	// running dry (a busy 2-core machine delays the runtime's poller by 10
	// ms and more). A fixed 32 KB floor, 13 ms of sending at 10 Mbit/s at
	// the wakeup, kept bulk throughput under load; a 16 KB one (6.5 ms) did
	// not: 10 MB at 10 Mbit/s took 10.3 s instead of 8.5.
	sendWakeCover = 13 * time.Millisecond
	// minSendMark is the floor where the bottleneck's queue covers a late
	// wakeup: a few segments, so that paced writes stay that far ahead.
	minSendMark = 8 << 10
	maxSendMark = 4 << 20 // tcp_wmem's default maximum: no limit in effect
	// How often TCP_INFO is read again: a few round trips, within bounds.
	minSendRefresh = 10 * time.Millisecond
	maxSendRefresh = 200 * time.Millisecond
)

// sendMark is the TCP_NOTSENT_LOWAT for a connection whose congestion window
// holds cwndBytes, whose smoothed RTT is srtt and least RTT minRTT:
// sendQueueTime of sending at cwnd/srtt, within [floor, maxSendMark], where
// the floor makes half the mark plus the bottleneck's queue (srtt - minRTT)
// last sendWakeCover at that rate, and is at least minSendMark.
func sendMark(cwndBytes int, srtt, minRTT time.Duration) int {
	if srtt <= 0 {
		return maxSendMark
	}
	rate := float64(cwndBytes) / srtt.Seconds() // bytes a second
	queued := max(srtt-minRTT, 0)
	floor := max(2*rate*(sendWakeCover-queued).Seconds(), minSendMark)
	return int(min(max(rate*sendQueueTime.Seconds(), floor), maxSendMark))
}

// sendRefresh is how long a mark computed at srtt holds.
func sendRefresh(srtt time.Duration) time.Duration {
	return min(max(4*srtt, minSendRefresh), maxSendRefresh)
}

// sendQueue is the writer's handle on its TCP socket. Only the write
// goroutine uses it.
type sendQueue struct {
	rc     syscall.RawConn
	markOf func(window int, srtt, minRTT time.Duration) int // sendMark, or a test's
	mark   int                                              // TCP_NOTSENT_LOWAT in force; 0 before the first refresh
	next   time.Time                                        // when to read TCP_INFO again
	pfd    [1]unix.PollFd
}

// newSendQueue returns the send queue of nc's TCP socket, or nil when nc
// is not TCP (in-memory pipes, other transports) or when TCP_NOTSENT_LOWAT
// was already set on it (shunt serve --notsent-lowat): a fixed mark chosen
// by the application stays as it is.
func newSendQueue(nc net.Conn, markOf func(int, time.Duration, time.Duration) int) *sendQueue {
	for {
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = u.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	set := true
	if err := rc.Control(func(fd uintptr) {
		v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
		// Unset reads as 0 or as the sysctl's 4294967295.
		set = err != nil || v != 0 && uint32(v) != 1<<32-1
	}); err != nil || set {
		return nil
	}
	if markOf == nil {
		markOf = sendMark
	}
	return &sendQueue{rc: rc, markOf: markOf}
}

// paced refreshes the mark when due and reports whether the writer should
// wait for the socket before each batch.
func (q *sendQueue) paced(now time.Time) bool {
	if !now.Before(q.next) {
		q.info(now)
	}
	return q.mark > 0 && q.mark <= writeBatchBudget
}

// budget is the size of a paced batch, taken once the socket is writable
// (fewer than mark/2 bytes unsent): half the mark, plus what the congestion
// window lets the kernel send at once, which is not queued behind anything.
// The second part, as h2o's writes of cwnd-unacked segments, refills the
// window at once after a writer that woke late, so a late wakeup costs
// little throughput: the bottleneck's queue covers it.
func (q *sendQueue) budget(now time.Time) int {
	return pacedBudget(q.mark, q.info(now))
}

func pacedBudget(mark, room int) int { return min(mark/2+room, writeBatchBudget) }

// info reads TCP_INFO, sets TCP_NOTSENT_LOWAT to the mark it gives, and
// returns the congestion window's free bytes. A socket that refuses either
// keeps what it had. A paced writer calls it for every batch, since the
// bottleneck's queue, which the mark's floor depends on, drains within a
// round trip of a loss; others when a refresh is due (paced).
func (q *sendQueue) info(now time.Time) (room int) {
	q.rc.Control(func(fd uintptr) {
		ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil || ti.Snd_mss == 0 {
			q.next = now.Add(maxSendRefresh)
			return
		}
		mss := int(ti.Snd_mss)
		srtt := time.Duration(ti.Rtt) * time.Microsecond
		q.next = now.Add(sendRefresh(srtt))
		q.setMark(fd, q.markOf(int(ti.Snd_cwnd)*mss, srtt, time.Duration(ti.Min_rtt)*time.Microsecond))
		inFlight := int(ti.Unacked) - int(ti.Sacked) - int(ti.Lost) + int(ti.Retrans)
		room = max(int(ti.Snd_cwnd)-inFlight, 0) * mss
	})
	return room
}

func (q *sendQueue) setMark(fd uintptr, m int) {
	if m != q.mark && unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, m) == nil {
		q.mark = m
	}
}

// waitWritable blocks until the kernel would take more bytes: poll's
// POLLOUT, which with TCP_NOTSENT_LOWAT set means fewer than mark/2 unsent
// bytes. A poll that finds the socket full also arms the kernel's wakeup
// (SOCK_NOSPACE), so the runtime's poller is told when it drains.
func (q *sendQueue) waitWritable() error {
	var perr error
	err := q.rc.Write(func(fd uintptr) bool {
		q.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
		for {
			n, err := unix.Poll(q.pfd[:], 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				perr = err
				return true
			}
			// POLLERR or POLLHUP too: the next write reports them.
			return n > 0
		}
	})
	if err != nil {
		return err
	}
	return perr
}
