package mph2

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/hints"
)

// startHinted runs a Hinted with the policy text over paths "cheap" and
// "exp" (cost 0 and 1) to a loopback server.
func startHinted(t *testing.T, rules string, cheap, exp Path) (*Hinted, string) {
	t.Helper()
	base := startServer(t, nil)
	pol, err := hints.Parse("test.rules", rules)
	if err != nil {
		t.Fatal(err)
	}
	cheap.Name, exp.Name = "cheap", "exp"
	h := &Hinted{Client: &Client{Paths: []Path{cheap, exp}}, Policy: pol, Cost: []float64{0, 1}}
	if err := h.Start(base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, base
}

func getChecked(t *testing.T, h *Hinted, base string, size int64, hint hints.Hint) *Got {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := h.Get(ctx, fmt.Sprintf("%s/gen/%d", base, size), hint, nil)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(g.Body)) != size || g.Status != http.StatusOK {
		t.Fatalf("status %d, %d bytes; want 200, %d", g.Status, len(g.Body), size)
	}
	if _, err := content.NewVerifier(0).Write(g.Body); err != nil {
		t.Fatal(err)
	}
	if g.Request.After(g.FirstByte) || g.FirstByte.After(g.Done) {
		t.Fatalf("times out of order: %v %v %v", g.Request, g.FirstByte, g.Done)
	}
	return g
}

func TestHintedPlacesByClass(t *testing.T) {
	h, base := startHinted(t, "urgent -> path=exp\n* -> path=cheap", loopPath("", 0, 0), loopPath("", 0, 0))
	if g := getChecked(t, h, base, 10000, hints.Hint{Class: hints.Style, Size: 10000, Urgency: 0}); g.Path != 1 || g.Decision.Rule != 1 {
		t.Errorf("style: path %d (rule %d), want exp by rule 1", g.Path, g.Decision.Rule)
	}
	if g := getChecked(t, h, base, 200000, hints.Hint{Class: hints.Image, Size: -1, Urgency: 2}); g.Path != 0 {
		t.Errorf("image: path %d, want cheap", g.Path)
	}
	s := h.Stats()
	if s.Paths[0].Requests != 1 || s.Paths[1].Requests != 1 || s.Paths[0].Used != 200000 || s.Paths[1].Used != 10000 || s.Wasted != 0 {
		t.Errorf("stats %+v", s)
	}
	if s.Paths[0].Received < 200000 || s.Paths[1].Received < 10000 {
		t.Errorf("DATA received %d, %d: less than the bodies", s.Paths[0].Received, s.Paths[1].Received)
	}
	if s.Paths[0].RTT <= 0 || s.Paths[1].RTT <= 0 {
		t.Errorf("no RTT estimates: %+v", s.Paths)
	}
}

// A redundant request on a slow and a fast path: the fast copy wins and
// the slow one is cancelled.
func TestHintedRedundant(t *testing.T) {
	h, base := startHinted(t, "* -> path=exp redundant", loopPath("", 2e6, 0), loopPath("", 100e3, 0))
	const size = 400000
	g := getChecked(t, h, base, size, hints.Hint{Class: hints.Document, Size: size, Urgency: 0})
	if g.Path != 0 || !g.Decision.Redundant() {
		t.Fatalf("used path %d (decision %+v), want the fast second path 0", g.Path, g.Decision)
	}
	s := h.Stats()
	if s.Redundant != 1 || s.SecondWon != 1 || s.Paths[1].Requests != 1 || s.Paths[0].Used != size || s.Paths[1].Used != 0 {
		t.Errorf("stats %+v", s)
	}
	if s.Wasted <= 0 || s.Wasted >= size {
		t.Errorf("wasted %d bytes: want the slow copy's part", s.Wasted)
	}
}

