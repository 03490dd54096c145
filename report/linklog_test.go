package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLinkLogSections(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "linklog", "wired")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	// Two packets: one queued 1.2 ms (its own serialisation), one 5 ms; one drop.
	log := `# shunt netem link log v1
# link: rate=10Mbit delay=25ms loss=0 queue=droptail:packets=1
# seed: 9
# base timestamp: 5000000123
0.000 + 1500 ab
0.001 + 1500 cd
0.002 d 100 queue cd
1.200 - 1500 1.200 ab
6.001 - 1500 5.000 cd
`
	if err := os.WriteFile(filepath.Join(logs, "down.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	plots := filepath.Join(dir, "plots")
	secs, err := LinkLogSections(filepath.Join(dir, "linklog"), plots)
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 1 {
		t.Fatalf("%d sections, want 1", len(secs))
	}
	body := string(secs[0].Body)
	for _, want := range []string{"<svg", "2 packets in, 2 out", "max 5.000 ms", "queue:1"} {
		if !strings.Contains(body, want) {
			t.Errorf("section lacks %q:\n%.400s", want, body)
		}
	}
	if secs[0].Title != "Link log wired/down.log" {
		t.Errorf("title %q", secs[0].Title)
	}
	if _, err := os.Stat(filepath.Join(plots, "linklog-wired-down.png")); err != nil {
		t.Error(err)
	}
	// No logs, no sections and no error: --link-log is optional.
	if secs, err := LinkLogSections(filepath.Join(dir, "none"), plots); err != nil || secs != nil {
		t.Errorf("missing dir: %v, %v", secs, err)
	}
}
