package hints

import (
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shunt-net/shunt/page"
)

// A page of an HTML document parsed in two chunks, with a style sheet, a
// script the second chunk waits for, a script nothing waits for, an image
// and a font (sizes give the classes their bytes).
const graph = `{"name": "t", "start_activity": "d0", "load_activity": "d0", "objs": [
 {"id": "r1", "path": "/index.html", "download": {"id": "d0", "type": "text/html"}, "comps": [{"id": "c1", "time": 1}, {"id": "c2", "time": 1}]},
 {"id": "r2", "path": "/a.css", "download": {"id": "d1", "type": "text/css"}, "comps": [{"id": "c3", "time": 1}]},
 {"id": "r3", "path": "/b.js", "download": {"id": "d2", "type": "application/javascript"}, "comps": [{"id": "c4", "time": 1}]},
 {"id": "r4", "path": "/async.js", "download": {"id": "d3", "type": "application/javascript"}, "comps": [{"id": "c5", "time": 1}]},
 {"id": "r5", "path": "/i.jpg", "download": {"id": "d4", "type": "image/jpeg"}, "comps": []},
 {"id": "r6", "path": "/f.woff2", "download": {"id": "d5", "type": "font/woff2"}, "comps": []}],
 "deps": [
 {"id": "e1", "a1": "c1", "a2": "d1", "time": -1},
 {"id": "e2", "a1": "c1", "a2": "d2", "time": -1},
 {"id": "e3", "a1": "c4", "a2": "c2", "time": -1},
 {"id": "e4", "a1": "c1", "a2": "d3", "time": -1},
 {"id": "e5", "a1": "c2", "a2": "d4", "time": -1},
 {"id": "e6", "a1": "c3", "a2": "d5", "time": -1}]}`

func TestFromPage(t *testing.T) {
	p, err := page.ReadGraph("t.json", []byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	p.Objects[4].Size = 5000
	got := FromPage(p)
	want := []Class{Document, Style, Script, AsyncScript, Image, Font}
	for i, h := range got {
		if h.Class != want[i] {
			t.Errorf("object %s: class %s, want %s", p.Objects[i].ID, h.Class, want[i])
		}
		if h.Urgency != UrgencyOf(want[i]) || h.Size != p.Objects[i].Size {
			t.Errorf("object %s: %+v", p.Objects[i].ID, h)
		}
	}
}

func TestFromHeaders(t *testing.T) {
	for _, tc := range []struct {
		h    map[string]string
		want Hint
	}{
		{map[string]string{"Sec-Fetch-Dest": "document", "Priority": "u=0, i"}, Hint{Document, -1, 0}},
		{map[string]string{"Sec-Fetch-Dest": "style"}, Hint{Style, -1, 0}},
		{map[string]string{"Sec-Fetch-Dest": "script", "Priority": "u=1"}, Hint{Script, -1, 1}},
		// Chromium's parser-blocking script after an image.
		{map[string]string{"Sec-Fetch-Dest": "script", "Priority": "u=2"}, Hint{Script, -1, 2}},
		{map[string]string{"Sec-Fetch-Dest": "script", "Priority": "i, u=3"}, Hint{AsyncScript, -1, 3}},
		{map[string]string{"Sec-Fetch-Dest": "image", "Priority": "u=9"}, Hint{Image, -1, 2}},
		{map[string]string{"Sec-Fetch-Dest": "video"}, Hint{Media, -1, 3}},
		{map[string]string{"Sec-Fetch-Dest": "font"}, Hint{Font, -1, 0}},
		{map[string]string{"Accept": "text/html,application/xhtml+xml;q=0.9"}, Hint{Document, -1, 0}},
		{map[string]string{"Accept": "text/css,*/*;q=0.1"}, Hint{Style, -1, 0}},
		{map[string]string{"Accept": "image/avif,image/webp,*/*"}, Hint{Image, -1, 2}},
		{map[string]string{"Accept": "*/*"}, Hint{Other, -1, 3}},
		{map[string]string{"Sec-Fetch-Dest": "empty", "Accept": "application/json"}, Hint{Other, -1, 3}},
	} {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		if got := FromHeaders(h); got != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.h, got, tc.want)
		}
	}
}

// TestFromResponseRoundTrip: a page object's hint, sent as a server sees
// it (the hint's urgency in the request's Priority, the object's MIME type
// and size in the response), comes back whole.
func TestFromResponseRoundTrip(t *testing.T) {
	p, err := page.ReadGraph("t.json", []byte(graph))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range FromPage(p) {
		req := http.Header{"Priority": {fmt.Sprintf("u=%d", want.Urgency)}}
		resp := http.Header{"Content-Type": {p.Objects[i].MIME + "; charset=utf-8"}, "Content-Length": {strconv.FormatInt(want.Size, 10)}}
		if got := FromResponse(req, resp); got != want {
			t.Errorf("object %s: %+v, want %+v", p.Objects[i].ID, got, want)
		}
	}
}

