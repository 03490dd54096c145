// Package replay walks a page's dependency graph as pReplay does: it starts
// with the page's start activity, starts every activity once its
// dependencies allow, downloads objects through a Fetcher and runs
// computations for their recorded time (or none), and measures the page
// load time from the first request to the completion of the last activity.
//
// Walker is the pure logic: actions out, completion events with their times
// in. Run drives a Walker over a real transport behind the Fetcher
// interface.
package replay

import (
	"fmt"
	"time"

	"github.com/shunt-net/shunt/page"
)

// ActionKind is what a Walker asks its driver to do.
type ActionKind int

const (
	// StartDownload: fetch Object, then report Complete(Activity, done).
	StartDownload ActionKind = iota
	// StartComputation: wait Duration, then report Complete(Activity, done).
	StartComputation
)

func (k ActionKind) String() string {
	switch k {
	case StartDownload:
		return "start download"
	case StartComputation:
		return "start computation"
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// Action is one thing the driver must start now.
type Action struct {
	Kind     ActionKind
	Activity int           // index in Page.Activities
	Object   int           // index in Page.Objects
	Duration time.Duration // StartComputation: how long it runs
}

func (a Action) String() string {
	if a.Kind == StartComputation {
		return fmt.Sprintf("%v %d for %v", a.Kind, a.Activity, a.Duration)
	}
	return fmt.Sprintf("%v of object %d (activity %d)", a.Kind, a.Object, a.Activity)
}

// Options set how a page is walked.
type Options struct {
	// Compute runs computations for their recorded time; without it they
	// complete as soon as they start (the paper's "without processing time").
	Compute bool
}

type state uint8

const (
	waiting state = iota
	running
	done
)

// Walker holds one page load's progress through the graph. It is not safe
// for concurrent use: one driver owns it.
type Walker struct {
	p       *page.Page
	opts    Options
	state   []state
	unmet   []int   // dependencies not yet satisfied, per activity
	onStart [][]int // activities with a dependency satisfied when this one starts
	onDone  [][]int // ... when this one completes
	t0      time.Time
	ready   []time.Duration // when each activity was started, since t0
	end     []time.Duration // when each completed, since t0
	left    int             // activities not yet done
	plt     time.Duration
}

// NewWalker prepares a load of p, which must have passed page.Validate
// (every page from page.ReadGraph or page.ReadHAR has).
func NewWalker(p *page.Page, opts Options) *Walker {
	n := len(p.Activities)
	w := &Walker{p: p, opts: opts, state: make([]state, n), unmet: make([]int, n),
		onStart: make([][]int, n), onDone: make([][]int, n),
		ready: make([]time.Duration, n), end: make([]time.Duration, n), left: n}
	for _, d := range p.Deps {
		w.unmet[d.To]++
		if d.OnStart {
			w.onStart[d.From] = append(w.onStart[d.From], d.To)
		} else {
			w.onDone[d.From] = append(w.onDone[d.From], d.To)
		}
	}
	return w
}

// Start begins the load at now with the page's start activity and returns
// what to start.
func (w *Walker) Start(now time.Time) []Action {
	w.t0 = now
	return w.run([]int{w.p.Start}, nil, 0)
}

// Complete reports that a running activity completed at now, and returns
// the activities that may start now.
func (w *Walker) Complete(activity int, now time.Time) ([]Action, error) {
	if activity < 0 || activity >= len(w.state) {
		return nil, fmt.Errorf("replay: complete activity %d: out of range (page %s has %d)", activity, w.p.Name, len(w.state))
	}
	id := w.p.Activities[activity].ID
	if w.state[activity] != running {
		return nil, fmt.Errorf("replay: complete activity %q: not running", id)
	}
	at := now.Sub(w.t0)
	if at < w.ready[activity] {
		return nil, fmt.Errorf("replay: complete activity %q at %v, before it started at %v", id, at, w.ready[activity])
	}
	return w.run(nil, []int{activity}, at), nil
}

// run starts the activities in start and completes those in complete, at
// time at, then everything that frees in turn, and returns the actions for
// the driver. Computations that take no time complete here.
func (w *Walker) run(start, complete []int, at time.Duration) []Action {
	var actions []Action
	satisfy := func(next []int) {
		for _, t := range next {
			if w.unmet[t]--; w.unmet[t] == 0 {
				start = append(start, t)
			}
		}
	}
	for len(start) > 0 || len(complete) > 0 {
		if len(complete) > 0 {
			a := complete[0]
			complete = complete[1:]
			w.state[a], w.end[a] = done, at
			w.left--
			w.plt = max(w.plt, at)
			satisfy(w.onDone[a])
			continue
		}
		a := start[0]
		start = start[1:]
		w.state[a], w.ready[a] = running, at
		act := w.p.Activities[a]
		switch {
		case act.Kind == page.Download:
			actions = append(actions, Action{Kind: StartDownload, Activity: a, Object: act.Object})
		case w.opts.Compute && act.Time > 0:
			actions = append(actions, Action{Kind: StartComputation, Activity: a, Object: act.Object, Duration: act.Time})
		default:
			complete = append(complete, a)
		}
		satisfy(w.onStart[a])
	}
	return actions
}

// Done reports whether every activity has completed.
func (w *Walker) Done() bool { return w.left == 0 }

// PLT is the page load time so far: from Start to the last completion.
func (w *Walker) PLT() time.Duration { return w.plt }

// Timing returns when an activity started and completed, since Start, and
// whether it has completed.
func (w *Walker) Timing(activity int) (start, end time.Duration, completed bool) {
	return w.ready[activity], w.end[activity], w.state[activity] == done
}
