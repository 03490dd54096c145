package origin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/peers"
)

// Prefix is the argv prefix that runs a command in h's namespace (empty on
// this machine's own).
func Prefix(h experiment.Host) []string {
	probe := h.Command(context.Background(), "true")
	return probe.Args[:len(probe.Args)-1]
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// ShuntBinary is the program running this experiment when it is shunt,
// else a shunt built from this module once per process (tests).
func ShuntBinary(ctx context.Context) (string, error) {
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "shunt" {
		return exe, nil
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "shunt-bin-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "shunt")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", built, "github.com/shunt-net/shunt/cmd/shunt").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/shunt: %v\n%s", err, out)
		}
	})
	return built, buildErr
}

// ServerBinary is the binary to start as server (empty: the one peers
// finds on PATH) and the version to report: binary, or this program for
// shunt when binary is empty. A binary other than shunt's is an error.
func ServerBinary(ctx context.Context, server, binary string) (bin, version string, err error) {
	if server != peers.Shunt {
		if binary != "" {
			return "", "", experiment.Errorf("params.binary", binary, "only with server shunt")
		}
		if version, err = peers.Version(server); err != nil {
			version = server
		}
		return "", version, nil
	}
	if binary != "" {
		return binary, "shunt serve (" + binary + ")", nil
	}
	bin, err = ShuntBinary(ctx)
	return bin, "shunt serve (" + runtime.Version() + ")", err
}
