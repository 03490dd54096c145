package cli

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/content"
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
	} {
		_, _, err := runGetTest(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("get %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
