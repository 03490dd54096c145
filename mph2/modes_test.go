package mph2

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/internal/wiretap"
	"github.com/shunt-net/shunt/peers"
)

// Handover with a working primary is the primary alone: the standby sends
// no request and receives nothing.
func TestHandoverPrimaryAlone(t *testing.T) {
	base := startServer(t, nil)
	const size = 2 << 20
	c := &Client{Mode: ModeHandover, Paths: []Path{loopPath("primary", 4e6, 0), loopPath("standby", 8e6, 0)}}
	defer c.Close()
	for _, o := range []Options{{}, {Size: size}} {
		res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, o)
		if p := res.Paths[1]; p.Requests != 0 || p.Received != 0 || res.Paths[0].Delivered != size {
			t.Fatalf("size %d: paths %+v, want everything on the primary", o.Size, res.Paths)
		}
		if len(res.Switches) != 1 || res.Switches[0].To != "primary" || res.Switches[0].Why != "start" {
			t.Fatalf("switches %+v, want the primary chosen at the start", res.Switches)
		}
	}
}

// Handover moves to the standby when the primary dies mid-download; no
// byte is lost (every byte checked once).
func TestHandoverPrimaryDies(t *testing.T) {
	base := startServer(t, nil)
	const size = 3 << 20
	c := &Client{Mode: ModeHandover, Paths: []Path{loopPath("primary", 6e6, 500<<10), loopPath("standby", 6e6, 0)}}
	defer c.Close()
	res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, Options{Size: size})
	if !res.Paths[0].Down || res.Paths[1].Delivered == 0 {
		t.Fatalf("paths %+v: want the primary down and the standby carrying the rest", res.Paths)
	}
	if n := len(res.Switches); n != 2 || res.Switches[1].To != "standby" || res.Switches[1].FirstByte < res.Switches[1].At {
		t.Fatalf("switches %+v: want start then down to the standby, with its first byte after", res.Switches)
	}
	t.Logf("handover at %v, first byte on the standby %v, total %v", res.Switches[1].At, res.Switches[1].FirstByte, res.Total)
}

// Interactive on paths where the one of least RTT is the slow one (as
// Figure 8's (5,10) pair): the first download starts on it (its handshake
// is the quicker), probes the other with a range of the tail (extended
// while the move is confirmed) and moves the rest there; the downloads after it go whole, one request, on the fast
// path, from the estimates the first one left. Every byte is checked. The
// rates and the delay are far apart, and the rates low, so that a loaded
// machine (CI beside other builds: loopback at ~1 MB/s, handshakes late by
// tens of ms) cannot turn the order of either around.
func TestInteractiveProbeMovesToFasterPath(t *testing.T) {
	base := startServer(t, nil)
	const size = 3 << 20
	c := &Client{Mode: ModeInteractive, Paths: []Path{delayPath("near", 0.5e6, 0), delayPath("far", 2e6, 150*time.Millisecond)}}
	defer c.Close()
	for k := range 3 {
		res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, Options{})
		near, far := res.Paths[0], res.Paths[1]
		t.Logf("download %d: %v, near %d bytes in %d requests, far %d in %d, switches %+v", k, res.Total, near.Delivered, near.Requests, far.Delivered, far.Requests, res.Switches)
		if k == 0 {
			sw := res.Switches
			if len(sw) != 2 || sw[0].To != "near" || sw[1].To != "far" || sw[1].Why != "probe" {
				t.Fatalf("switches %+v: want the start on near (least RTT), then the rest moved to far after the probe", sw)
			}
			if far.Delivered < size/2 || near.Requests != 1 || far.Requests > 3 {
				t.Fatalf("paths %+v: want most bytes on far, one request on near, the probe, its extension and the moved rest on far", res.Paths)
			}
			continue
		}
		if near.Requests != 0 || far.Requests != 1 || far.Delivered != size {
			t.Fatalf("download %d: paths %+v: want the whole object in one request on far", k, res.Paths)
		}
	}
}

