package dash

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shunt-net/shunt/internal/ctxtime"
)

// Clock is the player's time: the wall clock in runs, a fake one in tests.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// WallClock is the real time.
type WallClock struct{}

func (WallClock) Now() time.Time { return time.Now() }

func (WallClock) Sleep(ctx context.Context, d time.Duration) error { return ctxtime.Sleep(ctx, d) }

// Fetcher fetches one segment whole. It returns exactly the segment's bytes
// or an error: never a short or padded body. It calls started once, when
// the fetch's first response headers have arrived: ExoPlayer's
// DefaultHttpDataSource calls transferStarted there, after the response
// code and headers are read, and DefaultBandwidthMeter's sample starts with
// it. A fetcher that splits one segment over several requests (MP-H2,
// MSPlayer, mHTTP) is one transfer to the player, started by the first of
// its responses.
type Fetcher interface {
	Fetch(ctx context.Context, s Segment, started func()) ([]byte, error)
}

// Player plays a Manifest: it fetches segment after segment (the next one as
// soon as the buffer has room, as ExoPlayer's DefaultLoadControl does) and
// plays them back on Clock.
type Player struct {
	Manifest *Manifest
	ABR      ABR
	Fetcher  Fetcher
	Clock    Clock
	// Verify, if set, checks each fetched segment's bytes (a hash of the
	// served file); a mismatch ends the run with an error.
	Verify func(s Segment, data []byte) error
	// ExoPlayer DefaultLoadControl's defaults: 50 s buffer cap, play after
	// 2.5 s buffered, resume after a stall with 5 s.
	MaxBuffer, StartBuffer, ResumeBuffer time.Duration
	// Segments, if positive, plays only the first this many segments.
	Segments int
}

// DefaultLoad sets ExoPlayer's load-control defaults where unset.
func (p *Player) defaults() {
	if p.MaxBuffer == 0 {
		p.MaxBuffer = 50 * time.Second
	}
	if p.StartBuffer == 0 {
		p.StartBuffer = 2500 * time.Millisecond
	}
	if p.ResumeBuffer == 0 {
		p.ResumeBuffer = 5 * time.Second
	}
	if p.Clock == nil {
		p.Clock = WallClock{}
	}
}

// Stall is one rebuffering: when it started (since the player started) and
// how long playback stood still.
type Stall struct {
	At, Duration time.Duration
}

// SegmentLog is one fetched segment.
type SegmentLog struct {
	Index   int
	Rep     int
	Bitrate int64 // the representation's declared bit/s
	Bytes   int64
	Start   time.Duration // fetch start, since the player started
	Fetch   time.Duration // request to last byte (init segment included on a switch)
	Buffer  time.Duration // buffered media when the fetch ended, this segment included
	// Sample is the segment's transfer as the ABR's meter timed it; Init is
	// its representation's init segment's, a transfer and sample of its
	// own (InitializationChunk), zero unless fetched with this segment.
	Sample, Init Transfer
}

// Transfer is one fetch as ExoPlayer's bandwidth meter times it, since the
// player started: from its response headers (transferStarted) to its last
// byte (transferEnd), so the request's round trip is not in the sample.
type Transfer struct {
	Bytes      int64
	Start, End time.Duration
}

// Result is one playback.
type Result struct {
	Startup  time.Duration // player start to first frame
	Stalls   []Stall
	Switches int
	Segments []SegmentLog
	Media    time.Duration // media played (segments x segment duration)
}

// AvgBitrate is the mean declared bitrate of the played segments, bit/s.
func (r *Result) AvgBitrate() float64 {
	if len(r.Segments) == 0 {
		return 0
	}
	var s float64
	for _, g := range r.Segments {
		s += float64(g.Bitrate)
	}
	return s / float64(len(r.Segments))
}

// StallTime is the total rebuffering time (startup excluded).
func (r *Result) StallTime() time.Duration {
	var d time.Duration
	for _, s := range r.Stalls {
		d += s.Duration
	}
	return d
}

// RebufferRatio is stall time over the video's length (MP-H2 §5.4).
func (r *Result) RebufferRatio() float64 {
	if r.Media <= 0 {
		return 0
	}
	return r.StallTime().Seconds() / r.Media.Seconds()
}

// playback is the buffer and playhead: media buffered ahead, whether it
// plays, and when it ran dry.
type playback struct {
	begin, last time.Time
	level       time.Duration
	started     bool
	playing     bool
	dryAt       time.Time
}

// advance plays from the last instant to now; running dry stops playback
// at the moment the buffer empties.
func (b *playback) advance(now time.Time) {
	if b.playing {
		el := now.Sub(b.last)
		if el >= b.level {
			b.dryAt = b.last.Add(b.level)
			b.level, b.playing = 0, false
		} else {
			b.level -= el
		}
	}
	b.last = now
}

