package testbed

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shunt-net/shunt/netem"
	"golang.org/x/sys/unix"
)

// linkModel is what the emulator needs of one link direction; *netem.Link is
// the real one, tests may plug in others.
type linkModel interface {
	Enqueue(p *netem.Packet, now int64)
	Dequeue(now int64, out []*netem.Packet) []*netem.Packet
	NextEvent() int64
}

// epoch anchors monoNow; time.Since reads the vDSO monotonic clock, cheaper
// than a clock_gettime syscall per packet.
var epoch = time.Now()

// monoNow is the emulator's clock in ns, the time base given to netem.
func monoNow() int64 { return int64(time.Since(epoch)) }

const (
	// Long waits overshoot more on this VM (see docs/testbed.md), so a wait
	// longer than longWait first sleeps to guard before the deadline.
	longWait = 500 * time.Microsecond
	guard    = 250 * time.Microsecond
)

// niceness is the emulator threads' nice value: the largest share of the CPU
// and the earliest wake-ups the fair scheduler gives. Not a real-time policy:
// a SCHED_FIFO thread back from a syscall while the garbage collector scans
// its goroutine's stack spins in the runtime until the scan ends, and if the
// scanning thread shares its CPU the spin starves it until the kernel's
// real-time throttling lets it run, 0.95 s later, with the process (client,
// server, the other links) stalled that long (docs/testbed.md).
const niceness = -20

var packetPool = sync.Pool{New: func() any { return &netem.Packet{Data: make([]byte, bufSize)} }}

// recycle returns a packet the emulator is done with to the pool.
func recycle(p *netem.Packet) {
	p.Data = p.Data[:cap(p.Data)]
	packetPool.Put(p)
}

// direction moves packets read from one TUN fd through a link to another.
// A reader thread enqueues, a sender thread sleeps until the link's next
// event and writes what is due.
type direction struct {
	name    string // "wifi up", for errors
	in, out int    // TUN fds
	wake    int    // eventfd: the reader tells a sleeping sender to look again

	mu       sync.Mutex
	link     linkModel
	draining []linkModel // replaced by SetLink, still holding packets
	sleeping bool        // sender is waiting until `until` (-1: until woken)
	until    int64

	nRead, written, writtenBytes, writeErrors atomic.Uint64
	watch                                     atomic.Pointer[deliveryWatch]
}

// deliveryWatch records every packet written to the receiving side: when
// the far end got it, to the emulator's clock, and its IP length.
type deliveryWatch struct {
	mu    sync.Mutex
	at    []int64 // monoNow
	bytes []int32
}

func (w *deliveryWatch) add(now int64, n int) {
	w.mu.Lock()
	w.at = append(w.at, now)
	w.bytes = append(w.bytes, int32(n))
	w.mu.Unlock()
}

// DirStats counts the packets of one direction at the TUN devices: read from
// the sending side, written to the receiving side. What the link dropped is
// in between (and in its log).
type DirStats struct {
	Read, Written, WrittenBytes, WriteErrors uint64
}

func (d *direction) statsNow() DirStats {
	return DirStats{d.nRead.Load(), d.written.Load(), d.writtenBytes.Load(), d.writeErrors.Load()}
}

func (d *direction) nextLocked() int64 {
	next := d.link.NextEvent()
	for _, l := range d.draining {
		if t := l.NextEvent(); t >= 0 && (next < 0 || t < next) {
			next = t
		}
	}
	return next
}

func (d *direction) dequeueLocked(now int64, out []*netem.Packet) []*netem.Packet {
	keep := d.draining[:0]
	for _, l := range d.draining {
		out = l.Dequeue(now, out)
		if l.NextEvent() >= 0 {
			keep = append(keep, l)
		}
	}
	clear(d.draining[len(keep):])
	d.draining = keep
	return d.link.Dequeue(now, out)
}

// setLink swaps in a new link. Packets already inside the old one leave
// according to the old configuration; new arrivals take the new one.
func (d *direction) setLink(l linkModel) {
	d.mu.Lock()
	if d.link.NextEvent() >= 0 {
		d.draining = append(d.draining, d.link)
	}
	d.link = l
	wake := d.sleeping
	d.sleeping = false
	d.mu.Unlock()
	if wake {
		signal(d.wake)
	}
}

// signal adds one to an eventfd.
func signal(fd int) {
	one := uint64(1)
	unix.Write(fd, (*[8]byte)(unsafe.Pointer(&one))[:])
}

func (d *direction) read(e *emulator) error {
	fds := []unix.PollFd{{Fd: int32(d.in), Events: unix.POLLIN}, {Fd: int32(e.stop), Events: unix.POLLIN}}
	var p *netem.Packet
	for !e.stopped.Load() {
		if p == nil {
			p = packetPool.Get().(*netem.Packet)
		}
		n, err := unix.Read(d.in, p.Data[:cap(p.Data)])
		switch err {
		case nil:
		case unix.EAGAIN:
			if _, err := unix.Ppoll(fds, nil, nil); err != nil && err != unix.EINTR {
				return fmt.Errorf("%s: poll: %w", d.name, err)
			}
			continue
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("%s: read tun: %w", d.name, err)
		}
		d.nRead.Add(1)
		p.Data, p.Flow = p.Data[:n], netem.FlowHash(p.Data[:n])
		d.mu.Lock()
		// Read the clock under the lock: the link needs nondecreasing times.
		now := monoNow()
		p.Arrival = now
		d.link.Enqueue(p, now)
		next := d.nextLocked()
		wake := d.sleeping && next >= 0 && (d.until < 0 || next < d.until)
		if wake {
			d.sleeping = false
		}
		d.mu.Unlock()
		p = nil
		if wake {
			signal(d.wake)
		}
	}
	return nil
}