// delayPath is a loopback path whose reads are limited to rate bytes per
// second (slowConn) and whose handshake and client writes (requests,
// WINDOW_UPDATEs, PINGs) take delay: a round trip of about delay.
func delayPath(name string, rate float64, delay time.Duration) Path {
	slow := loopPath(name, rate, 0)
	return Path{Name: name, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := slow.Dial(ctx, network, addr)
		if err != nil || delay == 0 {
			return c, err
		}
		time.Sleep(delay)
		dc := &delayConn{Conn: c, delay: delay, q: make(chan delayed, 4096), done: make(chan struct{})}
		go dc.run()
		return dc, nil
	}}
}

// delayConn delays every write by delay, in order, without blocking the
// writer: a one-way delay line towards the server.
type delayConn struct {
	net.Conn
	delay time.Duration
	q     chan delayed
	done  chan struct{}
	once  sync.Once
}

type delayed struct {
	at time.Time
	b  []byte
}

func (c *delayConn) Write(p []byte) (int, error) {
	select {
	case c.q <- delayed{time.Now().Add(c.delay), append([]byte(nil), p...)}:
		return len(p), nil
	case <-c.done:
		return 0, net.ErrClosed
	}
}

func (c *delayConn) run() {
	for {
		select {
		case d := <-c.q:
			select {
			case <-time.After(time.Until(d.at)):
			case <-c.done:
				return
			}
			if _, err := c.Conn.Write(d.b); err != nil {
				c.Close()
				return
			}
		case <-c.done:
			return
		}
	}
}

