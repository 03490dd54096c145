package video

import (
	"errors"
	"testing"
	"time"

	"github.com/shunt-net/shunt/dash"
	"github.com/shunt-net/shunt/mph2"
)

// The meter's per-segment split is each media segment's share since the
// warm-up, an init segment counted with the segment after it; its timeline
// is the bytes so far at each tick; a failed read is kept for stop.
func TestPathMeter(t *testing.T) {
	readings := []map[string]int64{
		{"a": 500, "b": 100},     // the base: the warm-up's bytes
		{"a": 1500, "b": 100},    // a tick
		{"a": 3500, "b": 2100},   // segment 0's end
		{"a": 10500, "b": 12100}, // segment 1's end
	}
	i := 0
	read := func() (map[string]int64, error) {
		if i == len(readings) {
			return nil, errors.New("closed")
		}
		i++
		return readings[i-1], nil
	}
	m := &dash.Manifest{Reps: []dash.Rep{{Init: dash.Segment{URL: "http://x/init-1.m4s"}}}}
	pm, err := newMeter(read, []string{"a", "b"}, m)
	if err != nil {
		t.Fatal(err)
	}
	pm.mark(&pm.ticks)
	pm.segmentDone(dash.Segment{URL: "http://x/chunk-1-0.m4s"})
	pm.segmentDone(dash.Segment{URL: "http://x/init-1.m4s"}) // not read
	pm.segmentDone(dash.Segment{URL: "http://x/chunk-1-1.m4s"})
	want := map[string]string{
		SegmentKBInfo + "a": "3,7", SegmentKBInfo + "b": "2,10",
		TimelineInfo + "a": "1", TimelineInfo + "b": "0",
	}
	got := pm.info()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("info %v, want %v", got, want)
	}
	// MP-H2's own account of each media segment, the init's left out.
	pm.downloaded(dash.Segment{URL: "http://x/init-1.m4s"}, &mph2.Result{Paths: []mph2.PathResult{{LastData: time.Second}, {}}})
	pm.downloaded(dash.Segment{URL: "http://x/chunk-1-0.m4s"}, &mph2.Result{Paths: []mph2.PathResult{
		{FirstData: 30 * time.Millisecond, LastData: 400 * time.Millisecond, Bandwidth: 625000},
		{FirstData: 70 * time.Millisecond, LastData: 390 * time.Millisecond, Bandwidth: 250000}}})
	got = pm.info()
	for k, v := range map[string]string{SegmentFirstInfo + "a": "30", SegmentLastInfo + "a": "400", SegmentBWInfo + "a": "5.00",
		SegmentFirstInfo + "b": "70", SegmentLastInfo + "b": "390", SegmentBWInfo + "b": "2.00"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	pm.mark(&pm.ticks)
	if pm.err == nil || len(pm.ticks) != 1 {
		t.Errorf("a failed read: err %v, %d ticks", pm.err, len(pm.ticks))
	}
}

// A timeline read on time lacks no tick; one that went unread for 0.95 s
// lacks the 9 ticks of that gap, and its longest gap says how long it was.
func TestTickGaps(t *testing.T) {
	const tick = 100 * time.Millisecond
	var onTime, stalled []time.Duration
	for i := 1; i <= 30; i++ {
		onTime = append(onTime, time.Duration(i)*tick+time.Millisecond)
		if i <= 10 || i >= 20 {
			stalled = append(stalled, time.Duration(i)*tick+time.Millisecond)
		}
	}
	stalled[10] = 1950 * time.Millisecond // the tick after the gap, late
	for _, c := range []struct {
		name    string
		at      []time.Duration
		missed  int
		longest time.Duration
	}{
		{"on time", onTime, 0, 101 * time.Millisecond},
		{"stalled", stalled, 9, 949 * time.Millisecond},
		{"none", nil, 30, 3050 * time.Millisecond},
	} {
		missed, longest := tickGaps(c.at, 3050*time.Millisecond, tick)
		if missed != c.missed || longest != c.longest {
			t.Errorf("%s: %d missed, longest %v; want %d, %v", c.name, missed, longest, c.missed, c.longest)
		}
	}
}
