package replay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shunt-net/shunt/page"
)

// Fetcher downloads objects over one transport: HTTP/1.1 over N
// connections, HTTP/2 or HTTP/3 with N concurrent streams, and so on. The
// walker does not know which.
//
// Run calls Fetch from its one goroutine, in the order the graph makes
// objects ready, and Fetch must return at once: it queues the request. A
// transport with a concurrency limit (N connections, N streams) sends
// queued requests in the order Fetch received them as connections or
// streams free, and reports in Fetched.Request when each really went out.
//
// Fetch calls done exactly once per call, from any goroutine (even from
// inside Fetch), also when ctx is done (then with an error): Run waits for
// every outstanding done before it returns.
//
// The Fetcher must check the body against the object (its length, and its
// content as the server generates it) and report an error if it differs.
// Run also checks that Fetched.Bytes equals obj.Size, and that the times
// are set and in order (load start <= Request <= FirstByte <= Done).
type Fetcher interface {
	Fetch(ctx context.Context, obj *page.Object, done func(Fetched, error))
}

// Fetched is how one download went, in the Fetcher's clock (time.Now).
type Fetched struct {
	Request   time.Time // the request was sent (after any wait for a connection or stream)
	FirstByte time.Time // the first byte of the response arrived
	Done      time.Time // the last byte of the body arrived
	Bytes     int64     // body bytes received
	Conn      int       // which connection carried it (for waterfalls; 0 if one)
}

// check rejects a Fetched whose times are missing or out of order.
func (fd *Fetched) check(t0 time.Time) error {
	if fd.Request.Before(t0) || fd.FirstByte.Before(fd.Request) || fd.Done.Before(fd.FirstByte) {
		return fmt.Errorf("fetcher reported times out of order or missing: load start %v, request %v, first byte %v, done %v",
			t0.Format(time.StampMicro), fd.Request.Format(time.StampMicro), fd.FirstByte.Format(time.StampMicro), fd.Done.Format(time.StampMicro))
	}
	return nil
}

// event is a completed activity, reported to Run's loop.
type event struct {
	activity int
	at       time.Time
	fetched  *Fetched // downloads only
	err      error
}

// Run loads p once: it walks the graph, fetching objects with f and running
// computations on time.Now's clock, until every activity has completed. It
// stops at the first failed download or when ctx is done, and waits for
// every outstanding fetch to report before it returns.
func Run(ctx context.Context, p *page.Page, f Fetcher, opts Options) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	// Every activity reports at most once, so sends never block.
	events := make(chan event, len(p.Activities))
	var fetches sync.WaitGroup
	var timers []*time.Timer
	defer func() {
		cancel()
		for _, t := range timers {
			t.Stop()
		}
		fetches.Wait()
	}()

	pending := 0 // fetches and computations not yet reported
	dispatch := func(actions []Action) {
		pending += len(actions)
		for _, a := range actions {
			switch a.Kind {
			case StartDownload:
				fetches.Add(1)
				var once sync.Once
				f.Fetch(ctx, &p.Objects[a.Object], func(fd Fetched, err error) {
					once.Do(func() {
						events <- event{activity: a.Activity, at: fd.Done, fetched: &fd, err: err}
						fetches.Done()
					})
				})
			case StartComputation:
				timers = append(timers, time.AfterFunc(a.Duration, func() {
					events <- event{activity: a.Activity, at: time.Now()}
				}))
			}
		}
	}

	w := NewWalker(p, opts)
	fetched := make([]*Fetched, len(p.Objects))
	dispatch(w.Start(time.Now()))
	for !w.Done() {
		if pending == 0 {
			return nil, fmt.Errorf("replay %s: nothing running but the load is not done: the graph was not validated (page.Validate)", p.Name)
		}
		var ev event
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil, fmt.Errorf("replay %s: %w", p.Name, context.Cause(ctx))
		}
		pending--
		act := p.Activities[ev.activity]
		if ev.fetched != nil {
			o := &p.Objects[act.Object]
			if ev.err != nil {
				return nil, fmt.Errorf("replay %s: object %s (%s): %w", p.Name, o.ID, o.Path, ev.err)
			}
			if err := ev.fetched.check(w.t0); err != nil {
				return nil, fmt.Errorf("replay %s: object %s (%s): %w", p.Name, o.ID, o.Path, err)
			}
			if ev.fetched.Bytes != o.Size {
				return nil, fmt.Errorf("replay %s: object %s (%s): received %d bytes, want %d", p.Name, o.ID, o.Path, ev.fetched.Bytes, o.Size)
			}
			fetched[act.Object] = ev.fetched
		}
		actions, err := w.Complete(ev.activity, ev.at)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", p.Name, err)
		}
		dispatch(actions)
	}

	r := w.Result()
	since := func(t time.Time) time.Duration { return t.Sub(w.t0) }
	for i, fd := range fetched {
		o := &r.Objects[i]
		o.Request, o.FirstByte, o.Got, o.Conn = since(fd.Request), since(fd.FirstByte), fd.Bytes, fd.Conn
		r.Bytes += fd.Bytes
	}
	return r, nil
}