// Play fetches and plays the manifest to its end, or fails on the first
// segment that cannot be fetched whole and verified: a segment is never
// skipped.
func (p *Player) Play(ctx context.Context) (*Result, error) {
	p.defaults()
	m := p.Manifest
	if m == nil || len(m.Reps) == 0 || m.SegmentDuration <= 0 {
		return nil, errors.New("dash: Player needs a Manifest with representations")
	}
	n := len(m.Reps[0].Segments)
	if p.Segments > 0 {
		n = min(n, p.Segments)
	}
	bitrates := make([]int64, len(m.Reps))
	for i, r := range m.Reps {
		bitrates[i] = r.Bandwidth
	}
	now := p.Clock.Now()
	pb := &playback{begin: now, last: now}
	res := &Result{}
	haveInit := map[int]bool{}
	cur := -1
	for i := range n {
		// Wait for room: the next segment is fetched once it fits under MaxBuffer.
		if room := pb.level + m.SegmentDuration - p.MaxBuffer; room > 0 && pb.playing {
			if err := p.Clock.Sleep(ctx, room); err != nil {
				return res, err
			}
			pb.advance(p.Clock.Now())
		}
		rep := p.ABR.Choose(State{Buffer: pb.level, Current: cur, Bitrates: bitrates, SegDur: m.SegmentDuration})
		if rep < 0 || rep >= len(m.Reps) {
			return res, fmt.Errorf("dash: ABR chose representation %d of %d", rep, len(m.Reps))
		}
		if cur >= 0 && rep != cur {
			res.Switches++
		}
		cur = rep
		start := p.Clock.Now()
		var init Transfer
		if r := m.Reps[rep]; r.Init.URL != "" && !haveInit[rep] {
			t, err := p.transfer(ctx, r.Init, "init segment of representation "+r.ID, pb.begin)
			if err != nil {
				return res, err
			}
			haveInit[rep] = true
			init = t
		}
		seg := m.Reps[rep].Segments[i]
		sample, err := p.transfer(ctx, seg, fmt.Sprintf("segment %d of representation %s", i, m.Reps[rep].ID), pb.begin)
		if err != nil {
			return res, err
		}
		end := pb.begin.Add(sample.End)
		pb.advance(end)
		pb.level += m.SegmentDuration
		if !pb.playing {
			thr := p.ResumeBuffer
			if !pb.started {
				thr = p.StartBuffer
			}
			if pb.level >= thr || i == n-1 {
				pb.playing = true
				if !pb.started {
					pb.started = true
					res.Startup = end.Sub(pb.begin)
				} else {
					res.Stalls = append(res.Stalls, Stall{At: pb.dryAt.Sub(pb.begin), Duration: end.Sub(pb.dryAt)})
				}
			}
		}
		res.Segments = append(res.Segments, SegmentLog{Index: i, Rep: rep, Bitrate: m.Reps[rep].Bandwidth, Bytes: sample.Bytes,
			Start: start.Sub(pb.begin), Fetch: end.Sub(start), Buffer: pb.level, Sample: sample, Init: init})
	}
	res.Media = time.Duration(n) * m.SegmentDuration
	return res, nil
}

// transfer fetches s, checks it and gives the ABR its sample: the bytes
// over the time from the response headers to the last byte, as
// DefaultBandwidthMeter takes one per transfer. The check (Verify) is this
// harness's, after the last byte, so it is not in the sample. Times are
// since begin.
func (p *Player) transfer(ctx context.Context, s Segment, what string, begin time.Time) (Transfer, error) {
	var mu sync.Mutex // started may run on a fetcher's goroutine
	req := p.Clock.Now()
	headers := req // a fetcher that never reports its headers is timed from its request
	data, err := p.Fetcher.Fetch(ctx, s, func() {
		now := p.Clock.Now()
		mu.Lock()
		headers = now
		mu.Unlock()
	})
	end := p.Clock.Now()
	if err != nil {
		return Transfer{}, fmt.Errorf("dash: %s (%s): %w", what, s.URL, err)
	}
	if s.Size > 0 && int64(len(data)) != s.Size {
		return Transfer{}, fmt.Errorf("dash: %s (%s): %d bytes, the manifest says %d", what, s.URL, len(data), s.Size)
	}
	if p.Verify != nil {
		if err := p.Verify(s, data); err != nil {
			return Transfer{}, fmt.Errorf("dash: %s (%s): %w", what, s.URL, err)
		}
	}
	mu.Lock()
	t := Transfer{Bytes: int64(len(data)), Start: headers.Sub(begin), End: end.Sub(begin)}
	mu.Unlock()
	p.ABR.Observe(t.Bytes, t.End-t.Start)
	return t, nil
}
