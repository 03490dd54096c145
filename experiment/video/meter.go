package video

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shunt-net/shunt/dash"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/origin"
	"github.com/shunt-net/shunt/mph2"
)

// The Info keys of what each path received during a Go player's playback
// (TCP payload from the kernel's counters, HTTP/2 framing included; for
// MPTCP per subflow), PATH the path's name: kB per media segment (an init
// segment counts with the segment after it) and, every MeterTick since the
// playback started, kB so far. They show which path carried a segment and
// when each path delivered, for every scheme alike.
const (
	SegmentKBInfo = "segment_kb_"
	TimelineInfo  = "path_kb_100ms_"
	MeterTick     = 100 * time.Millisecond
)

// The Counts key of the ticks the timeline lacks (the playback's length
// over MeterTick, minus the ticks read) and the Info key of the longest time
// between two readings of the timeline (seconds): a gap of several ticks
// means the process did not run for that long, and the timeline's bytes
// after it belong to the whole gap.
const (
	TicksMissedCount = "meter_ticks_missed"
	LongestGapInfo   = "meter_longest_gap_s"
)

// The Info keys of what MP-H2's own download of each media segment says of
// path PATH (modes mph2*): when its first and last byte arrived, in ms since
// the download began, and its bandwidth estimate at the end in Mbit/s (with
// a Cache, what the next download's split starts from).
const (
	SegmentFirstInfo = "segment_first_ms_"
	SegmentLastInfo  = "segment_last_ms_"
	SegmentBWInfo    = "segment_bw_end_"
)

// pathMeter reads each path's received bytes after every media segment and
// every tick, relative to what the warm-up left.
type pathMeter struct {
	read  func() (map[string]int64, error)
	paths []string
	inits map[string]bool // init segments' URLs: not the end of a segment

	mu     sync.Mutex
	base   map[string]int64
	segs   []map[string]int64 // so far, at each media segment's end
	ticks  []map[string]int64 // so far, at each tick
	tickAt []time.Duration    // when each tick was read, since start
	mph2   []*mph2.Result     // MP-H2's download of each media segment
	ran    time.Duration      // start to stop
	err    error              // the first failed read
	cancel context.CancelFunc
	done   chan struct{}
}

// newMeter reads the base; tick must be called for the timeline.
func newMeter(read func() (map[string]int64, error), paths []string, m *dash.Manifest) (*pathMeter, error) {
	base, err := read()
	if err != nil {
		return nil, err
	}
	inits := map[string]bool{}
	for _, r := range m.Reps {
		if r.Init.URL != "" {
			inits[r.Init.URL] = true
		}
	}
	return &pathMeter{read: read, paths: paths, inits: inits, base: base}, nil
}

// startMeter meters conns from now, ticking every MeterTick until stop.
func startMeter(conns *origin.PathConns, paths []experiment.PathInfo, m *dash.Manifest) (*pathMeter, error) {
	var names []string
	for _, p := range paths {
		names = append(names, p.Name)
	}
	pm, err := newMeter(func() (map[string]int64, error) { return conns.Received(paths) }, names, m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	pm.cancel, pm.done = cancel, make(chan struct{})
	start := time.Now()
	go func() {
		defer close(pm.done)
		t := time.NewTicker(MeterTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				pm.mu.Lock()
				pm.ran = time.Since(start)
				pm.mu.Unlock()
				return
			case <-t.C:
				pm.mark(&pm.ticks)
				pm.mu.Lock()
				pm.tickAt = append(pm.tickAt, time.Since(start))
				pm.mu.Unlock()
			}
		}
	}()
	return pm, nil
}

// stop ends the ticks; its error is the first failed read.
func (pm *pathMeter) stop() error {
	pm.cancel()
	<-pm.done
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return pm.err
}

// tickGaps is how many ticks of period tick a timeline read at the times at
// (since its start) lacks over ran, and the longest time between two
// readings (the start and the end included).
func tickGaps(at []time.Duration, ran, tick time.Duration) (missed int, longest time.Duration) {
	prev := time.Duration(0)
	for _, t := range append(at, ran) {
		longest = max(longest, t-prev)
		prev = t
	}
	return max(int(ran/tick)-len(at), 0), longest
}

// gaps is tickGaps of the meter's timeline, once stopped.
func (pm *pathMeter) gaps() (missed int, longest time.Duration) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return tickGaps(pm.tickAt, pm.ran, MeterTick)
}

// mark appends a reading to *to.
func (pm *pathMeter) mark(to *[]map[string]int64) {
	now, err := pm.read()
	pm.mu.Lock()
	defer pm.mu.Unlock()
	switch {
	case err == nil:
		*to = append(*to, now)
	case pm.err == nil:
		pm.err = err
	}
}

// segmentDone marks the end of a fetch, a media segment's unless s is an
// init segment.
func (pm *pathMeter) segmentDone(s dash.Segment) {
	if !pm.inits[s.URL] {
		pm.mark(&pm.segs)
	}
}

// downloaded keeps MP-H2's result for a media segment (dash.MPH2.Done).
func (pm *pathMeter) downloaded(s dash.Segment, res *mph2.Result) {
	if pm.inits[s.URL] {
		return
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.mph2 = append(pm.mph2, res)
}

// info is the record's per-path keys.
func (pm *pathMeter) info() map[string]string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	out := map[string]string{}
	for _, p := range pm.paths {
		var seg, tl []string
		prev := pm.base[p]
		for _, r := range pm.segs {
			seg = append(seg, strconv.FormatInt((r[p]-prev)/1000, 10))
			prev = r[p]
		}
		for _, r := range pm.ticks {
			tl = append(tl, strconv.FormatInt((r[p]-pm.base[p])/1000, 10))
		}
		out[SegmentKBInfo+p] = strings.Join(seg, ",")
		out[TimelineInfo+p] = strings.Join(tl, ",")
	}
	for i, p := range pm.paths {
		var first, last, bw []string
		for _, r := range pm.mph2 {
			if i >= len(r.Paths) {
				continue
			}
			pr := r.Paths[i]
			first = append(first, strconv.FormatInt(pr.FirstData.Milliseconds(), 10))
			last = append(last, strconv.FormatInt(pr.LastData.Milliseconds(), 10))
			bw = append(bw, strconv.FormatFloat(pr.Bandwidth*8/1e6, 'f', 2, 64))
		}
		if len(pm.mph2) > 0 {
			out[SegmentFirstInfo+p] = strings.Join(first, ",")
			out[SegmentLastInfo+p] = strings.Join(last, ",")
			out[SegmentBWInfo+p] = strings.Join(bw, ",")
		}
	}
	return out
}

// meteredFetcher marks the meter after every fetch.
type meteredFetcher struct {
	dash.Fetcher
	m *pathMeter
}

func (f meteredFetcher) Fetch(ctx context.Context, s dash.Segment, started func()) ([]byte, error) {
	data, err := f.Fetcher.Fetch(ctx, s, started)
	if err == nil {
		f.m.segmentDone(s)
	}
	return data, err
}