func (c *delayConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// countedPath wraps p's dial so that every connection's DATA is counted
// (wiretap.Dial); the returned func, once the connections are closed,
// gives the total.
func countedPath(p Path) (Path, func() int64) {
	var total func() int64
	p.Dial, total = wiretap.Dial(p.Dial)
	return p, total
}

// A path's budget is the Client's, across its downloads: sequential ones,
// concurrent ones, and requests the Transport passes through (never on a
// budgeted path). Counted on the wire; every body checked.
func TestBudgetAcrossDownloads(t *testing.T) {
	base := startServer(t, nil)
	const size = 2 << 20
	const budget = 1 << 20
	for _, mode := range []Mode{ModeAggregate, ModeHandover, ModeInteractive} {
		t.Run(mode.String(), func(t *testing.T) {
			cell, onWire := countedPath(loopPath("cell", 8e6, 0))
			cell.Budget = budget
			c := &Client{Mode: mode, Paths: []Path{cell, loopPath("wifi", 4e6, 0)}}
			url := fmt.Sprintf("%s/gen/%d", base, size)
			var got []int64
			for range 3 {
				res, _ := fetchAll(t, c, url, size, Options{})
				got = append(got, res.Paths[0].Received)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f := newMemFile(size)
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if _, err := c.Download(ctx, url, f, Options{}); err != nil {
						errs <- err
						return
					}
					if sha256.Sum256(f.b) != content.Digest(size) || bytes.Count(f.writes, []byte{1}) != size {
						errs <- fmt.Errorf("concurrent download: not the object, each byte written once")
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// A caller's own Range is passed through, never on cell.
			tr := &Transport{Client: c}
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Range", "bytes=0-99999")
			res, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 206 || n != 100000 {
				t.Fatalf("pass-through: status %d, %d bytes", res.StatusCode, n)
			}
			c.Close()
			wire := onWire()
			t.Logf("cell received %v in the sequential downloads; %d DATA bytes on the wire in all", got, wire)
			if wire > budget {
				t.Fatalf("cell received %d bytes on the wire over the Client's downloads, over its budget %d", wire, budget)
			}
			if mode == ModeAggregate && got[0] < budget/2 {
				t.Errorf("the first download received %d on cell, want most of its budget %d used", got[0], budget)
			}
		})
	}
}

// A budgeted path never receives more DATA than its budget, counted on
// the wire to the end of the connection (tail bytes and bytes in flight
// at the end included), in every mode and end adjustment, size known or
// not; the download completes on the other path.
func TestBudgetOnTheWire(t *testing.T) {
	base := startServer(t, nil)
	const size = 4 << 20
	const budget = 1 << 20
	for _, mode := range []Mode{ModeAggregate, ModeHandover, ModeInteractive} {
		for _, ea := range []EndAdjust{EndFlowControl, EndReset} {
			for _, o := range []Options{{}, {Size: size}} {
				name := fmt.Sprintf("%v/%v/size=%d", mode, ea, o.Size)
				t.Run(name, func(t *testing.T) {
					// The budgeted path is the faster one and the primary, so
					// every mode wants more of it than the budget allows.
					cell, onWire := countedPath(loopPath("cell", 8e6, 0))
					cell.Budget = budget
					c := &Client{Mode: mode, EndAdjust: ea, Paths: []Path{cell, loopPath("wifi", 4e6, 0)}}
					o.Settle = 200 * time.Millisecond
					res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, o)
					c.Close()
					wire := onWire()
					p := res.Paths[0]
					t.Logf("cell: %d DATA bytes on the wire, %d received, %d delivered, budget full at %v; total %v", wire, p.Received, p.Delivered, p.BudgetFull, res.Total)
					if wire > budget || p.Received > budget {
						t.Fatalf("cell received %d bytes on the wire (%d by its count), over its budget %d", wire, p.Received, budget)
					}
					if mode == ModeAggregate && p.Delivered < budget/2 {
						t.Errorf("cell delivered %d, want most of its budget %d used", p.Delivered, budget)
					}
				})
			}
		}
	}
}

// lyingServer serves generated objects on its path with a lie: "shifted"
// (a 206 one byte later than asked), "longer" (a 206 to the object's end
// for a shorter range), "unasked" (a 206 to a request without Range),
// "whole" (a 200 with the whole object to a ranged request) or "overrun"
// (the 206 asked for, without Content-Length, its body followed by 64 KiB
// of 0xff that are no byte of the object). It returns its HOST:PORT.
func lyingServer(t *testing.T, lie string) string {
	base := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size, _, _ := content.GenSize(r.URL.Path)
		first, last := int64(0), size-1
		rg := r.Header.Get("Range")
		if rg != "" {
			fmt.Sscanf(rg, "bytes=%d-%d", &first, &last)
		}
		switch {
		case lie == "shifted":
			first, last = first+1, min(last+1, size-1)
		case lie == "longer":
			last = size - 1
		case lie == "whole" || (lie == "unasked" && rg != ""):
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			w.WriteHeader(200)
			io.Copy(w, content.NewGenerated(size))
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, size))
		if lie != "overrun" {
			w.Header().Set("Content-Length", strconv.FormatInt(last-first+1, 10))
		}
		w.WriteHeader(206)
		io.Copy(w, io.NewSectionReader(content.NewGenerated(size), first, last-first+1))
		if lie == "overrun" {
			w.Write(bytes.Repeat([]byte{0xff}, 64<<10))
		}
	}))
	return base[len("http://"):]
}

