package report

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/video"
)

const dashScenario = `
name: d
reps: 3
seed: 1
conditions:
  - {name: w3-l7, topology: single, paths: [{name: l, down: {rate: 10Mbit}, up: {rate: 10Mbit}}]}
protocols:
  - {name: mph2, driver: dash}
  - {name: msplayer, driver: dash}
objects:
  - {name: video}
`

// A playback record whose segments climb from 253 kbit/s to top, one per 6 s.
func dashRecord(r *experiment.Run, top int) *experiment.Record {
	kbps := []string{"253", "1589"}
	starts := []string{"0.00", "6.00"}
	if top > 0 {
		kbps = append(kbps, strconv.Itoa(top))
		starts = append(starts, "12.00")
	}
	return &experiment.Record{Run: *r, Metrics: map[string]float64{"kbit_per_s": float64(top)},
		Info: map[string]string{video.SegmentKbpsInfo: strings.Join(kbps, ","), video.SegmentStartInfo: strings.Join(starts, ",")}}
}

func TestBitrateSectionDrawsTheMedianPlayback(t *testing.T) {
	dir, sc := newSweepDir(t, dashScenario)
	var recs []*experiment.Record
	for _, r := range bench.Plan(sc) {
		top := 4000 + 1000*r.Rep // reps 0, 1, 2: 4000, 5000, 6000; the median is rep 1
		if r.Protocol.Name == "msplayer" {
			top /= 2
		}
		recs = append(recs, dashRecord(r, top))
	}
	if err := experiment.WriteRecords(filepath.Join(dir, bench.RunsFile), recs); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Write(dir, Options{Now: func() time.Time { return time.Unix(0, 0) }}); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".png", ".svg"} {
		if fi, err := os.Stat(filepath.Join(dir, PlotsDir, "bitrate-d"+ext)); err != nil || fi.Size() < 1000 {
			t.Errorf("bitrate-d%s: %v", ext, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Bitrate over time", "mph2 (run ", ", 5000 kbit/s)", "msplayer (run ", ", 2500 kbit/s)", "segment bitrate (kbit/s)"} {
		if !strings.Contains(string(page), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
}

func TestSegmentStepsRefusesMismatchedInfo(t *testing.T) {
	r := &experiment.Record{Run: experiment.Run{ID: "x"}, Info: map[string]string{video.SegmentKbpsInfo: "253,1589", video.SegmentStartInfo: "0.00"}}
	if _, err := segmentSteps(r); err == nil || !strings.Contains(err.Error(), "2 segment rungs but 1 start times") {
		t.Errorf("mismatched info: %v", err)
	}
	r.Info[video.SegmentStartInfo] = "0.00,six"
	if _, err := segmentSteps(r); err == nil || !strings.Contains(err.Error(), "segment 1 start") {
		t.Errorf("bad start: %v", err)
	}
	r.Info[video.SegmentStartInfo] = "0.00,6.00"
	pts, err := segmentSteps(r)
	// The last segment's step lasts as long as the one before it.
	if err != nil || len(pts) != 3 || pts[1].X != 6 || pts[1].Y != 1589 || pts[2].X != 12 || pts[2].Y != 1589 {
		t.Errorf("steps %v, %v", pts, err)
	}
}
