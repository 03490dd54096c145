package server

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shunt-net/shunt/h2"
	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/internal/sockctl"
)

// SteerPath names the connections that arrive over one path: those from
// its client addresses.
type SteerPath struct {
	Name   string
	Client netip.Prefix
	Cost   float64 // per byte (only the order matters)
}

// Steerer is issue 19's server-side steering, the talk's design: the
// server holds the hints (the response's class and size, each
// connection's RTT and send-buffer fill) and places every response of a
// client that has connections on several paths (SMig, smig.Server.Steer)
// by a hints.Policy, the same decisions as the client-side scheduler
// (mph2.Hinted). A server sends one copy of a response, so a decision's
// redundant copy and tail threshold are not acted on.
//
// A path of Paths on which the client has no connection yet is given to
// the policy as connecting, with an RTT no connection can lose to
// (unreachable): a preference for the fastest or the first to finish never
// waits for it, one for the cheapest (or for it by name) does, and Steer
// then returns nil, so SMig holds the body until the connection binds
// (smig.Server.SteerWait).
type Steerer struct {
	Policy *hints.Policy
	Paths  []SteerPath
	// Classify gives a response its hint; nil: hints.FromResponse.
	Classify func(r *http.Request, header http.Header) hints.Hint
	// now and tcp are the clock and the socket reader (tests fake them).
	now func() time.Time
	tcp func(steerConn) tcpState

	mu sync.Mutex
	// sent is the body bytes placed on each connection, for budgets;
	// placed, the connection a response was placed on while its client had
	// one connection (it may be placed again once a second one binds).
	sent   map[steerConn]int64
	placed map[*http.Request]steerConn
}

// steerConn is what a Steerer uses of an *h2.Conn.
type steerConn interface {
	NetConn() net.Conn
	Done() <-chan struct{}
}

// tcpState is what the kernel tells of a connection, as a hints.PathState.
type tcpState struct {
	rtt, minRTT time.Duration
	bandwidth   float64 // bytes/s (delivery rate)
	loss        float64 // retransmitted share of the segments sent
	queued      int64   // bytes in the send buffer (unsent and unacknowledged)
}

// SteerWait is how long a steered response waits for its client's
// connection on the path the policy chose (smig.Server.SteerWait): a
// client's connection on a second path opens once the first has its TLS
// ticket and binding token, about four round trips of the two paths.
const SteerWait = time.Second

// unreachable is the RTT of a path with no connection yet.
const unreachable = time.Hour

// Steer is smig.Server.Steer: it returns the connection of conns (from
// first) the policy chooses for the response, or nil if it chose a path
// the client has no connection on yet.
func (s *Steerer) Steer(r *http.Request, header http.Header, from *h2.Conn, conns []*h2.Conn) *h2.Conn {
	cs := make([]steerConn, len(conns))
	for i, c := range conns {
		cs[i] = c
	}
	if i := s.steer(r, header, cs); i >= 0 {
		return conns[i]
	}
	return nil
}

// steer is Steer on the connections' interface: the index of the chosen
// connection, or -1 for a path without one.
func (s *Steerer) steer(r *http.Request, header http.Header, conns []steerConn) int {
	classify, now, tcp := s.Classify, s.now, s.tcp
	if classify == nil {
		classify = func(r *http.Request, h http.Header) hints.Hint { return hints.FromResponse(r.Header, h) }
	}
	if now == nil {
		now = time.Now
	}
	if tcp == nil {
		tcp = readTCP
	}
	h := classify(r, header)
	paths := make([]hints.PathState, len(conns))
	for i, c := range conns {
		paths[i] = s.pathState(c, tcp(c))
	}
	for _, p := range s.Paths {
		if !slices.ContainsFunc(paths, func(ps hints.PathState) bool { return ps.Name == p.Name }) {
			paths = append(paths, hints.PathState{Name: p.Name, Cost: p.Cost, RTT: unreachable, MinRTT: unreachable})
		}
	}
	d := s.Policy.Decide(h, paths, now())
	if d.Path < 0 || d.Path >= len(conns) {
		return -1
	}
	s.place(r, conns[d.Path], max(h.Size, 0), len(conns) == 1)
	return d.Path
}

