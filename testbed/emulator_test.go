package testbed

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/shunt-net/shunt/netem"
	"golang.org/x/sys/unix"
)

// seqpacketPair stands in for a pair of TUN devices: like TUN, a SEQPACKET
// socket keeps packet boundaries. in is what the emulator reads, out what it
// writes; the test writes to feed and reads from sink.
func seqpacketPair(t *testing.T) (in, feed, out, sink int) {
	t.Helper()
	a, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, fd := range append(a[:], b[:]...) {
			unix.Close(fd)
		}
	})
	return a[0], a[1], b[0], b[1]
}

// receive reads n packets from fd, waiting at most timeout in total, and
// returns their sequence numbers.
func receive(t *testing.T, fd, n int, timeout time.Duration) []uint32 {
	t.Helper()
	var got []uint32
	buf := make([]byte, bufSize)
	deadline := time.Now().Add(timeout)
	for len(got) < n {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("received %d of %d packets within %v", len(got), n, timeout)
		}
		ts := unix.NsecToTimespec(int64(left))
		if _, err := unix.Ppoll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, &ts, nil); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		for {
			k, err := unix.Read(fd, buf)
			if err != nil {
				break
			}
			got = append(got, binary.BigEndian.Uint32(buf[:k]))
		}
	}
	return got
}

func send(t *testing.T, fd int, from, n int) {
	t.Helper()
	msg := make([]byte, 100)
	for i := from; i < from+n; i++ {
		binary.BigEndian.PutUint32(msg, uint32(i))
		if _, err := unix.Write(fd, msg); err != nil {
			t.Fatalf("feed packet %d: %v", i, err)
		}
	}
}

func startEmulator(t *testing.T, in, out int, cfg netem.LinkConfig) (*emulator, *direction) {
	t.Helper()
	e, err := newEmulator()
	if err != nil {
		t.Fatal(err)
	}
	l, err := realLink(cfg, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.add("test up", in, out, l); err != nil {
		t.Fatal(err)
	}
	e.start()
	t.Cleanup(func() {
		if err := e.close(); err != nil {
			t.Error(err)
		}
	})
	return e, e.dirs[0]
}

func inOrder(t *testing.T, got []uint32) {
	t.Helper()
	for i, s := range got {
		if s != uint32(i) {
			t.Fatalf("packet %d carries sequence %d: lost or reordered", i, s)
		}
	}
}

func TestEmulatorForwardsInOrder(t *testing.T) {
	in, feed, out, sink := seqpacketPair(t)
	e, d := startEmulator(t, in, out, netem.LinkConfig{Delay: time.Millisecond})
	// Batches smaller than the socket buffer, so the feed never blocks.
	const batches, per = 20, 50
	var got []uint32
	for b := range batches {
		send(t, feed, b*per, per)
		got = append(got, receive(t, sink, per, 5*time.Second)...)
	}
	inOrder(t, got)
	// The emulator counts a packet after its write returns, which may be
	// after the sink has read it.
	s := d.statsNow()
	for deadline := time.Now().Add(5 * time.Second); s.Written < batches*per && time.Now().Before(deadline); s = d.statsNow() {
		time.Sleep(time.Millisecond)
	}
	if s.Read != batches*per || s.Written != batches*per || s.WriteErrors != 0 {
		t.Errorf("stats %+v, want %d read and written", s, batches*per)
	}
	if e.cpu.total() <= 0 {
		t.Errorf("emulator CPU %v, want > 0", e.cpu.total())
	}
}

// TestEmulatorLossIsSeeded checks that the packets the emulator delivers are
// exactly those a link with the same seed keeps when fed offline.
func TestEmulatorLossIsSeeded(t *testing.T) {
	cfg := netem.LinkConfig{Loss: netem.Bernoulli(0.1)}
	const n = 200
	offline, err := netem.NewLink(cfg, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		msg := make([]byte, 100)
		binary.BigEndian.PutUint32(msg, uint32(i))
		offline.Enqueue(&netem.Packet{Data: msg}, int64(i))
	}
	var want []uint32
	for _, p := range offline.Dequeue(n, nil) {
		want = append(want, binary.BigEndian.Uint32(p.Data))
	}
	if len(want) == n {
		t.Fatal("offline link lost nothing at 10% loss")
	}
	in, feed, out, sink := seqpacketPair(t)
	startEmulator(t, in, out, cfg)
	send(t, feed, 0, n)
	got := receive(t, sink, len(want), 5*time.Second)
	if !slices.Equal(got, want) {
		t.Errorf("emulator delivered %v,\nan offline link with the same seed keeps %v", got, want)
	}
}

// TestSetLinkDrainsOldLink checks that packets inside a link replaced by
// setLink are still delivered, and that later packets take the new link.
func TestSetLinkDrainsOldLink(t *testing.T) {
	in, feed, out, sink := seqpacketPair(t)
	_, d := startEmulator(t, in, out, netem.LinkConfig{Delay: 300 * time.Millisecond})
	send(t, feed, 0, 10)
	deadline := time.Now().Add(5 * time.Second)
	for d.statsNow().Read < 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	l, err := realLink(netem.LinkConfig{Delay: 300 * time.Millisecond}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.setLink(l)
	send(t, feed, 10, 10)
	inOrder(t, receive(t, sink, 20, 5*time.Second))
	d.mu.Lock()
	left := len(d.draining)
	d.mu.Unlock()
	if left != 0 {
		t.Errorf("%d drained links kept after delivering everything", left)
	}
}

func TestEmulatorCloseStopsIdleThreads(t *testing.T) {
	in, _, out, _ := seqpacketPair(t)
	e, err := newEmulator()
	if err != nil {
		t.Fatal(err)
	}
	l, err := realLink(netem.LinkConfig{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.add("idle up", in, out, l); err != nil {
		t.Fatal(err)
	}
	e.start()
	done := make(chan error, 1)
	go func() { done <- e.close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("close did not stop the idle reader and sender within 5 s")
	}
}