func TestFromResponse(t *testing.T) {
	for _, tc := range []struct {
		req, resp map[string]string
		want      Hint
	}{
		// The request's class wins over the response's type.
		{map[string]string{"Sec-Fetch-Dest": "style"}, map[string]string{"Content-Type": "text/plain", "Content-Length": "10"}, Hint{Style, 10, 0}},
		{map[string]string{"Accept": "text/css"}, map[string]string{"Content-Type": "image/png"}, Hint{Style, -1, 0}},
		// Without one, the response's type; an alias spelling counts.
		{nil, map[string]string{"Content-Type": "text/javascript"}, Hint{Script, -1, 1}},
		{map[string]string{"Priority": "u=3"}, map[string]string{"Content-Type": "application/x-javascript", "Content-Length": "7"}, Hint{AsyncScript, 7, 3}},
		{map[string]string{"Accept": "*/*"}, map[string]string{"Content-Type": "image/jpg", "Content-Length": "-5"}, Hint{Image, -1, 2}},
		{nil, map[string]string{"Content-Type": "application/octet-stream", "Content-Length": "x"}, Hint{Other, -1, 3}},
		{nil, nil, Hint{Other, -1, 3}},
	} {
		req, resp := http.Header{}, http.Header{}
		for k, v := range tc.req {
			req.Set(k, v)
		}
		for k, v := range tc.resp {
			resp.Set(k, v)
		}
		if got := FromResponse(req, resp); got != tc.want {
			t.Errorf("%v / %v: %+v, want %+v", tc.req, tc.resp, got, tc.want)
		}
	}
}