// pathState is connection c's state: its path's name and cost by the
// client's address, the kernel's figures and the bytes placed on it.
func (s *Steerer) pathState(c steerConn, t tcpState) hints.PathState {
	ps := hints.PathState{Up: true, RTT: t.rtt, MinRTT: t.minRTT, Bandwidth: t.bandwidth, Loss: t.loss, Queued: t.queued}
	if nc := c.NetConn(); nc != nil {
		if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
			for _, p := range s.Paths {
				if p.Client.Contains(ap.Addr().Unmap()) {
					ps.Name, ps.Cost = p.Name, p.Cost
					break
				}
			}
		}
	}
	s.mu.Lock()
	ps.Sent = s.sent[c]
	s.mu.Unlock()
	return ps
}

// place counts size bytes on to. A placement on a client's only
// connection is provisional: the response is asked about again, and its
// bytes move with it.
func (s *Steerer) place(r *http.Request, to steerConn, size int64, provisional bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent == nil {
		s.sent, s.placed = map[steerConn]int64{}, map[*http.Request]steerConn{}
	}
	prev, again := s.placed[r]
	if again {
		if prev == to && provisional {
			return
		}
		if _, live := s.sent[prev]; live {
			s.sent[prev] -= size
		}
		delete(s.placed, r)
	}
	if _, known := s.sent[to]; !known {
		// Forget a connection's bytes when it ends.
		go func() {
			<-to.Done()
			s.mu.Lock()
			delete(s.sent, to)
			s.mu.Unlock()
		}()
	}
	s.sent[to] += size
	if provisional {
		s.placed[r] = to
		context.AfterFunc(r.Context(), func() {
			s.mu.Lock()
			delete(s.placed, r)
			s.mu.Unlock()
		})
	}
}

// readTCP reads c's socket (a TLS connection's underlying one); zero
// figures are unknown ones.
func readTCP(c steerConn) tcpState {
	nc := c.NetConn()
	for { // TLS's connection, and h2.TLSServer's under it
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = u.NetConn()
	}
	var t tcpState
	if nc == nil {
		return t
	}
	sockctl.ConnControl(nc, func(fd int) error {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return err
		}
		t.rtt = time.Duration(info.Rtt) * time.Microsecond
		t.minRTT = time.Duration(info.Min_rtt) * time.Microsecond
		t.bandwidth = float64(info.Delivery_rate)
		if info.Segs_out > 0 {
			t.loss = float64(info.Total_retrans) / float64(info.Segs_out)
		}
		if q, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ); err == nil {
			t.queued = int64(q)
		}
		return nil
	})
	return t
}

// ParseSteerPath reads NAME=PREFIX[@COST] (cheap=10.0.1.0/24,
// exp=10.0.2.2/32@1, lte=fd00::/64@0.5): the path's name, its clients'
// addresses (an address alone is one address) and its cost per byte
// (default 0).
func ParseSteerPath(s string) (SteerPath, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.ContainsAny(name, "@/ ") {
		return SteerPath{}, fmt.Errorf("steer path %q: want NAME=PREFIX[@COST]", s)
	}
	pfx, cost, hasCost := strings.Cut(rest, "@")
	p := SteerPath{Name: name}
	var err error
	if strings.Contains(pfx, "/") {
		p.Client, err = netip.ParsePrefix(pfx)
	} else {
		var a netip.Addr
		if a, err = netip.ParseAddr(pfx); err == nil {
			p.Client = netip.PrefixFrom(a, a.BitLen())
		}
	}
	if err != nil {
		return SteerPath{}, fmt.Errorf("steer path %q: %w", s, err)
	}
	p.Client = p.Client.Masked()
	if hasCost {
		if p.Cost, err = strconv.ParseFloat(cost, 64); err != nil || p.Cost < 0 || math.IsInf(p.Cost, 0) || math.IsNaN(p.Cost) {
			return SteerPath{}, fmt.Errorf("steer path %q: cost %q: want a number >= 0", s, cost)
		}
	}
	return p, nil
}

// String is the path as ParseSteerPath reads it.
func (p SteerPath) String() string {
	s := p.Name + "=" + p.Client.String()
	if p.Cost != 0 {
		s += "@" + strconv.FormatFloat(p.Cost, 'g', -1, 64)
	}
	return s
}
