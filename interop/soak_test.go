package interop

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/peers"
	"github.com/shunt-net/shunt/smig"
	"golang.org/x/net/http2"
)

// soakSample is one look at the server process.
type soakSample struct {
	at         time.Duration
	rssKiB     int64
	goroutines int
	fds        int
}

// sampleProcess reads the server's RSS and open files from /proc and its
// goroutines from its --debug-addr expvar page.
func sampleProcess(pid int, debug string, at time.Duration) (soakSample, error) {
	s := soakSample{at: at}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			s.rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	res, err := http.Get("http://" + debug + "/debug/vars")
	if err != nil {
		return s, err
	}
	defer res.Body.Close()
	var vars struct{ Goroutines int }
	if err := json.NewDecoder(res.Body).Decode(&vars); err != nil {
		return s, fmt.Errorf("/debug/vars: %w", err)
	}
	s.goroutines = vars.Goroutines
	return s, nil
}

// idleH2 opens an h2c connection, says its preface and SETTINGS, answers
// what needs answering and otherwise stays silent; alive checks with a
// PING that the server still keeps it.
type idleH2 struct {
	c    net.Conn
	fr   *http2.Framer
	mu   sync.Mutex
	pong chan struct{}
}

func openIdleH2(addr string) (*idleH2, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	ic := &idleH2{c: c, fr: http2.NewFramer(c, bufio.NewReader(c)), pong: make(chan struct{}, 1)}
	c.Write([]byte(http2.ClientPreface))
	ic.fr.WriteSettings()
	go func() {
		for {
			f, err := ic.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					ic.mu.Lock()
					ic.fr.WriteSettingsAck()
					ic.mu.Unlock()
				}
			case *http2.PingFrame:
				if f.IsAck() {
					ic.pong <- struct{}{}
				}
			}
		}
	}()
	return ic, nil
}

func (ic *idleH2) alive() bool {
	ic.mu.Lock()
	err := ic.fr.WritePing(false, [8]byte{1})
	ic.mu.Unlock()
	if err != nil {
		return false
	}
	select {
	case <-ic.pong:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// soakRound is one h2load run of the mix: many short-lived connections,
// few busy ones, small and large objects.
type soakRound struct {
	clients, streams, requests int
	paths                      []string
}

var soakRounds = []soakRound{
	{200, 1, 2000, []string{"/gen/1KB", "/gen/16KB", "/100k.bin"}},               // many connections, opened and closed
	{20, 20, 4000, []string{"/gen/1KB", "/gen/16KB", "/gen/100KB", "/100k.bin"}}, // multiplexed small objects
	{8, 4, 200, []string{"/gen/1MB", "/gen/4MB", "/gen/16KB"}},                   // large objects
	{50, 10, 3000, []string{"/gen/100KB", "/gen/1KB", "/gen/1MB", "/gen/10KB"}},  // mixed
	{100, 2, 1500, []string{"/gen/1KB", "/gen/16KB", "/gen/100KB", "/gen/1MB"}},  // many, mixed
	{4, 100, 2000, []string{"/gen/1KB", "/gen/10KB", "/gen/16KB", "/gen/100KB"}}, // deep multiplexing
}

// TestSoak runs `shunt serve` (without and with --smig migsw) under h2load
// for SHUNT_SOAK (default 25 s each: the CI version) with mixed object
// sizes, rounds of 4 to 200 connections opened and closed, and 100 idle
// h2c connections held open throughout; with SMig, a shunt SMig client
// downloads 4 MB objects (each migrated to a pooled connection and
// checked by SHA-256) beside the load, a new client every 5. The server's
// RSS, goroutines and open files are sampled every 2 s. It fails on any
// failed request, a lost idle connection, goroutines or open files that do
// not come back down once the load stops, or RSS that keeps growing (the
// last third's peak over 1.25x the first third's plus 32 MiB).
//
//	SHUNT_SOAK=10m go test -run 'TestSoak/smig=false' -v -timeout 30m ./interop
func TestSoak(t *testing.T) {
	needTools(t, "h2load")
	dur := 25 * time.Second
	if v := os.Getenv("SHUNT_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SHUNT_SOAK=%q: want a duration", v)
		}
		dur = d
	}
	for _, smigOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("smig=%v", smigOn), func(t *testing.T) { soak(t, dur, smigOn) })
	}
}

