package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shunt-net/shunt/internal/ctxtime"
	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/page"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fakeFetcher serves the tests' link model in synctest's fake time: a
// download waits FIFO for one of l.slots, then its first byte comes after
// l.rtt and its last after size/bytesPerMs more.
type fakeFetcher struct {
	l     link
	fail  string // object ID whose fetch fails
	short string // object ID delivered one byte short
	hang  bool   // never complete; wait for ctx

	mu      sync.Mutex
	busy    int
	queue   []func()
	fetches map[string]int
}

func newFakeFetcher(l link) *fakeFetcher {
	return &fakeFetcher{l: l, fetches: make(map[string]int)}
}

func (f *fakeFetcher) Fetch(ctx context.Context, obj *page.Object, done func(Fetched, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches[obj.ID]++
	f.queue = append(f.queue, func() {
		fd, err := f.download(ctx, obj)
		f.mu.Lock()
		f.busy--
		f.pump()
		f.mu.Unlock()
		done(fd, err)
	})
	f.pump()
}

// pump starts queued downloads while slots are free; f.mu is held.
func (f *fakeFetcher) pump() {
	for f.busy < f.l.slots && len(f.queue) > 0 {
		f.busy++
		go f.queue[0]()
		f.queue = f.queue[1:]
	}
}

func (f *fakeFetcher) download(ctx context.Context, obj *page.Object) (Fetched, error) {
	fd := Fetched{Request: time.Now(), Bytes: obj.Size}
	if f.hang {
		<-ctx.Done()
		return fd, ctx.Err()
	}
	if err := ctxtime.Sleep(ctx, f.l.rtt); err != nil {
		return fd, err
	}
	fd.FirstByte = time.Now()
	if err := ctxtime.Sleep(ctx, f.l.duration(obj.Size)-f.l.rtt); err != nil {
		return fd, err
	}
	fd.Done = time.Now()
	switch obj.ID {
	case f.fail:
		return fd, errors.New("connection reset")
	case f.short:
		fd.Bytes--
	}
	return fd, nil
}

func TestRunPReplayExamples(t *testing.T) {
	for _, c := range pReplayExamples {
		synctest.Test(t, func(t *testing.T) {
			l := testLink
			l.slots = c.slots
			p := testpages.Load(t, c.file)
			f := newFakeFetcher(l)
			r, err := Run(t.Context(), p, f, Options{Compute: c.compute})
			if err != nil {
				t.Fatal(err)
			}
			if r.PLT != c.plt {
				t.Errorf("%s slots=%d compute=%v: PLT %v, want %v (%s)", c.file, c.slots, c.compute, r.PLT, c.plt, c.why)
			}
			for _, o := range r.Objects {
				if o.FirstByte-o.Request != l.rtt || o.Request < o.Ready || o.Done > r.PLT || o.Got != o.Size {
					t.Errorf("%s: object %s: ready %v request %v first byte %v done %v, %d of %d bytes",
						c.file, o.ID, o.Ready, o.Request, o.FirstByte, o.Done, o.Got, o.Size)
				}
			}
		})
	}
}

func TestRunTableIVPages(t *testing.T) {
	for _, tv := range page.TableIV {
		synctest.Test(t, func(t *testing.T) {
			p := testpages.Load(t, tv.Graph+".json")
			// Enough slots that no download waits, so the order in which
			// simultaneous events reach the walker cannot change the PLT.
			f := newFakeFetcher(link{rtt: 20 * time.Millisecond, bytesPerMs: 1250, slots: 1000})
			r, err := Run(t.Context(), p, f, Options{Compute: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range p.Objects {
				if f.fetches[o.ID] != 1 {
					t.Errorf("%s: object %s fetched %d times", tv.Name, o.ID, f.fetches[o.ID])
				}
			}
			if r.Bytes != tv.Bytes() {
				t.Errorf("%s: received %d bytes, want Table IV's %d", tv.Name, r.Bytes, tv.Bytes())
			}
			// The same load without the network's randomness: the walker
			// over the same link in the discrete-event simulation.
			if want := simulate(t, p, f.l, Options{Compute: true}).w.PLT(); r.PLT != want {
				t.Errorf("%s: PLT %v, simulated %v", tv.Name, r.PLT, want)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	cases := []struct {
		name string
		set  func(f *fakeFetcher)
		want string
	}{
		{"failed fetch", func(f *fakeFetcher) { f.fail = "r3" }, "object r3 (/spdy/tool/tests/obj_10K-2.js): connection reset"},
		{"short body", func(f *fakeFetcher) { f.short = "r2" }, "received 23999 bytes, want 24000"},
		{"timeout", func(f *fakeFetcher) { f.hang = true }, "context deadline exceeded"},
	}
	for _, c := range cases {
		synctest.Test(t, func(t *testing.T) {
			p := testpages.Load(t, "test3.json")
			f := newFakeFetcher(testLink)
			c.set(f)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := Run(ctx, p, f, Options{Compute: true})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			}
		})
	}
}

// badTimes reports a download done before its request.
type badTimes struct{}

func (badTimes) Fetch(ctx context.Context, obj *page.Object, done func(Fetched, error)) {
	now := time.Now()
	done(Fetched{Request: now, FirstByte: now, Done: now.Add(-time.Millisecond), Bytes: obj.Size}, nil)
}

func TestRunRejectsBadFetcherTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := Run(t.Context(), testpages.Load(t, "test1.json"), badTimes{}, Options{})
		if err == nil || !strings.Contains(err.Error(), "out of order") {
			t.Errorf("error %v, want times out of order", err)
		}
	})
}

func TestResultJSONRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := Run(t.Context(), testpages.Load(t, "test3.json"), newFakeFetcher(testLink), Options{Compute: true})
		if err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(line, []byte("\n")) {
			t.Errorf("result is not one line: %s", line)
		}
		var back Result
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, r) {
			t.Errorf("round trip:\n got %+v\nwant %+v", back, *r)
		}
	})
}

func TestWaterfallGolden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := Run(t.Context(), testpages.Load(t, "test3.json"), newFakeFetcher(link{rtt: 50 * time.Millisecond, bytesPerMs: 240, slots: 1}), Options{Compute: true})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteWaterfall(&b, r, 60); err != nil {
			t.Fatal(err)
		}
		golden := "testdata/test3.waterfall"
		if *update {
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("waterfall differs from %s (go test -update rewrites it):\n%s", golden, b.Bytes())
		}
	})
}

func TestRunStallsOnUnvalidatedGraph(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testpages.Load(t, "test1.json")
		// Drop the dependency that starts r2: nothing would ever start it.
		p.Deps = p.Deps[1:]
		_, err := Run(t.Context(), p, newFakeFetcher(testLink), Options{})
		if err == nil || !strings.Contains(err.Error(), "not done") {
			t.Errorf("error %v, want the load to be reported stuck", err)
		}
	})
}