// A response crawling on the cheap path has its rest asked for on the
// other path, which delivers it first.
func TestHintedTail(t *testing.T) {
	h, base := startHinted(t, "* -> path=cheap tail=1MB", loopPath("", 60e3, 0), loopPath("", 0, 0))
	const size = 300000
	g := getChecked(t, h, base, size, hints.Hint{Class: hints.Image, Size: size, Urgency: 2})
	if g.TailPath != 1 || g.Path != 0 {
		t.Fatalf("path %d, tail %d: want the head on 0 and the tail on 1", g.Path, g.TailPath)
	}
	s := h.Stats()
	if s.Tails != 1 || s.TailWon != 1 || s.Paths[0].Used+s.Paths[1].Used != size || s.Paths[1].Used == 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestHintedRoundTrip(t *testing.T) {
	h, base := startHinted(t, "class=document -> path=exp\n* -> path=cheap", loopPath("", 0, 0), loopPath("", 0, 0))
	req, _ := http.NewRequest(http.MethodGet, base+"/gen/5000", nil)
	req.Header.Set("Sec-Fetch-Dest", "document")
	res, err := (&http.Client{Transport: h}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || len(b) != 5000 || res.ContentLength != 5000 {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	if s := h.Stats(); s.Paths[1].Requests != 1 || s.Paths[0].Requests != 0 {
		t.Errorf("document not on exp: %+v", s.Paths)
	}
	if _, err := (&http.Client{Transport: h}).Post(base+"/gen/1", "text/plain", nil); err == nil {
		t.Error("POST succeeded")
	}
}

// A request without a size (a browser's, through RoundTrip) counts on its
// path once its response says the length, so a byte budget binds.
func TestHintedBudgetLearnsSizes(t *testing.T) {
	h, base := startHinted(t, "* -> path=exp budget=100KB", loopPath("", 0, 0), loopPath("", 0, 0))
	for i, want := range []int{1, 1, 0} {
		if g := getChecked(t, h, base, 60000, hints.Hint{Class: hints.Image, Size: -1, Urgency: 2}); g.Path != want {
			t.Errorf("request %d (%d bytes on exp before it): path %d, want %d", i, 60000*min(i, 2), g.Path, want)
		}
	}
}

// A path's Budget is the MP-H2 Client's (Download's); Hinted places
// requests by its policy, which has budgets of its own (budget= in a rule),
// so it refuses a Path.Budget it would not honour rather than let the path
// overrun it.
func TestHintedRefusesPathBudget(t *testing.T) {
	pol, err := hints.Parse("test.rules", "* -> path=cheap")
	if err != nil {
		t.Fatal(err)
	}
	h := &Hinted{Client: &Client{Paths: []Path{{Name: "cheap"}, {Name: "exp", Budget: 1 << 20}}}, Policy: pol}
	defer h.Close()
	if err := h.Start("http://127.0.0.1:1/"); err == nil || !strings.Contains(err.Error(), "path exp: Budget") {
		t.Fatalf("Start: %v, want the budgeted path refused", err)
	}
}

// A policy that gathers places the requests asked for together the most
// urgent first: an image asked for 20 ms before a style sheet, both within
// the gathering, leaves the expensive path's share of the load (one of the
// two objects) to the style sheet. Without gathering, the image, asked for
// first, takes it.
func TestHintedGatherPlacesUrgentFirst(t *testing.T) {
	const size = 20000
	for _, tc := range []struct {
		rules                string
		wantStyle, wantImage int
	}{
		{"gather 300ms\ncap exp 50%\n* -> path=exp", 1, 0},
		{"cap exp 50%\n* -> path=exp", 0, 1},
	} {
		h, base := startHinted(t, tc.rules, loopPath("", 0, 0), loopPath("", 0, 0))
		h.Expect = 2 * size
		img := make(chan *Got)
		go func() { img <- getChecked(t, h, base, size, hints.Hint{Class: hints.Image, Size: size, Urgency: 2}) }()
		time.Sleep(20 * time.Millisecond)
		style := getChecked(t, h, base, size, hints.Hint{Class: hints.Style, Size: size, Urgency: 0})
		if g := <-img; style.Path != tc.wantStyle || g.Path != tc.wantImage {
			t.Errorf("%q: style on path %d, image on %d; want %d, %d", tc.rules, style.Path, g.Path, tc.wantStyle, tc.wantImage)
		}
	}
}

// A tail that would take the expensive path beyond its cap is not made:
// TestHintedTail's crawling response, with exp capped at 1 % of the load.
func TestHintedTailWithinCap(t *testing.T) {
	h, base := startHinted(t, "cap exp 1%\n* -> path=cheap tail=1MB", loopPath("", 60e3, 0), loopPath("", 0, 0))
	const size = 60000
	h.Expect = size
	g := getChecked(t, h, base, size, hints.Hint{Class: hints.Image, Size: size, Urgency: 2})
	if s := h.Stats(); g.TailPath != -1 || s.Tails != 0 || s.Paths[1].Requests != 0 {
		t.Errorf("tail on %d, %d tails, %d requests on exp: want none beyond the cap", g.TailPath, s.Tails, s.Paths[1].Requests)
	}
}

// arrivals records the Priority of requests in the order the server's
// HTTP/2 reader parses them (ServeInline runs there), then lets the files
// answer.
type arrivals struct {
	*content.Handler
	mu  sync.Mutex
	got []string
}

func (a *arrivals) ServeInline(w http.ResponseWriter, r *http.Request) bool {
	a.mu.Lock()
	a.got = append(a.got, r.Header.Get("Priority"))
	a.mu.Unlock()
	return false
}

// A gathered batch's requests leave a path in the order the server should
// answer them: hints-latency's google asks, in one batch on cheap, for an
// async script at u=1 (its hint's urgency 3) and three images at "u=2, i".
// Each copy runs in its own goroutine, and those released together ran in
// no set order (the newest first), so the script's request often reached
// the server after the images', which it answered first.
func TestHintedBatchLeavesInOrder(t *testing.T) {
	hd, err := content.NewHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hd.Close() })
	rec := &arrivals{Handler: hd}
	base := startServer(t, rec)
	pol, err := hints.Parse("test.rules", "gather 20ms\n* -> path=cheap")
	if err != nil {
		t.Fatal(err)
	}
	for rep := range 10 {
		h := &Hinted{Client: &Client{Paths: []Path{loopPath("cheap", 0, 0), loopPath("exp", 0, 0)}}, Policy: pol, Cost: []float64{0, 1}}
		if err := h.Start(base); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		rec.got = nil
		rec.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		get := func(size int64, hint hints.Hint, prio string) {
			defer wg.Done()
			g, err := h.Get(ctx, fmt.Sprintf("%s/gen/%d", base, size), hint, http.Header{"Priority": {prio}})
			if err != nil || int64(len(g.Body)) != size {
				t.Errorf("%s: %v", prio, err)
			}
		}
		wg.Add(4)
		for i := range 3 {
			go get(int64(6167+i), hints.Hint{Class: hints.Image, Size: int64(6167 + i), Urgency: 2}, "u=2, i")
		}
		go get(12333, hints.Hint{Class: hints.AsyncScript, Size: 12333, Urgency: 3}, "u=1")
		wg.Wait()
		cancel()
		h.Close()
		rec.mu.Lock()
		got := rec.got
		rec.mu.Unlock()
		if len(got) != 4 || got[0] != "u=1" {
			t.Fatalf("repetition %d: requests reached the server as %q; want the u=1 script's first", rep, got)
		}
	}
}