func soak(t *testing.T, dur time.Duration, smigOn bool) {
	root := t.TempDir()
	writeRandom(t, root, "100k.bin", 100_000)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	debug := ln.Addr().String()
	ln.Close()
	extra := []string{"--debug-addr", debug}
	if smigOn {
		extra = append(extra, "--smig", "migsw:1048576")
	}
	srv := startShunt(t, root, false, extra...)

	var idle []*idleH2
	for range 100 {
		ic, err := openIdleH2(srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer ic.c.Close()
		idle = append(idle, ic)
	}
	begin := time.Now()
	var samples []soakSample
	var sampleErr error
	var smu sync.Mutex
	sample := func() soakSample {
		s, err := sampleProcess(srv.pid, debug, time.Since(begin))
		smu.Lock()
		defer smu.Unlock()
		if err != nil && sampleErr == nil {
			sampleErr = err
		}
		samples = append(samples, s)
		return s
	}
	time.Sleep(time.Second)
	start := sample()

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	})
	var smigDone, smigFailed int
	if smigOn {
		wg.Go(func() { smigDone, smigFailed = soakSMig(t, ctx, srv.url("/gen/4MB")) })
	}
	var requests, failed, rounds int
	var h2loadBytes int64
	for i := 0; ctx.Err() == nil; i++ {
		r := soakRounds[i%len(soakRounds)]
		var urls []string
		for _, p := range r.paths {
			urls = append(urls, srv.url(p))
		}
		lctx, lcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		res, out, err := peers.H2load(lctx, peers.Load{URLs: urls, Requests: r.requests, Clients: r.clients, Streams: r.streams})
		lcancel()
		rounds++
		requests += res.Total
		h2loadBytes += res.DataBytes
		bad := r.requests - res.Succeeded + res.Failed + res.Errored + res.Timeout + r.requests - res.Status[0]
		if err != nil || bad > 0 {
			failed += max(bad, 1)
			t.Errorf("round %d (-c %d -m %d -n %d): %d succeeded, %d 2xx, %d failed, %d errored: %v\n%s",
				i, r.clients, r.streams, r.requests, res.Succeeded, res.Status[0], res.Failed, res.Errored, err, out)
		}
	}
	wg.Wait()
	// Once the load stops, what it held must go: h2's idle handler
	// goroutines leave after 2 s.
	time.Sleep(4 * time.Second)
	end := sample()
	aliveIdle := 0
	for _, ic := range idle {
		if ic.alive() {
			aliveIdle++
		}
	}
	if sampleErr != nil {
		t.Fatalf("sampling the server: %v", sampleErr)
	}

	maxS := start
	for _, s := range samples {
		maxS.rssKiB, maxS.goroutines, maxS.fds = max(maxS.rssKiB, s.rssKiB), max(maxS.goroutines, s.goroutines), max(maxS.fds, s.fds)
	}
	third := max(len(samples)/3, 1)
	peak := func(ss []soakSample) int64 {
		var m int64
		for _, s := range ss {
			m = max(m, s.rssKiB)
		}
		return m
	}
	early, late := peak(samples[:third]), peak(samples[len(samples)-third:])
	elapsed := time.Since(begin).Round(time.Second)
	t.Logf("soak smig=%v: %v, %d h2load rounds, %d requests (%.1f GB of bodies), %d failed; SMig client: %d downloads of 4 MB verified, %d failed; idle h2c connections alive at the end %d/%d",
		smigOn, elapsed, rounds, requests, float64(h2loadBytes)/1e9, failed, smigDone, smigFailed, aliveIdle, len(idle))
	t.Logf("soak smig=%v: RSS MiB start %.1f end %.1f max %.1f (first third's peak %.1f, last third's %.1f); goroutines start %d end %d max %d; open files start %d end %d max %d; %d samples",
		smigOn, mib(start.rssKiB), mib(end.rssKiB), mib(maxS.rssKiB), mib(early), mib(late),
		start.goroutines, end.goroutines, maxS.goroutines, start.fds, end.fds, maxS.fds, len(samples))
	for _, s := range samples {
		t.Logf("  t=%5.0fs rss %6.1f MiB goroutines %5d fds %5d", s.at.Seconds(), mib(s.rssKiB), s.goroutines, s.fds)
	}
	if smigFailed > 0 {
		t.Errorf("%d SMig downloads failed", smigFailed)
	}
	if aliveIdle != len(idle) {
		t.Errorf("%d of %d idle connections were lost", len(idle)-aliveIdle, len(idle))
	}
	if end.goroutines > start.goroutines+20 {
		t.Errorf("goroutines: %d at the start, %d once the load stopped: a leak", start.goroutines, end.goroutines)
	}
	if end.fds > start.fds+10 {
		t.Errorf("open files: %d at the start, %d once the load stopped: a leak", start.fds, end.fds)
	}
	if float64(late) > 1.25*float64(early)+32<<10 {
		t.Errorf("RSS grows: peak %.1f MiB in the first third, %.1f MiB in the last", mib(early), mib(late))
	}
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// soakSMig downloads url with shunt's SMig client until ctx ends, a new
// client (and connections) every 5 downloads, each body checked against
// the generator's SHA-256.
func soakSMig(t *testing.T, ctx context.Context, url string) (done, failed int) {
	size, _, _ := content.GenSize(url[strings.Index(url, "/gen/"):])
	want := content.Digest(size)
	var tr *smig.Transport
	for i := 0; ctx.Err() == nil; i++ {
		if i%5 == 0 {
			if tr != nil {
				tr.CloseIdleConnections()
			}
			tr = &smig.Transport{AllowHTTP: true}
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		res, err := tr.RoundTrip(req)
		if err == nil {
			h := sha256.New()
			var n int64
			n, err = io.Copy(h, res.Body)
			res.Body.Close()
			if err == nil && (n != size || [32]byte(h.Sum(nil)) != want) {
				err = fmt.Errorf("%d bytes, SHA-256 %x; want %d bytes, %x", n, h.Sum(nil), size, want)
			}
		}
		switch {
		case err == nil:
			done++
		case ctx.Err() != nil:
			// the soak ended in the middle of this one
		default:
			failed++
			t.Errorf("SMig download %d: %v", i, err)
		}
	}
	tr.CloseIdleConnections()
	if m := tr.Stats().Migrated.Load(); done > 0 && m == 0 {
		t.Errorf("SMig: the last client's downloads did not migrate")
	}
	return done, failed
}