// A path whose server's 206 or Content-Range does not match the request
// is refused, saying why, and the download completes on the other path
// with every byte right; a 200 to a ranged request is refused on a path
// with a budget (its whole body could overrun it).
func TestLyingServerRefused(t *testing.T) {
	base := startServer(t, nil)
	const size = 2 << 20
	for _, v := range []struct {
		lie    string
		o      Options
		budget int64
		want   string
	}{
		{"shifted", Options{Size: size}, 0, "Content-Range says"},
		{"shifted", Options{}, 0, "206 to a request without Range"}, // the first request asks for everything
		{"longer", Options{Size: size}, 0, "Content-Range says"},
		{"unasked", Options{}, 0, "206 to a request without Range"},
		{"whole", Options{Size: size}, size, "200 to a ranged request"},
	} {
		t.Run(fmt.Sprintf("%s/size=%d", v.lie, v.o.Size), func(t *testing.T) {
			liar := loopPath("liar", 0, 0)
			liar.Map = map[string]string{anyHost: lyingServer(t, v.lie)}
			liar.Budget = v.budget
			c := &Client{Paths: []Path{liar, loopPath("honest", 0, 0)}}
			defer c.Close()
			res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, v.o)
			p := res.Paths[0]
			if !p.Down || !strings.Contains(p.Refused, v.want) || p.Delivered != 0 {
				t.Fatalf("liar: %+v, want refused (%q) with nothing delivered", p, v.want)
			}
			t.Logf("refused: %s", p.Refused)
		})
	}
}

// A server whose body runs past the range its 206 announced (no
// Content-Length to catch it) is refused once the first byte past the
// range arrives: the path is taken down (its connection closed), none of
// the extra bytes is written (fetchAll checks every byte against the
// object, and the extra ones are 0xff), and the other path completes the
// download. In both end adjustments: under flow control the credit may
// stop the server short of the extra bytes, so the liar's range is the
// object's second half, whose end is the object's and is never lowered.
func TestLongerBodyRefused(t *testing.T) {
	base := startServer(t, nil)
	const size = 2 << 20
	for _, ea := range []EndAdjust{EndFlowControl, EndReset} {
		t.Run(ea.String(), func(t *testing.T) {
			liar := loopPath("liar", 0, 0)
			liar.Map = map[string]string{anyHost: lyingServer(t, "overrun")}
			// The honest path is the primary and slower: the liar is
			// asked for the second half and delivers all of it.
			c := &Client{EndAdjust: ea, Paths: []Path{loopPath("honest", 8e6, 0), liar}}
			defer c.Close()
			res, _ := fetchAll(t, c, fmt.Sprintf("%s/gen/%d", base, size), size, Options{Size: size})
			p := res.Paths[1]
			if !p.Down || !strings.Contains(p.Refused, "body bytes for a response of") {
				t.Fatalf("liar: %+v, want refused for a body longer than its range", p)
			}
			t.Logf("liar delivered %d, received %d: refused: %s", p.Delivered, p.Received, p.Refused)
		})
	}
}

