package interop

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/peers"
)

// shuntBin is the shunt binary built once for all tests; buildErr says why
// there is none.
var shuntBin, buildErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shunt-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shuntBin, buildErr = buildShunt(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildShunt(dir string) (string, error) {
	bin := filepath.Join(dir, "shunt")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/shunt-net/shunt/cmd/shunt")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

func needShunt(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("no shunt binary: %v", buildErr)
	}
}

func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := peers.Available(n); err != nil {
			t.Skipf("skipping: %v", err)
		}
	}
}

// shuntServer is a running `shunt serve`.
type shuntServer struct {
	base string // scheme://host:port
	addr string
	pid  int
	// stop stops the server (once; cleanup calls it too) and returns what
	// it wrote on stderr, complete only once it has exited.
	stop func() string
}

func (s *shuntServer) url(path string) string { return s.base + path }

// startShunt runs `shunt serve --root root --addr 127.0.0.1:0 [--tls]
// [extra...]` and reads the listening address from its first stdout line.
func startShunt(t *testing.T, root string, tls bool, extra ...string) *shuntServer {
	t.Helper()
	args := []string{"serve", "--root", root, "--addr", "127.0.0.1:0"}
	scheme := "http"
	if tls {
		args, scheme = append(args, "--tls"), "https"
	}
	return startListening(t, scheme, append(args, extra...)...)
}

// startListening runs `shunt args...`, a command whose first stdout line
// is "listening on SCHEME://HOST:PORT" (serve, proxy), until the test ends.
func startListening(t *testing.T, scheme string, args ...string) *shuntServer {
	t.Helper()
	needShunt(t)
	cmd := exec.Command(shuntBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("shunt %s: %v", strings.Join(args, " "), err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout) // keep the server from blocking on a full pipe
	}()
	var stopOnce sync.Once
	stop := func() string {
		stopOnce.Do(func() {
			// SIGTERM first: a graceful shutdown that hangs is a bug worth seeing.
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Errorf("shunt %s did not exit within 5s of SIGTERM", args[0])
			}
		})
		return stderr.String()
	}
	go func() { exited <- cmd.Wait() }()
	var line string
	select {
	case line = <-lines:
	case <-time.After(10 * time.Second):
	}
	want := "listening on " + scheme + "://"
	base, ok := strings.CutPrefix(line, "listening on ")
	if !strings.HasPrefix(line, want) {
		cmd.Process.Kill()
		<-exited
		t.Fatalf("shunt %s: first stdout line %q, want %q...; stderr:\n%s", strings.Join(args, " "), line, want, stderr)
	}
	_, addr, _ := strings.Cut(base, "://")
	if _, port, err := net.SplitHostPort(addr); !ok || err != nil || port == "0" {
		stop()
		t.Fatalf("shunt %s: bad address in %q", args[0], line)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("shunt %s stderr:\n%s", strings.Join(args, " "), stderr)
		}
	})
	return &shuntServer{base: base, addr: addr, pid: cmd.Process.Pid, stop: stop}
}

// writeRandom writes n random bytes to dir/name and returns them.
func writeRandom(t *testing.T, dir, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// generated returns the bytes of /gen/<size> as the content package defines
// them, so downloads are checked against the generator, not the server.
func generated(t *testing.T, size string) []byte {
	t.Helper()
	n, err := content.ParseSize(size)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	content.GenAt(b, 0)
	return b
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func splitHostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("port of %q: %v", addr, err)
	}
	return host, port
}
