package peers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the real servers and clients: they check the harness the
// interop tests rely on, against implementations known to be correct.

func requireTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := Available(n); err != nil {
			t.Skipf("skipping: %v", err)
		}
	}
}

// writeObject writes n random bytes to dir/name and returns them.
func writeObject(t *testing.T, dir, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func startPeer(t *testing.T, name string, o Options) *Peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Log())
		}
	})
	return p
}

func TestServersWithClients(t *testing.T) {
	root := t.TempDir()
	obj := writeObject(t, root, "obj", 300_000)
	// curl 7.88 fails an Upgrade whose first response bytes exceed its 32 KiB
	// buffer ("connection buffer size is too small"), so Upgrade uses this.
	small := writeObject(t, root, "small", 10_000)
	for _, server := range []string{Nginx, H2O, Nghttpd} {
		for _, tls := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", server, tls), func(t *testing.T) {
				requireTools(t, server, "curl", "nghttp")
				p := startPeer(t, server, Options{Root: root, TLS: tls})
				for _, client := range []struct {
					name  string
					fetch func(context.Context, Fetch) (Response, error)
				}{{"curl", Curl}, {"nghttp", Nghttp}} {
					for _, r := range []string{"", "1000-1999", "299990-", "-5"} {
						if server == Nghttpd && r != "" {
							continue // nghttpd ignores Range
						}
						checkFetch(t, client.name, client.fetch, Fetch{URL: p.URL("/obj"), Range: r}, obj)
					}
				}
				// Of these servers only h2o answers an h2c Upgrade.
				if server == H2O && !tls {
					checkFetch(t, "curl", Curl, Fetch{URL: p.URL("/small"), Upgrade: true}, small)
					checkFetch(t, "nghttp", Nghttp, Fetch{URL: p.URL("/obj"), Upgrade: true}, obj)
				}
			})
		}
	}
}

func checkFetch(t *testing.T, client string, fetch func(context.Context, Fetch) (Response, error), f Fetch, obj []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f.Out = filepath.Join(t.TempDir(), "body")
	resp, err := fetch(ctx, f)
	if err != nil {
		t.Errorf("%s: %v", client, err)
		return
	}
	want, wantCR, wantStatus := obj, "", 200
	if f.Range != "" {
		if want, wantCR, err = RangeOf(obj, f.Range); err != nil {
			t.Fatal(err)
		}
		wantStatus = 206
	}
	if resp.Status != wantStatus || resp.Proto != "2" || resp.ContentRange != wantCR {
		t.Errorf("%s %s range %q upgrade=%v: got %+v, want status %d, HTTP/2, Content-Range %q",
			client, f.URL, f.Range, f.Upgrade, resp, wantStatus, wantCR)
	}
	if err := VerifyFile(f.Out, want); err != nil {
		t.Errorf("%s %s range %q: %v", client, f.URL, f.Range, err)
	}
}

func TestStopKillsWorkers(t *testing.T) {
	requireTools(t, Nginx)
	p := startPeer(t, Nginx, Options{Root: t.TempDir(), Workers: 2})
	pgid := p.cmd.Process.Pid
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	// Workers would be reparented, not reaped: probe the group for a while.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has members after Stop", pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(p.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop left %s behind: %v", p.Dir, err)
	}
}

func TestStartFailureNamesServerAndOutput(t *testing.T) {
	requireTools(t, Nginx)
	// A port another socket holds: nginx exits, and the error must say so.
	busy := startPeer(t, Nghttpd, Options{Root: t.TempDir()})
	_, err := Start(context.Background(), Nginx, Options{Root: t.TempDir(), Addr: busy.Addr})
	if err == nil {
		t.Fatal("Start succeeded on a busy port")
	}
	if !strings.Contains(err.Error(), "nginx") || !strings.Contains(err.Error(), "Address already in use") {
		t.Errorf("error does not name the server and its complaint: %v", err)
	}
}

func TestInNamespace(t *testing.T) {
	requireTools(t, Nginx, "curl")
	if os.Geteuid() != 0 {
		t.Skip("skipping: creating a network namespace needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: ip (iproute2) not found")
	}
	ns := fmt.Sprintf("shunt-peers-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	prefix := []string{"ip", "netns", "exec", ns}
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up in %s: %v: %s", ns, err, out)
	}
	root := t.TempDir()
	obj := writeObject(t, root, "obj", 50_000)
	// The same port as a free one on the host: only the namespace's own
	// listener can satisfy the readiness check.
	port, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, Nginx, Options{Root: root, Addr: "127.0.0.1:" + port, TLS: true, Prefix: prefix})
	checkFetch(t, "curl", Curl, Fetch{URL: p.URL("/obj"), Prefix: prefix}, obj)
	// From the host namespace nothing listens there.
	out := filepath.Join(t.TempDir(), "body")
	if _, err := Curl(context.Background(), Fetch{URL: p.URL("/obj"), Out: out}); err == nil {
		t.Error("curl from the host reached a server inside the namespace")
	}
}

func TestH2loadAgainstH2O(t *testing.T) {
	requireTools(t, H2O, "h2load")
	root := t.TempDir()
	writeObject(t, root, "obj", 16_000)
	p := startPeer(t, H2O, Options{Root: root})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, out, err := H2load(ctx, Load{URLs: []string{p.URL("/obj"), p.URL("/missing")}, Requests: 2000, Clients: 4, Streams: 10})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Requests alternate between the two URLs: half found, half 404.
	if r.Total != 2000 || r.Succeeded != 1000 || r.Failed != 1000 || r.Status[0] != 1000 || r.Status[2] != 1000 || r.ReqPerSec <= 0 {
		t.Errorf("got %+v, want 1000 succeeded (2xx) and 1000 failed (4xx)\n%s", r, out)
	}
	// h2load's own CPU time: 2,000 requests take well over a microsecond
	// and less than the minute the run may last.
	if r.CPU < time.Microsecond || r.CPU > time.Minute {
		t.Errorf("h2load's CPU time %v", r.CPU)
	}
}

func TestH2specAgainstNghttpd(t *testing.T) {
	requireTools(t, Nghttpd, "h2spec")
	p := startPeer(t, Nghttpd, Options{Root: t.TempDir()})
	host, port, _ := strings.Cut(p.Addr, ":")
	portNum, _ := strconv.Atoi(port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// nghttpd 1.52 fails exactly this case (of the two in 5.1.1).
	r, out, err := H2spec(ctx, Conformance{Host: host, Port: portNum, Specs: []string{"http2/5.1.1"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := ConformanceResult{Tests: 2, Passed: 1, Failed: 1, Failures: []string{"http2/5.1.1/2"}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got %+v, want %+v\n%s", r, want, out)
	}
}