// FuzzFromResponse: any headers give a hint of a known class, an urgency
// of 0..7 and a size of -1 or more, and the hint survives a second trip.
func FuzzFromResponse(f *testing.F) {
	f.Add("script", "", "u=1", "application/javascript", "100")
	f.Add("", "text/css", "i, u=3", "text/css;charset=x", "0")
	f.Add("empty", "", "u=9", "image/jpg", "-1")
	f.Fuzz(func(t *testing.T, dest, accept, priority, ctype, clen string) {
		req := http.Header{"Sec-Fetch-Dest": {dest}, "Accept": {accept}, "Priority": {priority}}
		h := FromResponse(req, http.Header{"Content-Type": {ctype}, "Content-Length": {clen}})
		if !validClass(string(h.Class)) || h.Urgency < 0 || h.Urgency > 7 || h.Size < -1 {
			t.Fatalf("%+v", h)
		}
		again := FromResponse(http.Header{"Sec-Fetch-Dest": {dest}, "Accept": {accept}, "Priority": {fmt.Sprintf("u=%d", h.Urgency)}},
			http.Header{"Content-Type": {ctype}, "Content-Length": {strconv.FormatInt(h.Size, 10)}})
		if again != h {
			t.Fatalf("second trip: %+v, first %+v", again, h)
		}
	})
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// twoPaths: a cheap path of 80 ms and an expensive one of 20 ms, both
// 10 Mbit/s and up (issue 19's latency condition).
func twoPaths() []PathState {
	return []PathState{
		{Name: "cheap", Up: true, RTT: 80 * time.Millisecond, Bandwidth: 1.25e6, Cost: 0},
		{Name: "expensive", Up: true, RTT: 20 * time.Millisecond, Bandwidth: 1.25e6, Cost: 1},
	}
}

func mustPreset(t *testing.T, name string) *Policy {
	t.Helper()
	p, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecidePresets(t *testing.T) {
	doc := Hint{Document, 20000, 0}
	img := Hint{Image, 300000, 2}
	for _, tc := range []struct {
		policy string
		h      Hint
		want   Decision
	}{
		{"single-fast", img, Decision{Path: 1, Second: -1, Rule: 1}},
		{"single-cheap", doc, Decision{Path: 0, Second: -1, Rule: 1}},
		{"urgent-fast", doc, Decision{Path: 1, Second: -1, Rule: 1}},
		{"urgent-fast", img, Decision{Path: 0, Second: -1, Rule: 2}},
		{"redundant-urgent", doc, Decision{Path: 1, Second: 0, Rule: 1}},
		{"redundant-urgent", img, Decision{Path: 0, Second: -1, Rule: 3}},
		{"redundant-urgent", Hint{Script, 200000, 1}, Decision{Path: 1, Second: -1, Rule: 2}},
		{"tail", img, Decision{Path: 0, Second: -1, Tail: 32000, Rule: 2}},
		{"tail", Hint{Image, 5000, 2}, Decision{Path: 0, Second: -1, Rule: 3}},
		{"tail-bulk", Hint{Image, 5000, 2}, Decision{Path: 0, Second: -1, Tail: 16000, Rule: 2}},
		{"tail-bulk", doc, Decision{Path: 1, Second: -1, Rule: 1}},
		{"urgent-fast-share", doc, Decision{Path: 1, Second: -1, Rule: 1}},
		{"urgent-fast-finish", img, Decision{Path: 1, Second: -1, Rule: 2}},
		{"hedge-urgent", doc, Decision{Path: 1, Second: -1, Tail: 64000, Rule: 1}},
		{"hedge-urgent", Hint{Script, 100000, 1}, Decision{Path: 1, Second: -1, Rule: 2}},
		// A browser's request through shunt proxy has no size: hedge-urgent's
		// size<=64KB misses it, hedge-urgent-unsized does not.
		{"hedge-urgent", Hint{Style, -1, 0}, Decision{Path: 1, Second: -1, Rule: 2}},
		{"hedge-urgent-unsized", Hint{Style, -1, 0}, Decision{Path: 1, Second: -1, Tail: 64000, Rule: 1}},
		{"hedge-urgent-unsized", Hint{Image, -1, 2}, Decision{Path: 0, Second: -1, Rule: 2}},
		{"adaptive", doc, Decision{Path: 1, Second: -1, Rule: 2}},
		{"hedge-late", Hint{Script, 200000, 1}, Decision{Path: 1, Second: -1, Hedge: true, CopyPct: 10, Rule: 1}},
		{"hedge-late", img, Decision{Path: 0, Second: -1, Rule: 2}},
	} {
		if got := mustPreset(t, tc.policy).Decide(tc.h, twoPaths(), t0); got != tc.want {
			t.Errorf("%s, %+v: %+v, want %+v", tc.policy, tc.h, got, tc.want)
		}
	}
	// adaptive turns redundancy on once a path loses 0.5 % or more.
	lossy := twoPaths()
	lossy[0].Loss = 0.02
	if got := mustPreset(t, "adaptive").Decide(doc, lossy, t0); got != (Decision{Path: 1, Second: 0, Rule: 1}) {
		t.Errorf("adaptive under loss: %+v", got)
	}
	// One path: no redundancy, no tail.
	if got := mustPreset(t, "redundant-urgent").Decide(doc, twoPaths()[:1], t0); got != (Decision{Path: 0, Second: -1, Rule: 1}) {
		t.Errorf("one path: %+v", got)
	}
	if got := mustPreset(t, "hedge-late").Decide(doc, twoPaths()[:1], t0); got != (Decision{Path: 0, Second: -1, CopyPct: 10, Rule: 1}) {
		t.Errorf("one path, hedge-late: %+v", got)
	}
}

// A path still connecting counts at least the time since its dial began,
// so a request waits for the path that answered first only as long as the
// other has not proven itself faster.
func TestDecideWhileConnecting(t *testing.T) {
	paths := twoPaths()
	paths[1].Up, paths[1].RTT, paths[1].DialStart = false, 0, t0
	fast := mustPreset(t, "single-fast")
	doc := Hint{Document, 1000, 0}
	if got := fast.Decide(doc, paths, t0.Add(10*time.Millisecond)); got.Path != 1 {
		t.Errorf("10 ms into the dial: path %d, want the dialing one (1): its RTT may still be 10 ms", got.Path)
	}
	if got := fast.Decide(doc, paths, t0.Add(90*time.Millisecond)); got.Path != 0 {
		t.Errorf("90 ms into the dial: path %d, want 0 (80 ms)", got.Path)
	}
}

func TestDecideFinishAndBudget(t *testing.T) {
	p, err := Parse("b.rules", "urgent -> path=fast budget=50KB\n* -> path=finish")
	if err != nil {
		t.Fatal(err)
	}
	paths := twoPaths()
	css := Hint{Style, 30000, 0}
	if d := p.Decide(css, paths, t0); d.Path != 1 {
		t.Errorf("within budget: path %d, want 1", d.Path)
	}
	paths[1].Sent = 30000
	if d := p.Decide(css, paths, t0); d.Path != 0 {
		t.Errorf("30 KB + 30 KB over a 50 KB budget: path %d, want the cheap 0", d.Path)
	}
	// finish: 100 KB takes 80 ms + 80 ms on the cheap path, 20 + 80 ms on
	// the expensive one; with 200 KB queued there, the cheap one wins.
	img := Hint{Image, 100000, 2}
	if d := p.Decide(img, twoPaths(), t0); d.Path != 1 {
		t.Errorf("finish, idle paths: %d, want 1", d.Path)
	}
	paths = twoPaths()
	paths[1].Queued = 200000
	if d := p.Decide(img, paths, t0); d.Path != 0 {
		t.Errorf("finish, 200 KB queued on 1: %d, want 0", d.Path)
	}
	// A rule naming a path that does not exist falls back to the cheapest.
	q, _ := Parse("n.rules", "* -> path=nowhere")
	if d := q.Decide(img, twoPaths(), t0); d.Path != 0 {
		t.Errorf("unknown path name: %d, want the cheap 0", d.Path)
	}
	if d := q.Decide(img, nil, t0); d.Path != -1 {
		t.Errorf("no paths: %+v", d)
	}
}

// budget=25%: the fast path takes a bulk request only while its share of
// the bytes placed, the request's included, stays within a quarter.
func TestDecideShareBudget(t *testing.T) {
	p := mustPreset(t, "urgent-fast-share")
	img := Hint{Image, 100000, 2}
	paths := twoPaths()
	if d := p.Decide(img, paths, t0); d.Path != 0 {
		t.Errorf("first request: path %d, want cheap (100 %% of the bytes would be on fast)", d.Path)
	}
	paths[0].Sent, paths[1].Sent = 300000, 0
	if d := p.Decide(img, paths, t0); d.Path != 1 {
		t.Errorf("100 KB of 400 KB: path %d, want fast (25 %%)", d.Path)
	}
	paths[1].Sent = 1
	if d := p.Decide(img, paths, t0); d.Path != 0 {
		t.Errorf("100001 B of 400001 B: path %d, want cheap", d.Path)
	}
}

func TestShouldTail(t *testing.T) {
	d := Decision{Path: 0, Second: -1, Tail: 64000}
	// 1 MB on the cheap path at 1.25 MB/s since t0.
	tr := func(received int64, last, now time.Duration) (Transfer, time.Time) {
		return Transfer{Path: 0, Size: 1e6, Received: received, FirstByte: t0, LastByte: t0.Add(last)}, t0.Add(now)
	}
	for _, tc := range []struct {
		name           string
		received       int64
		last, now      time.Duration
		lossy, slowAlt bool
		want           int
	}{
		{"too much left", 900000, 720 * time.Millisecond, 720 * time.Millisecond, false, false, -1},
		{"flowing: 40 KB in 32 ms beats 20 ms + 32 ms", 960000, 768 * time.Millisecond, 768 * time.Millisecond, false, false, -1},
		{"stalled 200 ms", 960000, 768 * time.Millisecond, 968 * time.Millisecond, false, false, 1},
		{"stalled, other path down", 960000, 768 * time.Millisecond, 968 * time.Millisecond, false, true, -1},
		{"done", 1e6, 800 * time.Millisecond, 800 * time.Millisecond, false, false, -1},
	} {
		tf, now := tr(tc.received, tc.last, tc.now)
		paths := twoPaths()
		if tc.slowAlt {
			paths[1].Up = false
		}
		if got := ShouldTail(d, tf, paths, now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := ShouldTail(Decision{Path: 0, Second: -1}, Transfer{Path: 0, Size: 10, Received: 5, FirstByte: t0, LastByte: t0}, twoPaths(), t0.Add(time.Second)); got != -1 {
		t.Errorf("no tail threshold: %d", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", "x.rules line 1: no rules"},
		{"# only\n\n", "x.rules line 1: no rules"},
		{"* -> path=fast\nurgent path=fast", "x.rules line 2: want MATCHERS -> ACTIONS (or policy NAME), got \"urgent path=fast\""},
		{"\n\nclass=picture -> path=fast", "x.rules line 3: class \"picture\": want one of [document style script async-script image font media other]"},
		{"size>=10XB -> path=cheap", "x.rules line 1: matcher \"size>=10XB\": "},
		{"size=10 -> path=cheap", "x.rules line 1: matcher \"size=10\": want size<N, size<=N, size>N or size>=N"},
		{"size>10KB size<5KB -> path=cheap", "x.rules line 1: size bounds 10001..4999 match nothing"},
		{"size<0 -> path=cheap", "x.rules line 1: matcher \"size<0\": nothing is below 0"},
		{"urgency<=8 -> path=fast", "x.rules line 1: matcher \"urgency<=8\": urgency \"8\": want 0..7"},
		{"loss>=2 -> path=fast", "x.rules line 1: matcher \"loss>=2\": \"2\": want a percentage"},
		{"* -> path=fast budget=0%", "x.rules line 1: \"0%\": want a percentage"},
		{"* -> path=fast budget=25% budget=1MB", "x.rules line 1: action budget given twice"},
		{"* urgent -> path=fast", "x.rules line 1: * matches everything"},
		{"urgent bulk -> path=fast", "x.rules line 1: urgent/bulk given twice"},
		{"urgent -> redundant", "x.rules line 1: no path=... after ->"},
		{"urgent -> path=fast path=cheap", "x.rules line 1: action path given twice"},
		{"urgent -> path=fast tail=0", "x.rules line 1: tail=0: leave it out"},
		{"urgent -> path=fast fast", "x.rules line 1: unknown action \"fast\""},
		{" -> path=fast", "x.rules line 1: no matcher before ->"},
		{"urgent -> path=fast\npolicy late", "x.rules line 2: the policy line must come first"},
		{"policy a b\n* -> path=fast", "x.rules line 1: policy name \"a b\""},
		{"foo -> path=fast", "x.rules line 1: unknown matcher \"foo\""},
		{"* -> path=cheap\nurgent -> path=fast hedge tail=16KB", "x.rules line 2: hedge and tail=N on one rule"},
		{"urgent -> path=fast redundant copies=10%", "x.rules line 1: copies=P% bounds the bytes of a rule's hedges and tails"},
		{"urgent -> path=fast hedge copies=0%", "x.rules line 1: \"0%\": want a percentage"},
		{"urgent -> path=fast hedge copies=10", "x.rules line 1: \"10\": want a percentage"},
		{"urgent -> path=fast hedge=1", "x.rules line 1: unknown action \"hedge=1\""},
		{"gather 2ms\ngather 3ms\n* -> path=fast", "x.rules line 2: a second gather line"},
		{"* -> path=fast\n\ngather 2ms", "x.rules line 3: the gather line must come before the rules"},
		{"gather 0s\n* -> path=fast", "x.rules line 1: gather \"0s\": want a duration above 0"},
		{"gather 2s\n* -> path=fast", "x.rules line 1: gather \"2s\": want a duration above 0"},
		{"gather soon\n* -> path=fast", "x.rules line 1: gather \"soon\": want a duration above 0"},
		{"gather 2ms\npolicy x\n* -> path=fast", "x.rules line 2: the policy line must come first"},
		{"cap fast 25\n* -> path=fast", "x.rules line 1: cap fast: \"25\": want a percentage"},
		{"cap fast 0%\n* -> path=fast", "x.rules line 1: cap fast: \"0%\": want a percentage"},
		{"cap finish 25%\n* -> path=fast", "x.rules line 1: want cap fast|cheap|NAME P%"},
		{"cap 25%\n* -> path=fast", "x.rules line 1: want cap fast|cheap|NAME P%"},
		{"cap fast 25%\ncap fast 20%\n* -> path=fast", "x.rules line 2: a second cap on fast"},
		{"* -> path=fast\ncap fast 25%", "x.rules line 2: the cap lines must come before the rules"},
		{"cap fast 25%\npolicy x\n* -> path=fast", "x.rules line 2: the policy line must come first"},
		{"* -> path=fast share=25%", "x.rules line 1: unknown action \"share=25%\""},
		{"cap fast 25%\nurgent -> path=fast split tail=16KB", "x.rules line 2: split goes with none of"},
		{"cap fast 25%\nurgent -> path=fast redundant split", "x.rules line 2: split goes with none of"},
		{"cap fast 25%\nurgent -> path=fast split hedge", "x.rules line 2: split goes with none of"},
		{"urgent -> path=fast split budget=10%", "x.rules line 1: split goes with none of"},
		{"urgent -> path=fast split=10KB", "x.rules line 1: unknown action \"split=10KB\""},
		{"urgent -> path=fast split split", "x.rules line 1: action split given twice"},
		{"urgent -> path=fast join redundant", "x.rules line 1: join goes with none of"},
		{"urgent -> path=fast join tail=16KB", "x.rules line 1: join goes with none of"},
		{"urgent -> path=fast hedge join", "x.rules line 1: join goes with none of"},
		{"urgent -> path=fast join budget=1MB", "x.rules line 1: join goes with none of"},
		{"urgent -> path=fast join=1", "x.rules line 1: unknown action \"join=1\""},
	} {
		_, err := Parse("x.rules", tc.text)
		if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("%q: error %v, want it to start with %q", tc.text, err, tc.want)
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	text := `policy mine  # a comment
gather 1.5ms
cap fast 30%
cap wifi 2.5%
class=image,media size>100KB -> path=cheap tail=32KiB
urgent loss>=1.5% urgency<=1 -> path=fast redundant budget=2MB
bulk size<1KB -> path=wifi
class=style -> path=fast hedge copies=7.5%
class=script -> path=fast split
class=document -> path=fast join
* -> path=finish budget=12.5%`
	p, err := Parse("mine.rules", text)
	if err != nil {
		t.Fatal(err)
	}
	r := p.Rules[0]
	if p.Gather != 1500*time.Microsecond || !reflect.DeepEqual(p.Caps, []Cap{{"fast", 30}, {"wifi", 2.5}}) {
		t.Errorf("gather %v, caps %v", p.Gather, p.Caps)
	}
	if r.MinSize != 100001 || r.MaxSize != -1 || r.Tail != 32768 || !reflect.DeepEqual(r.Classes, []Class{Image, Media}) || r.Line != 5 {
		t.Errorf("rule 1: %+v", r)
	}
	if r := p.Rules[1]; r.MinLoss != 1.5 || r.MaxUrg != 1 || !r.Redundant || r.Budget != 2e6 || !*r.Urgent {
		t.Errorf("rule 2: %+v", r)
	}
	if r := p.Rules[2]; r.MaxSize != 999 || *r.Urgent || r.Path != "wifi" {
		t.Errorf("rule 3: %+v", r)
	}
	if r := p.Rules[3]; !r.Hedge || r.CopyPct != 7.5 || r.Tail != 0 {
		t.Errorf("rule 4: %+v", r)
	}
	if r := p.Rules[4]; !r.Split || r.Path != "fast" {
		t.Errorf("rule 5: %+v", r)
	}
	if r := p.Rules[5]; !r.Join || r.Split || r.Path != "fast" {
		t.Errorf("rule 6: %+v", r)
	}
	if r := p.Rules[6]; r.BudgetPct != 12.5 || r.Budget != 0 {
		t.Errorf("rule 5: %+v", r)
	}
	checkRoundTrip(t, p)
	for _, n := range PresetNames() {
		checkRoundTrip(t, mustPreset(t, n))
	}
}

// checkRoundTrip: String then Parse gives p back (line numbers aside).
func checkRoundTrip(t *testing.T, p *Policy) {
	t.Helper()
	q, err := Parse("again", p.String())
	if err != nil {
		t.Fatalf("%q: %v", p.String(), err)
	}
	if q.String() != p.String() || !reflect.DeepEqual(withoutLines(p), withoutLines(q)) {
		t.Errorf("round trip:\n%s\ngave\n%s", p, q)
	}
}

func withoutLines(p *Policy) *Policy {
	c := &Policy{Name: p.Name, Rules: append([]Rule(nil), p.Rules...)}
	for i := range c.Rules {
		c.Rules[i].Line = 0
	}
	return c
}

func TestPresetUnknown(t *testing.T) {
	if _, err := Load("nonesuch"); err == nil {
		t.Error("Load(nonesuch): no error")
	}
	if _, err := Load("/nonexistent/x.rules"); err == nil {
		t.Error("Load of a missing file: no error")
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range PresetNames() {
		p, _ := Preset(n)
		f.Add(p.String())
	}
	f.Add("policy y\ngather 3ms\ncap fast 25%\ncap exp 1%\nurgent -> path=fast redundant\n* -> path=finish tail=2KB budget=10%")
	f.Add("cap fast 10%\nclass=script,document -> path=fast split\n* -> path=cheap")
	f.Add("cap fast 10%\nclass=document -> path=fast split join\nurgent -> path=exp join\n* -> path=cheap")
	f.Add("policy x\nclass=image,font size>=1KB size<=1MiB urgency>=2 loss>=0.5% -> path=cheap tail=1 budget=9")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse("fuzz", text)
		if err != nil {
			return
		}
		checkRoundTrip(t, p)
		// Every decision names a path of the state.
		d := p.Decide(Hint{Image, 1000, 2}, twoPaths(), t0)
		if d.Path < 0 || d.Path > 1 || d.Second > 1 || d.Second == d.Path {
			t.Errorf("%q: decision %+v", text, d)
		}
	})
}

// "fast" compares the paths' minimum RTTs: the 20 ms path whose PINGs
// queued behind its own burst (smoothed 120 ms) is still the fast one.
func TestFastUsesMinRTT(t *testing.T) {
	paths := twoPaths()
	paths[0].MinRTT = 80 * time.Millisecond
	paths[1].RTT, paths[1].MinRTT = 120*time.Millisecond, 20*time.Millisecond
	if d := mustPreset(t, "urgent-fast").Decide(Hint{Style, 17000, 0}, paths, t0); d.Path != 1 {
		t.Errorf("path %d, want 1", d.Path)
	}
	paths[1].MinRTT = 0 // unknown: the smoothed RTT counts
	if d := mustPreset(t, "urgent-fast").Decide(Hint{Style, 17000, 0}, paths, t0); d.Path != 0 {
		t.Errorf("no minimum: path %d, want 0", d.Path)
	}
}

func TestLoadFile(t *testing.T) {
	p, err := Load("testdata/example.rules")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "example" || len(p.Rules) != 5 || p.Rules[0].Line != 7 || p.Rules[4].BudgetPct != 20 || p.Rules[3].Tail != 32<<10 {
		t.Errorf("%+v", p)
	}
	checkRoundTrip(t, p)
	lossy := twoPaths()
	lossy[1].Loss = 0.03
	if d := p.Decide(Hint{Document, 30000, 0}, lossy, t0); d != (Decision{Path: 1, Second: 0, Rule: 7}) {
		t.Errorf("document under loss: %+v", d)
	}
}

// cap fast 25%: the fast path takes requests while its bytes stay within a
// quarter of the load's (known: the page's), so the load's first request
// may go there; the rest falls back to the cheapest path. Unknown load: a
// quarter of the bytes placed so far. A redundant copy beyond the cap is
// not made; CapFits says the same of a tail.
func TestDecideCap(t *testing.T) {
	p, err := Parse("c.rules", "cap fast 25%\nurgent -> path=fast redundant\n* -> path=fast")
	if err != nil {
		t.Fatal(err)
	}
	doc, img := Hint{Document, 26000, 0}, Hint{Image, 26000, 2}
	paths := twoPaths()
	if d := p.DecideLoad(img, paths, t0, 330000); d.Path != 1 {
		t.Errorf("first request, 26 KB of a 330 KB load: path %d, want fast", d.Path)
	}
	if d := p.DecideLoad(img, paths, t0, 0); d.Path != 0 {
		t.Errorf("first request, load unknown: path %d, want cheap (100 %% of the bytes placed)", d.Path)
	}
	paths[1].Sent = 56500 // 56.5 + 26 = 82.5 KB: exactly 25 % of 330 KB
	if d := p.DecideLoad(img, paths, t0, 330000); d.Path != 1 {
		t.Errorf("82.5 KB of 330 KB: path %d, want fast", d.Path)
	}
	if !p.CapFits(1, 26000, paths, t0, 330000) || p.CapFits(1, 26001, paths, t0, 330000) || !p.CapFits(0, 1e9, paths, t0, 330000) {
		t.Error("CapFits: want 26000 more bytes to fit on fast, 26001 not, and cheap uncapped")
	}
	paths[1].Sent++
	if d := p.DecideLoad(img, paths, t0, 330000); d.Path != 0 {
		t.Errorf("82501 B of 330 KB: path %d, want cheap", d.Path)
	}
	// The document goes on cheap, and its redundant copy on fast would
	// exceed the cap: none.
	if d := p.DecideLoad(doc, paths, t0, 330000); d.Path != 0 || d.Second != -1 {
		t.Errorf("document over the cap: %+v, want cheap and no copy", d)
	}
	paths[1].Sent = 0
	if d := p.DecideLoad(doc, paths, t0, 330000); d.Path != 1 || d.Second != 0 {
		t.Errorf("document within the cap: %+v, want fast and a copy on cheap", d)
	}
	// Bytes placed beyond the load's (copies: tails, redundant requests)
	// do not widen the cap: it stays a share of the load's bytes.
	paths[0].Sent, paths[1].Sent = 400000, 72500
	if d := p.DecideLoad(Hint{Image, 10000, 2}, paths, t0, 330000); d.Path != 1 {
		t.Errorf("82.5 KB on fast, 472.5 KB placed of a 330 KB load: path %d, want fast", d.Path)
	}
	if d := p.DecideLoad(Hint{Image, 10001, 2}, paths, t0, 330000); d.Path != 0 {
		t.Errorf("82501 B on fast, 472.5 KB placed of a 330 KB load: path %d, want cheap", d.Path)
	}
	// A cap names a path by name too.
	q, _ := Parse("n.rules", "cap expensive 10%\n* -> path=expensive")
	if d := q.DecideLoad(img, twoPaths(), t0, 100000); d.Path != 0 {
		t.Errorf("26 KB of 100 KB over a 10 %% cap by name: path %d, want cheap", d.Path)
	}
}

// capped-tail (and capped, without the tail) spends its quarter of the
// page on the urgent requests in the order it is asked for them: on dmm (26.4 KB document, 17.6 KB style
// sheets, 26.4 KB scripts; 330 KB in all), the document and both style
// sheets fit, a script after them does not; the bulk goes on cheap with a
// 16 KB tail, which may use what is left (CapFits).
func TestCappedTailSpendsInOrder(t *testing.T) {
	p := mustPreset(t, "capped-tail")
	paths := twoPaths()
	for i, tc := range []struct {
		h    Hint
		want Decision
	}{
		{Hint{Document, 26400, 0}, Decision{Path: 1, Second: -1, Rule: 3}},
		{Hint{Style, 17600, 0}, Decision{Path: 1, Second: -1, Rule: 3}},
		{Hint{Style, 17600, 0}, Decision{Path: 1, Second: -1, Rule: 3}},
		{Hint{Script, 26400, 1}, Decision{Path: 0, Second: -1, Rule: 3}},
		{Hint{Image, 4400, 2}, Decision{Path: 0, Second: -1, Tail: 16000, Rule: 4}},
	} {
		d := p.DecideLoad(tc.h, paths, t0, 330000)
		if d != tc.want {
			t.Fatalf("request %d (%+v): %+v, want %+v", i, tc.h, d, tc.want)
		}
		paths[d.Path].Sent += tc.h.Size
	}
	if !p.CapFits(1, 20900, paths, t0, 330000) || p.CapFits(1, 20901, paths, t0, 330000) {
		t.Errorf("tails: want 20900 more bytes on fast to fit (82.5 KB - 61.6 KB), 20901 not")
	}
	if p.Gather != 2*time.Millisecond {
		t.Errorf("gather %v, want 2ms", p.Gather)
	}
}

func TestFirst(t *testing.T) {
	order := []Hint{
		{Document, 30000, 0},
		{Style, 10000, 0},
		{Script, 5000, 1},
		{Script, -1, 1},
		{Font, 1000, 0},
		{Image, 1000, 2},
		{Image, 1000, -1},
		{Other, -1, -1},
	}
	for i := range order {
		for j := range order {
			// Document and style sheet of the same urgency: the smaller first.
			want := i < j
			if i <= 1 && j <= 1 {
				want = order[i].Size < order[j].Size
			}
			if got := First(order[i], order[j]); got != want && i != j {
				t.Errorf("First(%+v, %+v) = %v, want %v", order[i], order[j], got, want)
			}
		}
	}
}

// capped-split on google's load (74000 bytes, exp at most 18500): the
// 12333-byte document fits whole; the async script found next does not
// (6167 bytes left), so its first 6167 bytes go on exp and the other 6166
// on cheap at once; the images go on cheap; once exp is full, the next
// script goes whole on cheap (nothing left to split). One whose size is
// unknown is not split.
func TestSplit(t *testing.T) {
	p := mustPreset(t, "capped-split")
	paths := twoPaths()
	const load = 74000
	for i, tc := range []struct {
		h    Hint
		want Decision
	}{
		{Hint{Document, 12333, 0}, Decision{Path: 1, Second: -1, Rule: 3}},
		{Hint{AsyncScript, 12333, 3}, Decision{Path: 1, Second: -1, Split: 6167, Rest: 0, Rule: 3}},
		{Hint{Image, 6167, 2}, Decision{Path: 0, Second: -1, Rule: 4}},
		{Hint{Script, 12333, 1}, Decision{Path: 0, Second: -1, Rule: 3}},
	} {
		d := p.DecideLoad(tc.h, paths, t0, load)
		if d != tc.want {
			t.Fatalf("request %d (%+v): %+v, want %+v", i, tc.h, d, tc.want)
		}
		if d.Split > 0 {
			paths[d.Path].Sent += d.Split
			paths[d.Rest].Sent += tc.h.Size - d.Split
		} else {
			paths[d.Path].Sent += max(tc.h.Size, 0)
		}
	}
	if paths[1].Sent != 18500 || p.CapRoom(1, 0, paths, t0, load) != 0 {
		t.Errorf("exp carries %d bytes, room %d: want the cap's 18500, none left", paths[1].Sent, p.CapRoom(1, 0, paths, t0, load))
	}
	if d := p.DecideLoad(Hint{Script, -1, 1}, twoPaths(), t0, load); d.Split != 0 {
		t.Errorf("unknown size: %+v, want no split", d)
	}
	// Without a cap there is no room to spend: the rule's path takes all.
	q, err := Parse("x.rules", "* -> path=fast split")
	if err != nil {
		t.Fatal(err)
	}
	if d := q.DecideLoad(Hint{Script, 12333, 1}, twoPaths(), t0, load); d.Split != 0 || d.Path != 1 {
		t.Errorf("no cap: %+v, want the whole on fast", d)
	}
	if got := q.CapRoom(1, 0, twoPaths(), t0, load); got != math.MaxInt64 {
		t.Errorf("no cap: room %d, want MaxInt64", got)
	}
}

// Join on hints-latency's pinterest (h75): the 344,000-byte document on
// exp (path 1) has 96,000 bytes in at 160 ms, 80 ms after its first byte
// (1.2 MB/s), when cheap (RTT 80 ms, no bandwidth measured yet, idle)
// comes up. By hand: alone exp ends the rest (248,000 bytes) in 206.7 ms.
// Joined, cheap's first byte comes at +80 ms, 14,480 bytes (10 segments)
// in its first round trip and 28,960 in its second from +160 ms, at exp's
// rate for want of its own: 1.2e6 T + 14,480 + 1.2e6 (T - 0.16) = 248,000
// gives T = 177.3 ms (within cheap's second round trip, 21,720 bytes over
// 18.1 ms), the cut at 96,000 + 1.2e6 T = 308,760 and cheap's part 35,240
// bytes, both ending at +177.3 ms.
func TestJoin(t *testing.T) {
	p := mustPreset(t, "capped-join")
	const load = 1548000
	now := t0.Add(160 * time.Millisecond)
	paths := twoPaths()
	paths[0].Bandwidth = 0
	paths[1].Sent, paths[1].Queued = 344000, 248000
	// Asked for at 50 ms, cheap still in its handshake: held for a join.
	connecting := twoPaths()
	connecting[0].Up, connecting[0].RTT, connecting[0].DialStart = false, 0, t0
	d := p.DecideLoad(Hint{Document, 344000, 0}, connecting, t0.Add(50*time.Millisecond), load)
	if want := (Decision{Path: 1, Second: -1, Join: true, Rule: 3}); d != want {
		t.Fatalf("document: %+v, want %+v", d, want)
	}
	// Asked for with both paths up (a script found later): not held.
	if d := p.DecideLoad(Hint{Script, 344000, 1}, twoPaths(), t0, load); d.Join {
		t.Errorf("script with every path up: %+v, want no join", d)
	}
	tr := Transfer{Path: 1, Size: 344000, Received: 96000, Start: t0.Add(60 * time.Millisecond), FirstByte: t0.Add(80 * time.Millisecond), LastByte: now, Held: 96000 + 65536}
	j, at := p.Join(d, tr, paths, now, load)
	if j != 0 || at < 308757 || at > 308763 {
		t.Fatalf("join: path %d at %d, want cheap (0) at 308,760", j, at)
	}
	// A longer rest (a 396,000-byte document): cheap's first two round
	// trips (14,480 and 21,720 bytes) end at +160+18.1 ms, before exp ends
	// its part, and its third starts at +240 ms, after: exp ends the rest
	// less cheap's 36,200 bytes, at 1.2e6 T = 300,000 - 36,200, T = 219.8
	// ms, the cut at 359,800 (doubling, cheap would be given 43,440 bytes,
	// which its first two round trips do not bring).
	long := tr
	long.Size = 396000
	if j, at := p.Join(d, long, paths, now, load); j != 0 || at < 359797 || at > 359803 {
		t.Errorf("396,000 bytes: path %d at %d, want cheap at 359,800", j, at)
	}
	// Credit already given past that point is not taken back: the cut is
	// where it ends (cheap's 24,000 bytes end at +167.9 ms, exp's at
	// +186.7, before exp alone's +206.7).
	held := tr
	held.Held = 320000
	if j, at := p.Join(d, held, paths, now, load); j != 0 || at != 320000 {
		t.Errorf("held to 320,000: path %d at %d, want cheap at 320,000", j, at)
	}
	// cheap measured at 0.6 MB/s (a BDP of 48,000 bytes): 1.2e6 T +
	// 14,480 + 0.6e6 (T - 0.16) = 248,000 gives T = 183.07 ms, the cut at
	// 315,680.
	slow := slices.Clone(paths)
	slow[0].Bandwidth = 0.6e6
	if j, at := p.Join(d, tr, slow, now, load); j != 0 || at < 315677 || at > 315683 {
		t.Errorf("cheap at 0.6 MB/s: path %d at %d, want cheap at 315,680", j, at)
	}
	for name, change := range map[string]func(*Decision, *Transfer, []PathState, **Policy){
		"no join rule":          func(d *Decision, _ *Transfer, _ []PathState, _ **Policy) { d.Join = false },
		"split":                 func(d *Decision, _ *Transfer, _ []PathState, _ **Policy) { d.Split = 1000 },
		"not held":              func(_ *Decision, tr *Transfer, _ []PathState, _ **Policy) { tr.Held = 0 },
		"no first byte":         func(_ *Decision, tr *Transfer, _ []PathState, _ **Policy) { tr.FirstByte = time.Time{} },
		"a tail":                func(_ *Decision, tr *Transfer, _ []PathState, _ **Policy) { tr.From = 1000 },
		"cheap busy":            func(_ *Decision, _ *Transfer, ps []PathState, _ **Policy) { ps[0].Queued = 1 },
		"cheap connecting":      func(_ *Decision, _ *Transfer, ps []PathState, _ **Policy) { ps[0].Up = false },
		"held past the cut":     func(_ *Decision, tr *Transfer, _ []PathState, _ **Policy) { tr.Held = 340000 }, // 4,000 bytes: under a first window
		"rest under one window": func(_ *Decision, tr *Transfer, _ []PathState, _ **Policy) { tr.Received, tr.Held = 330000, 340000 },
		"cheap capped at 15,480": func(_ *Decision, _ *Transfer, _ []PathState, p **Policy) {
			*p = mustParse(t, "cap fast 25%\ncap cheap 1%\nclass=document -> path=fast join\n* -> path=cheap")
		},
	} {
		dd, trr, ps, pol := d, tr, slices.Clone(paths), p
		change(&dd, &trr, ps, &pol)
		if j, at := pol.Join(dd, trr, ps, now, load); j >= 0 {
			t.Errorf("%s: joined on path %d at %d, want no join", name, j, at)
		}
	}
}

func mustParse(t *testing.T, text string) *Policy {
	t.Helper()
	p, err := Parse("test.rules", text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
