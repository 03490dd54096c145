package emulated

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shunt-net/shunt/internal/shared"
)

// TraceFile is the file a link's trace text (netem.LoadTrace syntax, with
// an optional "trace:" or "step:" prefix) names, so shipped scenarios work
// from any directory: an absolute path, or a relative one that exists from
// the working directory, is used as it is; "shared/..." is looked up in the
// shared data directory (internal/shared: the traces of shared/traces);
// any other relative path is taken from the repository root (the directory
// holding go.mod above the working directory), where shipped step files
// sit beside their scenarios.
func TraceFile(text string) (string, error) {
	file := text
	for _, p := range []string{"trace:", "step:"} {
		file = strings.TrimPrefix(file, p)
	}
	if filepath.IsAbs(file) {
		return file, nil
	}
	if _, err := os.Stat(file); err == nil {
		return file, nil
	}
	if rest, ok := strings.CutPrefix(filepath.ToSlash(file), "shared/"); ok {
		p, err := shared.Path(filepath.FromSlash(rest))
		if err != nil {
			return "", fmt.Errorf("trace %s: %w", file, err)
		}
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf("trace %s: not found from the working directory, and %w", file, err)
	}
	return filepath.Join(root, file), nil
}

// resolveTrace is the trace text with its file made findable (TraceFile),
// keeping its format prefix.
func resolveTrace(text string) (string, error) {
	file, err := TraceFile(text)
	if err != nil {
		return "", err
	}
	for _, p := range []string{"trace:", "step:"} {
		if strings.HasPrefix(text, p) {
			return p + file, nil
		}
	}
	return file, nil
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no repository (go.mod) above the working directory")
		}
	}
}