func (d *direction) send(e *emulator) error {
	fds := []unix.PollFd{{Fd: int32(d.wake), Events: unix.POLLIN}, {Fd: int32(e.stop), Events: unix.POLLIN}}
	var out []*netem.Packet
	var buf [8]byte
	for !e.stopped.Load() {
		d.mu.Lock()
		now := monoNow()
		out = d.dequeueLocked(now, out[:0])
		next := d.nextLocked()
		d.sleeping, d.until = len(out) == 0, next
		d.mu.Unlock()
		if len(out) > 0 {
			for i, p := range out {
				if _, err := unix.Write(d.out, p.Data); err != nil {
					d.writeErrors.Add(1)
				} else {
					d.written.Add(1)
					d.writtenBytes.Add(uint64(len(p.Data)))
					if w := d.watch.Load(); w != nil {
						w.add(now, len(p.Data))
					}
				}
				recycle(p)
				out[i] = nil
			}
			continue
		}
		var ts *unix.Timespec
		if next >= 0 {
			wait := max(next-now, 0)
			if wait > int64(longWait) {
				wait -= int64(guard)
			}
			t := unix.NsecToTimespec(wait)
			ts = &t
		}
		if _, err := unix.Ppoll(fds, ts, nil); err != nil && err != unix.EINTR {
			return fmt.Errorf("%s: poll: %w", d.name, err)
		}
		if fds[0].Revents != 0 {
			unix.Read(d.wake, buf[:])
		}
	}
	return nil
}

// emulator runs the directions of a topology, each on two locked OS threads.
type emulator struct {
	stop    int // eventfd, readable once stopping
	stopped atomic.Bool
	wg      sync.WaitGroup
	cpu     cpuMeter
	dirs    []*direction

	boosted atomic.Int32 // threads running at nice niceness

	errMu sync.Mutex
	errs  []error
}

func newEmulator() (*emulator, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &emulator{stop: fd}, nil
}

// add registers a direction; the emulator owns (and closes) nothing of it but
// its wake eventfd.
func (e *emulator) add(name string, in, out int, l linkModel) error {
	wfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("eventfd for %s: %w", name, err)
	}
	e.dirs = append(e.dirs, &direction{name: name, in: in, out: out, wake: wfd, link: l})
	return nil
}

func (e *emulator) start() {
	for _, d := range e.dirs {
		e.thread(d.read)
		e.thread(d.send)
	}
}

// thread runs f on its own OS thread with 1 ns timer slack, so the sender's
// waits end within tens of µs of the deadline instead of 50 µs+ later, and
// at nice niceness.
func (e *emulator) thread(f func(*emulator) error) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		// Never unlocked: the thread exits with the goroutine, so its timer
		// slack does not leak into the runtime's thread pool.
		runtime.LockOSThread()
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		// On a busy machine a thread at nice 0 waits for a CPU for
		// milliseconds, which the link would add to its delay. Best effort
		// (it needs CAP_SYS_NICE): without it the emulator still works, less
		// precisely.
		if unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: niceness}, 0) == nil {
			e.boosted.Add(1)
		}
		tid := e.cpu.enter()
		defer e.cpu.leave(tid)
		if err := f(e); err != nil {
			e.errMu.Lock()
			e.errs = append(e.errs, err)
			e.errMu.Unlock()
		}
	}()
}

// close stops all threads and returns the errors they hit.
func (e *emulator) close() error {
	e.stopped.Store(true)
	signal(e.stop)
	e.wg.Wait()
	unix.Close(e.stop)
	for _, d := range e.dirs {
		unix.Close(d.wake)
	}
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return errors.Join(e.errs...)
}

// cpuMeter sums the CPU time of the emulator's threads, live and exited.
type cpuMeter struct {
	mu   sync.Mutex
	done time.Duration
	live map[int]bool
}

func (m *cpuMeter) enter() int {
	tid := unix.Gettid()
	m.mu.Lock()
	if m.live == nil {
		m.live = map[int]bool{}
	}
	m.live[tid] = true
	m.mu.Unlock()
	return tid
}

func (m *cpuMeter) leave(tid int) {
	m.mu.Lock()
	m.done += threadCPU(unix.CLOCK_THREAD_CPUTIME_ID)
	delete(m.live, tid)
	m.mu.Unlock()
}

func (m *cpuMeter) total() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.done
	for tid := range m.live {
		// The kernel's per-thread CPU clock id: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
		t += threadCPU(int32(^tid<<3 | 6))
	}
	return t
}

func threadCPU(clock int32) time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(clock, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
