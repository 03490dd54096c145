package cli

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

// shunt play runs the dash experiment on loopback from flags and writes the
// same record shunt bench does.
func TestPlay(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg missing (bash scripts/setup installs it)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("bash", "../../../scripts/dash-content", dir, "12").CombinedOutput(); err != nil {
		t.Fatalf("scripts/dash-content: %v\n%s", err, out)
	}
	js := filepath.Join(t.TempDir(), "runs.jsonl")
	var out, errw bytes.Buffer
	err := runPlay(context.Background(), []string{filepath.Join(dir, "video.mpd"), "--mode", "msplayer", "--abr", "bola", "--json", js}, &out, &errw)
	if err != nil {
		t.Fatalf("%v\n%s", err, errw.String())
	}
	if !strings.Contains(out.String(), "(msplayer, bola) over loopback") || !strings.Contains(out.String(), "segment kbit/s: ") {
		t.Fatalf("output:\n%s", out.String())
	}
	recs, err := experiment.ReadRecords(js)
	if err != nil || len(recs) != 1 || recs[0].Protocol.Driver != "dash" || recs[0].Protocol.Params["mode"] != "msplayer" || recs[0].Counts["segments"] != 2 {
		t.Fatalf("records %+v, %v", recs, err)
	}
	if err := runPlay(context.Background(), []string{dir, "--mode", "mhttp"}, &out, &errw); err == nil || !strings.Contains(err.Error(), "--chunk") {
		t.Fatalf("mhttp without --chunk: %v", err)
	}
}
