package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runMain runs Main with stdout and stderr captured.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(dir, "err"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, errf
	code = Main(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return code, string(o), string(e)
}

// Help asked for is output (stdout, exit 0) and runs nothing; a mistake is
// an error (stderr, non-zero).
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help", "help"}, {"--help", "-h"}, {"net", "--help"}, {"net", "cleanup", "--help"}, {"replay", "--help"}, {"get", "-h"}, {"bench", "--help"}, {"net", "shell", "--help"}} {
		code, out, errOut := runMain(t, args...)
		if code != 0 || !strings.Contains(out, "usage: shunt") || errOut != "" {
			t.Errorf("shunt %v: exit %d, stdout %q, stderr %q; want usage on stdout and exit 0", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{{}, {"nosuchcommand"}, {"net"}, {"net", "cleanup", "--bogus"}, {"net", "cleanup", "extra"}, {"bench", "--list", "extra"}} {
		if code, _, errOut := runMain(t, args...); code == 0 || errOut == "" {
			t.Errorf("shunt %v: exit %d, stderr %q; want an error", args, code, errOut)
		}
	}
	if code, out, _ := runMain(t, "net", "cleanup", "--help"); code != 0 || strings.Contains(out, "removed") {
		t.Errorf("net cleanup --help cleaned up: %q", out)
	}
	// TEAM.md and the bench's notes send readers to `shunt help bench`.
	for _, name := range []string{"bench", "get", "net"} {
		code, out, errOut := runMain(t, "help", name)
		if code != 0 || !strings.HasPrefix(out, "usage: shunt "+name+" ") || errOut != "" {
			t.Errorf("shunt help %s: exit %d, stdout %.80q, stderr %q; want %s's usage on stdout and exit 0", name, code, out, errOut, name)
		}
	}
	if code, _, errOut := runMain(t, "help", "nosuchcommand"); code == 0 || errOut == "" {
		t.Errorf("shunt help nosuchcommand: exit %d, stderr %q; want an error", code, errOut)
	}
	if helpAsked([]string{"--delay", "1ms", "--", "ls", "--help"}) {
		t.Error("a --help after -- belongs to the command net shell runs")
	}
}