// Pinning is checked before anything is sent: a path whose interface or
// source address does not exist, is down, or has no route to the server is
// an error naming the path and what is wrong.
func TestPinningChecked(t *testing.T) {
	base := startServer(t, nil)
	url := base + "/gen/1000"
	try := func(p Path) error {
		c := &Client{Paths: []Path{p, loopPath("ok", 0, 0)}}
		defer c.Close()
		_, err := c.Download(context.Background(), url, newMemFile(1000), Options{})
		return err
	}
	for _, v := range []struct {
		p    Path
		want string
	}{
		{Path{Name: "cell", Interface: "nosuch-mpt0"}, "path cell: interface nosuch-mpt0 does not exist"},
		{Path{LocalAddr: netip.MustParseAddr("192.0.2.77")}, "path 192.0.2.77: source address 192.0.2.77 is on no interface"},
		{Path{Interface: "lo", LocalAddr: netip.MustParseAddr("192.0.2.77")}, "source address 192.0.2.77 is not on interface lo"},
	} {
		if err := try(v.p); err == nil || !strings.Contains(err.Error(), v.want) {
			t.Errorf("path %+v: %v, want an error with %q", v.p, err, v.want)
		}
	}
	for _, ok := range []Path{{Interface: "lo"}, {LocalAddr: netip.MustParseAddr("127.0.0.1")}} {
		if err := try(ok); err != nil {
			t.Errorf("path %+v: %v", ok, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping the down and unrouted interfaces: creating a veth pair needs root")
	}
	// A veth pair: down while its peer is, up without a route to 127.0.0.1's
	// neighbour 192.0.2.200 once both are up.
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("link", "add", "mptools-t0", "type", "veth", "peer", "name", "mptools-t1")
	t.Cleanup(func() { exec.Command("ip", "link", "del", "mptools-t0").Run() })
	if err := try(Path{Interface: "mptools-t0"}); err == nil || !strings.Contains(err.Error(), "interface mptools-t0 is down") {
		t.Errorf("down interface: %v", err)
	}
	run("link", "set", "mptools-t0", "up")
	run("link", "set", "mptools-t1", "up")
	for i := 0; ; i++ { // the carrier comes up a moment later
		ifi, err := net.InterfaceByName("mptools-t0")
		if err == nil && ifi.Flags&net.FlagRunning != 0 {
			break
		}
		if i == 200 {
			t.Fatalf("mptools-t0 has no carrier 2 s after both ends went up: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Checked before any byte is sent, so the server may be unreachable:
	// TEST-NET-2, reached (if at all) by this host's default route.
	far := "http://198.51.100.7:9/gen/1000"
	tryFar := func(p Path) error {
		c := &Client{Paths: []Path{p}}
		defer c.Close()
		_, err := c.Download(context.Background(), far, newMemFile(1000), Options{})
		return err
	}
	if err := tryFar(Path{Interface: "mptools-t0"}); err == nil || !strings.Contains(err.Error(), "path mptools-t0: no route to 198.51.100.7 through interface mptools-t0") {
		t.Errorf("unrouted interface: %v", err)
	}
	// A source address on the veth: the kernel's route from it leaves by
	// another interface (or there is none).
	run("addr", "add", "198.18.77.1/32", "dev", "mptools-t0")
	err := tryFar(Path{LocalAddr: netip.MustParseAddr("198.18.77.1")})
	if err == nil || !(strings.Contains(err.Error(), "not by mptools-t0, which holds the address") || strings.Contains(err.Error(), "no route to 198.51.100.7 from source address 198.18.77.1")) {
		t.Errorf("source address routed elsewhere: %v", err)
	}
	// With a route through the veth from that address, the path is pinned.
	run("route", "add", "198.51.100.0/24", "dev", "mptools-t0", "src", "198.18.77.1")
	for _, p := range []Path{{Interface: "mptools-t0"}, {LocalAddr: netip.MustParseAddr("198.18.77.1")}} {
		if err := p.check(context.Background(), "198.51.100.7:9"); err != nil {
			t.Errorf("routed path %+v: %v", p, err)
		}
	}
}

// Over TLS the first request follows the handshake at once, before the
// server's SETTINGS ACK. Package h2 reckoned such a stream's window from
// the RFC's 65535 while the server applied our 16 KiB: every stream whose
// credit was given exactly to its end stalled 49151 bytes short against
// nginx (h2's TestManualWindowBeforeSettingsAck). The download completes.
func TestTLSFirstRequestWindows(t *testing.T) {
	if err := peers.Available(peers.Nginx); err != nil {
		t.Skipf("skipping: %v (bash scripts/setup installs nginx)", err)
	}
	dir := t.TempDir()
	const size = 2_000_000
	f, err := os.Create(filepath.Join(dir, "obj"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, content.NewGenerated(size)); err != nil || f.Close() != nil {
		t.Fatal(err)
	}
	p, err := peers.Start(context.Background(), peers.Nginx, peers.Options{Root: dir, Addr: "127.0.0.1:0", TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	for _, o := range []Options{{}, {Size: size}} {
		c := &Client{TLSConfig: &tls.Config{InsecureSkipVerify: true}, Paths: []Path{loopPath("a", 0, 0), loopPath("b", 0, 0)}}
		fetchAll(t, c, p.URL("/obj"), size, o)
		c.Close()
	}
}
