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

	"github.com/shunt-net/shunt/internal/shared"
	"github.com/shunt-net/shunt/netem"
)

// resolveTrace makes the file of a link's trace reference
// (netem.ParseTraceRef) findable, so shipped scenarios work from any
// directory: an absolute path, or a relative one that exists from the
// working directory, is used as it is; "shared/..." is looked up in the
// shared data directory (internal/shared: the traces of shared/traces); any
// other relative path is taken from the repository root (the directory
// holding go.mod above the working directory), where shipped step files sit
// beside their scenarios, or, outside a repository, from the files built
// into shunt (f.Shipped). The result is the reference with its file
// resolved, in netem.TraceRef syntax.
func (f *Factory) resolveTrace(text string) (string, error) {
	ref, err := netem.ParseTraceRef(text)
	if err != nil {
		return "", err
	}
	if ref.File, err = f.traceFile(ref.File); err != nil {
		return "", err
	}
	return ref.String(), nil
}

func (f *Factory) traceFile(file string) (string, error) {
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
	if f.Shipped == nil {
		return "", fmt.Errorf("trace %s: not found from the working directory, and no repository (go.mod) above it", file)
	}
	data, err := f.Shipped(file)
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
