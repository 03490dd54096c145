package cli

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/internal/faults"
)

// Two "paths" bound to loopback source addresses: the download is split,
// written at offsets, verified and summarised per path.
func TestGetMultipath(t *testing.T) {
	base := startServe(t)
	file := filepath.Join(t.TempDir(), "obj")
	for _, extra := range [][]string{nil, {"--size", "3MiB", "--end-adjust", "rst"}, {"--no-pipelining", "--http1.1"}} {
		args := append([]string{base + "/gen/3MiB", "-o", file, "--path", "127.0.0.1", "--path", "127.0.0.2"}, extra...)
		_, stderr, err := runGetTest(t, args...)
		if err != nil {
			t.Fatalf("get %v: %v\n%s", extra, err, stderr)
		}
		got, err := os.ReadFile(file)
		if err != nil || !bytes.Equal(got, gen(0, 3<<20)) {
			t.Fatalf("get %v: -o file: %d bytes, %v; want the 3 MiB generated object", extra, len(got), err)
		}
		digest := content.Digest(3 << 20)
		for _, want := range []string{
			"sha256 " + hex.EncodeToString(digest[:]) + "  length 3145728",
			"verified: bytes 0-3145727 of /gen/3MiB match the generator",
			"127.0.0.1 ", "127.0.0.2 ", "tail bytes ",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("get %v: stderr lacks %q:\n%s", extra, want, stderr)
			}
		}
	}
}

func TestGetMultipathFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"http://x/", "--size", "1MB"}, "need --path"},
		{[]string{"http://x/", "--path", "lo", "--range", "0-1"}, "exclude each other"},
		{[]string{"http://x/", "--path", "lo", "--end-adjust", "x"}, "want flow or rst"},
		{[]string{"http://x/", "--path", "lo", "--size", "x"}, "--size"},
		{[]string{"http://x/", "--path", "=y"}, "IFACE_OR_ADDR"},
		{[]string{"http://x/", "--mode", "handover"}, "need --path"},
		{[]string{"http://x/", "--budget", "lo=1MB"}, "need --path"},
		{[]string{"http://x/", "--path", "lo", "--mode", "fast"}, "want aggregate, handover or interactive"},
		{[]string{"http://x/", "--path", "lo", "--budget", "lo"}, "want PATH=SIZE"},
		{[]string{"http://x/", "--path", "lo", "--budget", "lo=0"}, "want a positive size"},
		{[]string{"http://x/", "--path", "lo", "--budget", "wifi=1MB"}, "--budget wifi: no --path wifi"},
		{[]string{"http://x/", "--path", "lo", "--mode", "handover", "--handover-after", "0s"}, "want a positive duration"},
	} {
		_, _, err := runGetTest(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("get %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// Modes and budgets from the command line: the record of the path in use
// and the budget's use are printed, and the object is whole and verified;
// a path pinned to an interface that does not exist fails before anything
// is sent, naming it.
func TestGetMultipathModesAndBudget(t *testing.T) {
	base := startServe(t)
	file := filepath.Join(t.TempDir(), "obj")
	for _, v := range []struct {
		extra []string
		want  []string
	}{
		{[]string{"--mode", "handover"}, []string{"mode handover: path 127.0.0.1 at the start"}},
		// Interactive starts on the path whose handshake ends first.
		{[]string{"--mode", "interactive"}, []string{"mode interactive: path 127.0.0."}},
		{[]string{"--budget", "127.0.0.2=1MB"}, []string{"budget 127.0.0.2: received "}},
	} {
		args := append([]string{base + "/gen/3MiB", "-o", file, "--path", "127.0.0.1", "--path", "127.0.0.2"}, v.extra...)
		_, stderr, err := runGetTest(t, args...)
		if err != nil {
			t.Fatalf("get %v: %v\n%s", v.extra, err, stderr)
		}
		got, err := os.ReadFile(file)
		if err != nil || !bytes.Equal(got, gen(0, 3<<20)) {
			t.Fatalf("get %v: -o file: %d bytes, %v; want the 3 MiB generated object", v.extra, len(got), err)
		}
		for _, w := range v.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("get %v: stderr lacks %q:\n%s", v.extra, w, stderr)
			}
		}
	}
	_, _, err := runGetTest(t, base+"/gen/1KB", "-o", file, "--path", "127.0.0.1", "--path", "nosuch-mpt1")
	if err == nil || !strings.Contains(err.Error(), "path nosuch-mpt1: interface nosuch-mpt1 does not exist") {
		t.Errorf("get over a missing interface: %v", err)
	}
}

// shunt get over one path and over two (MP-H2): the server dies 4 MiB into
// a 32 MiB object and is back 1.5 s later. The paths' connections are
// redialed and the ranges they owed asked again; the file is whole
// (length and SHA-256 checked). Before, get failed ("all 2 paths down").
func TestGetMultipathSurvivesServerRestart(t *testing.T) {
	gen, err := content.NewHandler("")
	if err != nil {
		t.Fatal(err)
	}
	tally := faults.New(t)
	const size = 32 << 20
	for _, paths := range [][]string{{"--path", "127.0.0.1"}, {"--path", "127.0.0.1", "--path", "127.0.0.2"}} {
		t.Run(strings.Join(paths, " "), func(t *testing.T) {
			s := &dyingServer{t: t, addr: "127.0.0.1:0", h: gen, after: 4 << 20, sent: make(chan struct{})}
			s.start()
			out := filepath.Join(t.TempDir(), "obj")
			r := getAcrossRestart(t, s, tally, 1500*time.Millisecond, append(paths, "-o", out, "http://"+s.addr+"/gen/32MiB"))
			defer s.kill()
			r.verify(t, tally, out, size, "connection lost and redialed")
		})
	}
}
