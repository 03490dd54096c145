package emulated

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/internal/shared"
)

// TraceFile is the file a link's trace text (netem.LoadTrace syntax, with
// an optional "trace:" or "step:" prefix) names, so shipped scenarios work
// from any directory: an absolute path, or a relative one that exists from
// the working directory, is used as it is; "shared/..." is looked up in the
// shared data directory (internal/shared: the traces of shared/traces);
// any other relative path is taken from the repository root (the directory
// holding go.mod above the working directory), where shipped step files
// sit beside their scenarios, or, outside a repository, from the copy of
// bench/scenarios built into shunt.
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
	if root, err := repoRoot(); err == nil {
		return filepath.Join(root, file), nil
	}
	// Outside the repository: a step file shipped inside the binary.
	data, err := bench.ShippedFile(file)
	if err != nil {
		return "", fmt.Errorf("trace %s: not found from the working directory, no repository (go.mod) above it, and %w", file, err)
	}
	return materialise(file, data)
}

// materialise writes a shipped file where netem can open it by name: one
// file per content under the temporary directory, so concurrent runs and
// different builds never see each other's half-written copies.
func materialise(name string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	p := filepath.Join(os.TempDir(), "shunt-shipped", hex.EncodeToString(sum[:8])+"-"+filepath.Base(name))
	if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, data) {
		return p, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
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
