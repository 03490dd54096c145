package cli

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// -o through a symbolic link replaces the link's target, not the link;
// -o to something that is not a regular file (a FIFO here, /dev/null for
// a user) is written to, never replaced by a regular file.
func TestGetOutputThroughLinksAndDevices(t *testing.T) {
	base := startServe(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runGetTest(t, "-o", link, base+"/gen/10KB"); err != nil {
		t.Fatalf("get -o link: %v\n%s", err, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a link: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !bytes.Equal(b, gen(0, 10e3)) {
		t.Errorf("the target holds %d bytes, not the body", len(b))
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Errorf("target's mode %v, want 0600 kept", fi.Mode().Perm())
	}
	// A dangling link: its target is created.
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("new", dangling); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runGetTest(t, "-o", dangling, base+"/gen/1KB"); err != nil {
		t.Fatalf("get -o dangling link: %v\n%s", err, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new")); len(b) != 1000 {
		t.Errorf("dangling link's target holds %d bytes", len(b))
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	if _, stderr, err := runGetTest(t, "-o", fifo, base+"/gen/100KB"); err != nil {
		t.Fatalf("get -o fifo: %v\n%s", err, stderr)
	}
	if b := <-got; !bytes.Equal(b, gen(0, 100e3)) {
		t.Errorf("the FIFO's reader got %d bytes, not the body", len(b))
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
	if _, _, err := runGetTest(t, "-o", dir, base+"/gen/1KB"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("get -o DIR: %v", err)
	}
}

// A server that accepts and never answers, or stops sending, fails the
// download with the timeout that ran out, not a hang.
func TestGetTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	start := time.Now()
	_, _, err = runGetTest(t, "--response-timeout", "300ms", "http://"+ln.Addr().String()+"/x")
	if err == nil || !strings.Contains(err.Error(), "--response-timeout") || time.Since(start) > 10*time.Second {
		t.Errorf("silent server: %v after %v", err, time.Since(start))
	}
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer stall.Close()
	out := filepath.Join(t.TempDir(), "o")
	_, _, err = runGetTest(t, "--idle-timeout", "300ms", "-o", out, stall.URL+"/x")
	if err == nil || !strings.Contains(err.Error(), "--idle-timeout") {
		t.Errorf("stalled body: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("stalled download left %s: %v", out, err)
	}
	if _, _, err := runGetTest(t, "--idle-timeout", "0s", stall.URL); err == nil {
		t.Error("--idle-timeout 0s accepted")
	}
}

// Errors say what happened: h2c against an HTTP/1.1-only server, a server
// policy given to the client (before connecting), SMig over TLS timed.
func TestGetClearErrors(t *testing.T) {
	h1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer h1.Close()
	_, _, err := runGetTest(t, "--h2c", h1.URL+"/")
	if err == nil || !strings.Contains(err.Error(), "answered in HTTP/1.x") {
		t.Errorf("h2c against HTTP/1.1: %v", err)
	}
	// Port 1 refuses connections: the policy error must come first.
	_, _, err = runGetTest(t, "--smig", "migsw", "--h2c", "http://127.0.0.1:1/")
	if err == nil || !strings.Contains(err.Error(), "a server policy") {
		t.Errorf("--smig migsw: %v", err)
	}
	base := startServe(t, "--tls", "--smig", "migsw:1M")
	_, stderr, err := runGetTest(t, "--insecure", "--smig", "nomig", base+"/gen/10KB")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "tls 0.00 ms") || !strings.Contains(stderr, ", tls ") {
		t.Errorf("SMig over TLS: %q, want a measured TLS time", stderr)
	}
}
