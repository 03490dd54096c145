package testbed

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shunt-net/shunt/internal/ctxtime"
	"github.com/shunt-net/shunt/internal/sockctl"
	"github.com/shunt-net/shunt/netem"
	"golang.org/x/sys/unix"
)

// CheckResult is one accuracy figure of the testbed with the configuration
// that produced it.
type CheckResult struct {
	Name        string        `json:"name"`
	Config      string        `json:"config"`
	Measured    float64       `json:"measured"`
	Unit        string        `json:"unit"`
	Target      string        `json:"target"`
	Pass        bool          `json:"pass"`
	Detail      string        `json:"detail,omitempty"`
	EmulatorCPU time.Duration `json:"emulator_cpu_ns"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	Sock        *SockOpts     `json:"sock,omitempty"` // as read back from the sending socket
}

func (r CheckResult) String() string {
	verdict := "FAIL"
	if r.Pass {
		verdict = "ok"
	}
	s := fmt.Sprintf("%-10s %-4s %10.3f %-8s target %s; %s; emulator CPU %v over %v (%.0f%% of one core)",
		r.Name, verdict, r.Measured, r.Unit, r.Target, r.Config,
		r.EmulatorCPU.Round(time.Millisecond), r.Elapsed.Round(time.Millisecond), 100*r.EmulatorCPU.Seconds()/r.Elapsed.Seconds())
	if r.Sock != nil {
		s += fmt.Sprintf("; sender cc=%s mptcp=%v", r.Sock.CC, r.Sock.MPTCP)
	}
	if r.Detail != "" {
		s += "; " + r.Detail
	}
	return s
}

// Check is one named accuracy check; each takes a few seconds.
type Check struct {
	Name string
	Run  func(ctx context.Context) (CheckResult, error)
}

// Checks are the accuracy checks of docs/testbed.md, in the order printed by
// `shunt net check`. Bulk flows use cubic, set per socket.
var Checks = []Check{
	{"rtt", CheckRTT},
	{"rate10", func(ctx context.Context) (CheckResult, error) { return CheckRate(ctx, 10e6) }},
	{"rate100", func(ctx context.Context) (CheckResult, error) { return CheckRate(ctx, 100e6) }},
	{"capacity", CheckCapacity},
	{"loss", CheckLoss},
	{"jitter", CheckJitter},
	{"mptcp", CheckMPTCP},
}

// bulkOpts are the socket options of every check's bulk flow.
var bulkOpts = SockOpts{CC: "cubic"}

// CheckRTT measures the TCP connect time (one RTT) over a link with 25 ms of
// delay each way: the median of 100 connects must be within 1 ms of 50 ms.
func CheckRTT(ctx context.Context) (CheckResult, error) {
	spec := PathSpec{Up: netem.LinkConfig{Delay: 25 * time.Millisecond}, Down: netem.LinkConfig{Delay: 25 * time.Millisecond}}
	r := CheckResult{Name: "rtt", Config: "delay 25ms each way, unlimited rate, median of 100 TCP connects", Unit: "ms", Target: "50 ± 1 ms"}
	n, err := NewSingle(ctx, spec, Options{})
	if err != nil {
		return r, err
	}
	defer n.Close()
	p := n.Paths[0]
	l, err := p.Server.Listen("tcp", netip.AddrPortFrom(p.ServerAddr, 0).String(), bulkOpts)
	if err != nil {
		return r, err
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	start, cpu0 := time.Now(), n.EmulatorCPU()
	rtts := make([]float64, 0, 100)
	d := bulkOpts.Dialer("tcp")
	// One trip into the namespace for all connects, so the time measured is
	// the connect alone.
	err = n.Client.Do(func() error {
		for range 100 {
			dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			t0 := time.Now()
			c, err := d.DialContext(dctx, "tcp", l.Addr().String())
			rtt := time.Since(t0)
			cancel()
			if err != nil {
				return fmt.Errorf("connect to %v: %w", l.Addr(), err)
			}
			c.Close()
			rtts = append(rtts, float64(rtt)/1e6)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	r.Elapsed, r.EmulatorCPU = time.Since(start), n.EmulatorCPU()-cpu0
	slices.Sort(rtts)
	r.Measured = rtts[len(rtts)/2]
	r.Detail = fmt.Sprintf("min %.3f p90 %.3f max %.3f ms", rtts[0], rtts[len(rtts)*9/10], rtts[len(rtts)-1])
	r.Pass = r.Measured >= 49 && r.Measured <= 51
	return r, nil
}

// CheckRate measures what a link of rateBps (10 ms of delay each way, a
// drop-tail queue of two bandwidth-delay products) delivers to the client
// under one cubic flow, after a 1 s warm-up: the median of three seconds of
// IP bytes must be within 1.5% of the rate (95% goodput at the payload
// ceiling); the goodput is reported beside it. (The default 1000-packet queue holds 1.2 s at 10 Mbit/s: cubic
// fills it, and its loss recovery at that RTT makes a 3 s window a lottery.)
func CheckRate(ctx context.Context, rateBps float64) (CheckResult, error) {
	const delay = 10 * time.Millisecond
	bdp := rateBps / 8 * (2 * delay).Seconds() / MTU
	link := netem.LinkConfig{Delay: delay, RateBps: rateBps, Queue: netem.QueueConfig{Packets: int(math.Ceil(2 * bdp))}}
	r := CheckResult{Name: fmt.Sprintf("rate%g", rateBps/1e6), Config: link.String() + " each way, 1 cubic flow: IP bytes delivered, median of three 1 s windows after 1 s", Unit: "Mbit/s",
		Target: fmt.Sprintf(">= %.2f Mbit/s (98.5%%: 95%% goodput at the payload ceiling)", rateBps*0.985/1e6)}
	n, err := NewSingle(ctx, PathSpec{Up: link, Down: link}, Options{})
	if err != nil {
		return r, err
	}
	defer n.Close()
	b, err := download(ctx, n, n.Paths[0], bulkOpts, time.Second, 3*time.Second)
	if err != nil {
		return r, err
	}
	b.fill(&r)
	// The median: a rate the link holds, which one descheduled moment of a
	// shared CI machine does not move; every window is printed.
	med := median(b.wire)
	r.Measured = med / 1e6
	r.Pass = med >= 0.985*rateBps && med <= 1.01*rateBps
	r.Detail = fmt.Sprintf("windows %s Mbit/s; goodput %.3f Mbit/s (%.1f%% of the rate, whose payload ceiling is 96.5%%: 1448 bytes per 1500-byte packet)", formatMbps(b.wire), b.bps/1e6, 100*b.bps/rateBps)
	return r, nil
}

// CheckCapacity measures one cubic flow's goodput over an unshaped link: the
// emulator's own forwarding capacity, with the CPU it costs.
func CheckCapacity(ctx context.Context) (CheckResult, error) {
	r := CheckResult{Name: "capacity", Config: "no delay, unlimited rate, goodput of 1 cubic flow over 3 s after 0.5 s (sender and receiver in this process)", Unit: "Mbit/s", Target: ">= 1000 Mbit/s"}
	n, err := NewSingle(ctx, PathSpec{}, Options{})
	if err != nil {
		return r, err
	}
	defer n.Close()
	b, err := download(ctx, n, n.Paths[0], bulkOpts, 500*time.Millisecond, 3*time.Second)
	if err != nil {
		return r, err
	}
	b.fill(&r)
	r.Pass = b.bps >= 1e9
	return r, nil
}

// CheckLoss sends 25,000 numbered UDP datagrams over a link with 1.5%
// independent loss on the way up, paced at about 9,000 a second, and counts
// what arrives: the loss rate must be within 0.3 percentage points of 1.5%.
func CheckLoss(ctx context.Context) (CheckResult, error) {
	const total = 25000
	up := netem.LinkConfig{Loss: netem.Bernoulli(0.015)}
	r := CheckResult{Name: "loss", Config: fmt.Sprintf("up: %s, seed 1, %d UDP datagrams of 100 bytes", up, total), Unit: "%", Target: "1.5 ± 0.3 %"}
	n, err := NewSingle(ctx, PathSpec{Up: up}, Options{Seed: 1})
	if err != nil {
		return r, err
	}
	defer n.Close()
	p := n.Paths[0]
	pc, c, err := udpPair(ctx, n, p)
	if err != nil {
		return r, err
	}
	defer pc.Close()
	defer c.Close()
	seen := make([]bool, total)
	var got atomic.Int64
	done := receiveNumbered(pc, total, func(i int, _ int64) {
		if !seen[i] {
			seen[i] = true
			got.Add(1)
		}
	})
	start, cpu0 := time.Now(), n.EmulatorCPU()
	msg := make([]byte, 100)
	var maxGap time.Duration
	for i := range total {
		binary.BigEndian.PutUint32(msg, uint32(i))
		if _, err := c.Write(msg); err != nil {
			return r, fmt.Errorf("send datagram %d: %w", i, err)
		}
		if i%10 == 9 {
			// Pace with relative sleeps (about 1 ms per 10 datagrams), so a
			// stall of this goroutine never turns into a catch-up burst that
			// the client's TUN queue (500 packets) would drop.
			t := time.Now()
			if err := ctxtime.Sleep(ctx, time.Millisecond); err != nil {
				return r, err
			}
			maxGap = max(maxGap, time.Since(t))
		}
	}
	ctxtime.Sleep(ctx, 200*time.Millisecond) // let the last datagrams arrive
	r.Elapsed, r.EmulatorCPU = time.Since(start), n.EmulatorCPU()-cpu0
	pc.Close()
	<-done
	st, _ := n.Stats(p.Name, Up)
	r.Measured = 100 * float64(total-got.Load()) / total
	r.Detail = fmt.Sprintf("received %d of %d; the emulator read %d from the client's TUN and wrote %d (link loss %.3f%%); longest pause of the sender %v",
		got.Load(), total, st.Read, st.Written, 100*float64(st.Read-st.Written)/float64(st.Read), maxGap.Round(time.Microsecond))
	r.Pass = r.Measured >= 1.2 && r.Measured <= 1.8 && st.Read == total
	return r, nil
}

// udpPair is a UDP receiver on the path's server and a sender connected to
// it from the client.
func udpPair(ctx context.Context, n *Net, p Path) (net.PacketConn, net.Conn, error) {
	pc, err := p.Server.ListenPacket("udp", netip.AddrPortFrom(p.ServerAddr, 0).String())
	if err != nil {
		return nil, nil, err
	}
	// A receiver descheduled for a moment must not drop: take a large buffer
	// past net.core.rmem_max (root may).
	if err := setRcvBufForce(pc.(*net.UDPConn), 8<<20); err != nil {
		pc.Close()
		return nil, nil, err
	}
	c, err := n.Client.DialContext(ctx, "udp", pc.LocalAddr().String(), SockOpts{})
	if err != nil {
		pc.Close()
		return nil, nil, err
	}
	return pc, c, nil
}

// startOf is the clock receiveNumbered stamps arrivals on.
var startOf = time.Now()

// receiveNumbered reads datagrams numbered by their first 4 bytes (big
// endian) until pc is closed, handing got each one's number below total and
// its arrival time (ns since startOf, read right after the datagram); the
// channel closes when reading has ended.
func receiveNumbered(pc net.PacketConn, total int, got func(i int, at int64)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			k, _, err := pc.ReadFrom(buf)
			at := int64(time.Since(startOf))
			if err != nil {
				return
			}
			if i := int(binary.BigEndian.Uint32(buf)); k >= 4 && i < total {
				got(i, at)
			}
		}
	}()
	return done
}

// CheckJitter sends 400 numbered UDP datagrams 11 ms apart (further apart
// than the jitter's 10 ms range, so each sees the configured distribution)
// over a link with 20 ms of delay and uniform jitter of +/- 5 ms on the way
// up, and measures each one's one-way delay (sender and receiver share this
// process's monotonic clock). Robust figures, since a descheduled sender or
// receiver adds to a few datagrams' delays: the median 20 ms (+0 to +1 ms,
// the TUN hops' cost), the interquartile range that of the uniform
// distribution, 5 ms (+/- 1), none faster than the 15 ms the jitter allows,
// none reordered, none lost.
func CheckJitter(ctx context.Context) (CheckResult, error) {
	const total, gap = 400, 11 * time.Millisecond
	up := netem.LinkConfig{Delay: 20 * time.Millisecond, Jitter: netem.JitterConfig{Dist: netem.JitterUniform, Spread: 5 * time.Millisecond}}
	r := CheckResult{Name: "jitter", Config: fmt.Sprintf("up: %s, seed 1, %d UDP datagrams %v apart", up, total, gap), Unit: "ms median", Target: "20 +0..+1 ms, IQR 5 ± 1 ms, none < 15 ms, in order"}
	n, err := NewSingle(ctx, PathSpec{Up: up}, Options{Seed: 1})
	if err != nil {
		return r, err
	}
	defer n.Close()
	pc, c, err := udpPair(ctx, n, n.Paths[0])
	if err != nil {
		return r, err
	}
	defer pc.Close()
	defer c.Close()
	sent := make([]atomic.Int64, total) // ns since startOf
	var delays []float64                // ms, in arrival order
	reordered, highest := 0, -1
	done := receiveNumbered(pc, total, func(i int, now int64) {
		if i < highest {
			reordered++
		}
		highest = max(highest, i)
		delays = append(delays, float64(now-sent[i].Load())/1e6)
	})
	start, cpu0 := time.Now(), n.EmulatorCPU()
	msg := make([]byte, 100)
	for i := range total {
		binary.BigEndian.PutUint32(msg, uint32(i))
		sent[i].Store(int64(time.Since(startOf))) // before the write: the receiver reads it once the datagram crossed
		if _, err := c.Write(msg); err != nil {
			return r, fmt.Errorf("send datagram %d: %w", i, err)
		}
		if err := ctxtime.Sleep(ctx, gap); err != nil {
			return r, err
		}
	}
	ctxtime.Sleep(ctx, 100*time.Millisecond) // let the last datagrams arrive
	r.Elapsed, r.EmulatorCPU = time.Since(start), n.EmulatorCPU()-cpu0
	pc.Close()
	<-done
	if len(delays) < total {
		r.Detail = fmt.Sprintf("received %d of %d", len(delays), total)
		return r, nil
	}
	var sum float64
	for _, d := range delays {
		sum += d
	}
	s := slices.Sorted(slices.Values(delays))
	q1, q3 := s[total/4], s[total*3/4]
	r.Measured = s[total/2]
	r.Detail = fmt.Sprintf("min %.3f p5 %.3f p25 %.3f p75 %.3f p95 %.3f max %.3f ms (configured 15, 15.5, 17.5, 22.5, 24.5, 25), mean %.3f, %d reordered",
		s[0], s[total/20], q1, q3, s[total*19/20], s[total-1], sum/total, reordered)
	r.Pass = r.Measured >= 20 && r.Measured <= 21 && math.Abs(q3-q1-5) <= 1 && s[0] >= 15 && reordered == 0
	return r, nil
}

// CheckMPTCP measures a kernel MPTCP download over TwoPath with wifi at
// 10 Mbit/s and cell at 5 Mbit/s (10 ms of delay each way on both): at least
// 13 Mbit/s, with two subflows.
func CheckMPTCP(ctx context.Context) (CheckResult, error) {
	wifi := netem.LinkConfig{Delay: 10 * time.Millisecond, RateBps: 10e6}
	cell := netem.LinkConfig{Delay: 10 * time.Millisecond, RateBps: 5e6}
	r := CheckResult{Name: "mptcp", Config: fmt.Sprintf("wifi %s, cell %s, each way; 1 MPTCP cubic download over 3 s after 1.5 s", wifi, cell), Unit: "Mbit/s", Target: ">= 13 Mbit/s"}
	n, err := NewTwoPath(ctx, PathSpec{Up: wifi, Down: wifi}, PathSpec{Up: cell, Down: cell}, Options{})
	if err != nil {
		return r, err
	}
	defer n.Close()
	o := bulkOpts
	o.MPTCP = true
	o.Source = n.Paths[0].ClientAddr
	b, err := download(ctx, n, n.Paths[0], o, 1500*time.Millisecond, 3*time.Second)
	if err != nil {
		return r, err
	}
	b.fill(&r)
	w, _ := n.Stats("wifi", Down)
	c, _ := n.Stats("cell", Down)
	r.Detail = fmt.Sprintf("%d subflows; bytes down wifi %d, cell %d", b.subflows, w.WrittenBytes, c.WrittenBytes)
	r.Pass = b.bps >= 13e6 && b.subflows >= 2
	return r, nil
}

type bulkResult struct {
	bps      float64
	wire     []float64 // IP bytes the link delivered in each second of the window, bit/s
	window   time.Duration
	cpu      time.Duration
	sock     SockOpts
	subflows int
}

func (b bulkResult) fill(r *CheckResult) {
	r.Measured, r.Elapsed, r.EmulatorCPU, r.Sock = b.bps/1e6, b.window, b.cpu, &b.sock
}

// download runs one bulk transfer from the path's server to the client: the
// client dials with o, the server sends with o (inherited from its listener)
// until the client hangs up. Goodput is what the client received in dur after
// warm.
func download(ctx context.Context, n *Net, p Path, o SockOpts, warm, dur time.Duration) (bulkResult, error) {
	var res bulkResult
	lo := o
	lo.Source = netip.Addr{}
	l, err := p.Server.Listen("tcp", netip.AddrPortFrom(p.ServerAddr, 0).String(), lo)
	if err != nil {
		return res, err
	}
	defer l.Close()
	type accepted struct {
		c    net.Conn
		sock SockOpts
		err  error
	}
	acc := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			acc <- accepted{err: fmt.Errorf("accept: %w", err)}
			return
		}
		s, err := ReadSockOpts(c)
		acc <- accepted{c, s, err}
		// Writes until the connection is closed below.
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	c, err := n.Client.DialContext(dctx, "tcp", l.Addr().String(), o)
	cancel()
	if err != nil {
		return res, err
	}
	defer c.Close()
	var s accepted
	select {
	case s = <-acc:
	case <-time.After(5 * time.Second):
		return res, fmt.Errorf("download from %v: no connection accepted", l.Addr())
	}
	if s.err != nil {
		return res, s.err
	}
	defer s.c.Close()
	var got atomic.Int64
	go func() {
		buf := make([]byte, 64<<10)
		for {
			k, err := c.Read(buf)
			got.Add(int64(k))
			if err != nil {
				return
			}
		}
	}()
	if err := ctxtime.Sleep(ctx, warm); err != nil {
		return res, err
	}
	// What the link delivered to the client's side, per second: the
	// emulator's own rate, free of the receiving goroutine's read jitter,
	// and one stall of a busy machine's scheduler shows as one slow window.
	wire := func() uint64 { st, _ := n.Stats(p.Name, Down); return st.WrittenBytes }
	b0, t0, cpu0 := got.Load(), time.Now(), n.EmulatorCPU()
	ww, tw := wire(), t0
	for left := dur; left > 0; left -= time.Second {
		if err := ctxtime.Sleep(ctx, min(left, time.Second)); err != nil {
			return res, err
		}
		w, t := wire(), time.Now()
		res.wire = append(res.wire, float64(w-ww)*8/t.Sub(tw).Seconds())
		ww, tw = w, t
	}
	b1, t1, cpu1 := got.Load(), tw, n.EmulatorCPU()
	if o.MPTCP {
		res.subflows = mptcpSubflows(c)
	}
	res.window, res.cpu, res.sock = t1.Sub(t0), cpu1-cpu0, s.sock
	res.bps = float64(b1-b0) * 8 / res.window.Seconds()
	if b1 == 0 {
		return res, fmt.Errorf("download from %v: nothing received: %w", l.Addr(), io.ErrUnexpectedEOF)
	}
	return res, nil
}

// mptcpSubflows is the number of subflows of an MPTCP socket: the initial one
// plus mptcpi_subflows (the first byte of struct mptcp_info, which counts the
// additional ones); 0 if the socket is plain TCP or the kernel says no.
func mptcpSubflows(c net.Conn) int {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	const solMPTCP, mptcpInfo = 284, 1
	var info [64]byte
	n := 0
	sockctl.ConnControl(tc, func(fd int) error {
		l := uint32(len(info))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), solMPTCP, mptcpInfo, uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&l)), 0)
		if e == 0 && l > 0 {
			n = 1 + int(info[0])
		}
		return nil
	})
	return n
}

func setRcvBufForce(c *net.UDPConn, n int) error {
	return sockctl.ConnControl(c, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n); err != nil {
			return fmt.Errorf("set SO_RCVBUFFORCE %d: %w", n, err)
		}
		return nil
	})
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func formatMbps(bps []float64) string {
	f := make([]string, len(bps))
	for i, b := range bps {
		f[i] = fmt.Sprintf("%.3f", b/1e6)
	}
	return strings.Join(f, " ")
}
