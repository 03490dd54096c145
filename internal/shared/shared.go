// Package shared locates the project's shared data (papers, traces, pages),
// which lives beside the repository rather than in it: CI clones main with
// shared/ next to the clone, and developers have it at ../shared too.
package shared

import (
	"errors"
	"os"
	"path/filepath"
)

// Dir returns the shared data directory: $SHUNT_SHARED if set, else the
// first shared/ found beside a directory holding go.mod, walking up from
// the working directory.
func Dir() (string, error) {
	if d := os.Getenv("SHUNT_SHARED"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			cand := filepath.Join(filepath.Dir(d), "shared")
			if st, err := os.Stat(cand); err == nil && st.IsDir() {
				return cand, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", errors.New("shared data not found: set SHUNT_SHARED or put shared/ beside the repository")
		}
	}
}

// Path joins elem to Dir.
func Path(elem ...string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{d}, elem...)...), nil
}
