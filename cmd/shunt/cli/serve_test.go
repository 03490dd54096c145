package cli

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/syncio"
)

// startServe runs `shunt serve args...` in-process on a free loopback port
// and returns the URL from its first stdout line. Cleanup stops it as a
// signal would and checks it exits cleanly.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	return startListening(t, "serve", runServe, append([]string{"--addr", "127.0.0.1:0"}, args...))
}

// startListening runs a command that prints "listening on URL" first
// (serve, proxy) until the test ends, and returns the URL.
func startListening(t *testing.T, name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error, args []string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &syncio.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, pw, stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		var exit error
		select {
		case exit = <-done:
		case <-time.After(2 * shutdownGrace):
		}
		t.Fatalf("%s %v: no first line (%v), exit %v; stderr:\n%s", name, args, err, exit, stderr)
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			// A test skipped for want of the h2 engine may leave the stub's
			// Shutdown error behind.
			if err != nil && !t.Skipped() {
				t.Errorf("%s %v exited with %v; stderr:\n%s", name, args, err, stderr)
			}
		case <-time.After(2 * shutdownGrace):
			t.Errorf("%s %v did not stop", name, args)
		}
	})
	m := regexp.MustCompile(`^listening on (https?://127\.0\.0\.1:[0-9]+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%s %v: first stdout line %q, want listening on SCHEME://HOST:PORT", name, args, line)
	}
	return m[1]
}

func TestServeFirstLine(t *testing.T) {
	if u := startServe(t); !strings.HasPrefix(u, "http://") {
		t.Errorf("cleartext URL %q", u)
	}
	if u := startServe(t, "--tls"); !strings.HasPrefix(u, "https://") {
		t.Errorf("TLS URL %q", u)
	}
}

func TestServeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls", "--cert", "c.pem"}, "--cert and --key go together"},
		{[]string{"--cert", "c.pem", "--key", "k.pem"}, "need --tls"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--notsent-lowat", "-1"}, "must not be negative"},
		{[]string{"--addr", "127.0.0.1:0", "--cc", "no-such-cc"}, "no-such-cc"},
		{[]string{"--addr", "127.0.0.1:0", "--root", "/no/such/dir"}, "/no/such/dir"},
		{[]string{"--addr", "127.0.0.1:0", "--tls", "--cert", "/no/c.pem", "--key", "/no/k.pem"}, "/no/c.pem"},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"--steer", "urgent-fast"}, "--steer and --steer-path go together"},
		{[]string{"--steer-path", "exp=10.0.2.2@1"}, "--steer and --steer-path go together"},
		{[]string{"--steer", "urgent-fast", "--steer-path", "exp"}, "want NAME=PREFIX[@COST]"},
		{[]string{"--steer", "fastest", "--steer-path", "exp=10.0.2.2@1"}, `--steer: no policy preset "fastest"`},
		{[]string{"--steer", "urgent-fast", "--steer-path", "exp=10.0.2.2@1", "--smig", "migsw"}, "the steering places every response"},
	} {
		var stdout, stderr bytes.Buffer
		err := runServe(context.Background(), tc.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.want) {
			t.Errorf("serve %v = %v (stderr %q), want an error with %q", tc.args, err, stderr.String(), tc.want)
		}
		// A failed start must not announce an address a runner would use.
		if stdout.Len() > 0 {
			t.Errorf("serve %v printed %q before failing", tc.args, stdout.String())
		}
	}
}

// Real peers against `shunt serve`: curl over h2 (TLS), h2c prior knowledge
// and HTTP/1.1, nghttp over h2c upgrade, every body compared with the generator.
func TestServeToCurlNghttp(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	tlsURL, clearURL := startServe(t, "--tls"), startServe(t)
	run := func(name string, args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, name, args...).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		return out
	}
	for _, tc := range []struct {
		args   []string
		off, n int64
	}{
		{[]string{"-k", "--http2", tlsURL + "/gen/2MB"}, 0, 2e6},
		{[]string{"-k", "--http2", "-r", "1000-1999", tlsURL + "/gen/2MB"}, 1000, 1000},
		{[]string{"-k", "--http2", "-r", "-77", tlsURL + "/gen/2MB"}, 2e6 - 77, 77},
		{[]string{"--http2-prior-knowledge", "-r", "1999990-", clearURL + "/gen/2MB"}, 1999990, 10},
		{[]string{"--http2-prior-knowledge", clearURL + "/gen/1MiB"}, 0, 1 << 20},
		{[]string{"--http1.1", "-r", "5-9", clearURL + "/gen/1MiB"}, 5, 5},
	} {
		out := run(curl, append([]string{"-sS", "--fail"}, tc.args...)...)
		if !bytes.Equal(out, gen(tc.off, tc.n)) {
			t.Errorf("curl %v: %d bytes, not the generated bytes %d..%d", tc.args, len(out), tc.off, tc.off+tc.n)
		}
	}
	// Two ranges over h2: multipart/byteranges with both parts.
	out := run(curl, "-sS", "--fail", "-k", "--http2", "-r", "0-9,100-109", tlsURL+"/gen/1KB")
	for _, part := range []string{"Content-Range: bytes 0-9/1000", "Content-Range: bytes 100-109/1000"} {
		if !bytes.Contains(out, []byte(part)) {
			t.Errorf("multi-range body lacks %q:\n%q", part, out)
		}
	}
	if !bytes.Contains(out, gen(100, 10)) {
		t.Error("multi-range body lacks the generated bytes 100-109")
	}

	nghttp, err := exec.LookPath("nghttp")
	if err != nil {
		t.Skip("nghttp not installed")
	}
	if out := run(nghttp, "-u", "-H", "range: bytes=10-29", clearURL+"/gen/1MB"); !bytes.Equal(out, gen(10, 20)) {
		t.Errorf("nghttp -u with range: %q", out)
	}
	if out := run(nghttp, clearURL+"/gen/100KB"); !bytes.Equal(out, gen(0, 1e5)) {
		t.Errorf("nghttp h2c: %d bytes, not the generated object", len(out))
	}
}

// TestServeH3PortTakenOnTCP: --h3 serves HTTP/3 and HTTP/2 on one port
// number; a port whose TCP side is taken is refused at once, naming it, and
// a picked port (0) has both sides free.
func TestServeH3PortTakenOnTCP(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	pf := addPageFlags(flag.NewFlagSet("serve", flag.ContinueOnError))
	*pf.h3 = true
	if pc, _, err := pf.listenH3(taken.Addr().String(), true); err == nil {
		pc.Close()
		t.Fatalf("--h3 on %s, taken on TCP: no error", taken.Addr())
	} else if !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Errorf("error %q does not name %s", err, taken.Addr())
	}
	for range 20 {
		pc, addr, err := pf.listenH3("127.0.0.1:0", true)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		pc.Close()
		if err != nil {
			t.Fatalf("TCP %s beside %s: %v", addr, pc.LocalAddr(), err)
		}
		ln.Close()
	}
}
