package mph2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/hints"
)

// A split over the loopback server: with exp capped at 40 % of a
// 50000-byte load, the object's first 20000 bytes come by Range from exp
// and the other 30000 from cheap at once; every byte checked. A second
// object finds exp full and goes whole on cheap.
func TestHintedSplit(t *testing.T) {
	h, base := startHinted(t, "cap exp 40%\n* -> path=exp split", loopPath("", 0, 0), loopPath("", 0, 0))
	h.Expect = 60000
	g := getChecked(t, h, base, 50000, hints.Hint{Class: hints.Script, Size: 50000, Urgency: 1})
	s := h.Stats()
	if g.Decision.Split != 24000 || s.Splits != 1 || s.Paths[1].Used != 24000 || s.Paths[0].Used != 26000 || s.Paths[0].Requests != 1 || s.Paths[1].Requests != 1 || s.Wasted != 0 {
		t.Errorf("decision %+v, stats %+v: want 24000 bytes (40 %% of 60000) from exp, 26000 from cheap, one request each", g.Decision, s)
	}
	g = getChecked(t, h, base, 10000, hints.Hint{Class: hints.Script, Size: 10000, Urgency: 1})
	if s := h.Stats(); g.Decision.Split != 0 || g.Path != 0 || s.Paths[1].Used != 24000 {
		t.Errorf("second object: decision %+v on path %d, exp used %d; want it whole on cheap", g.Decision, g.Path, s.Paths[1].Used)
	}
}

// getAsync asks for the object with hint (and extra request headers hdr)
// through Get in the background.
func getAsync(t *testing.T, h *Hinted, hint hints.Hint, hdr http.Header) func() *Got {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return background(t, "object", func() (*Got, error) { return h.Get(ctx, "http://origin.test/obj", hint, hdr) })
}

// answerPart checks that x asks for want's bytes [off, end) (end 0: to the
// end) and answers them: 206, ETag v1; the body is written by the caller.
func answerPart(t *testing.T, x *fakeExchange, want []byte, off, end int) *io.PipeWriter {
	t.Helper()
	last := ""
	if end > 0 {
		last = fmt.Sprint(end - 1)
	} else {
		end = len(want)
	}
	if r := x.req.Header.Get("Range"); r != fmt.Sprintf("bytes=%d-%s", off, last) {
		t.Fatalf("asked with Range %q, want bytes=%d-%s", r, off, last)
	}
	hdr := objHeader(`"v1"`)
	hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, end-1, len(want)))
	return x.answer(206, hdr, int64(end-off))
}

// splitPolicy caps exp at 40 % of a 50000-byte load: a 50000-byte object
// is split at 20000.
func splitHinted(t *testing.T) (*Hinted, [2]*fakePath, []byte) {
	h, fakes := fakeHinted(t, "cap exp 40%\n* -> path=exp split")
	h.Expect = 50000
	return h, fakes, object(50000)
}

// The rest (on cheap) may answer before the head: the object is whole once
// both are, its bytes in order.
func TestHintedSplitRestFirst(t *testing.T) {
	h, fakes, want := splitHinted(t)
	got := getAsync(t, h, hints.Hint{Class: hints.Script, Size: 50000, Urgency: 1}, nil)
	head, rest := fakes[1].next(t), fakes[0].next(t)
	write(t, answerPart(t, rest, want, 20000, 0), want[20000:])
	write(t, answerPart(t, head, want, 0, 20000), want[:20000])
	g := got()
	if !bytes.Equal(g.Body, want) || g.Status != http.StatusOK || g.Header.Get("Content-Range") != "" || g.Header.Get("Content-Length") != "50000" {
		t.Fatalf("status %d, header %v, body of %d bytes: want 200 and the object's", g.Status, g.Header, len(g.Body))
	}
	if s := h.Stats(); s.Splits != 1 || s.Paths[1].Used != 20000 || s.Paths[0].Used != 30000 || s.Wasted != 0 {
		t.Errorf("stats %+v", s)
	}
}

// The head's connection dies after 5000 bytes while the rest completes on
// cheap: the object is asked for again from byte 5000 (on cheap, exp's
// connection being the one lost) and delivered whole.
func TestHintedSplitHeadLost(t *testing.T) {
	h, fakes, want := splitHinted(t)
	got := getAsync(t, h, hints.Hint{Class: hints.Script, Size: 50000, Urgency: 1}, nil)
	head, rest := fakes[1].next(t), fakes[0].next(t)
	pw := answerPart(t, head, want, 0, 20000)
	write(t, pw, want[:5000])
	write(t, answerPart(t, rest, want, 20000, 0), want[20000:])
	pw.CloseWithError(io.ErrUnexpectedEOF)
	answerRange(t, fakes[0].next(t), want, 5000)
	if g := got(); !bytes.Equal(g.Body, want) {
		t.Fatalf("body of %d bytes differs from the object", len(g.Body))
	}
	if s := h.Stats(); s.Splits != 1 || s.Reissued != 1 {
		t.Errorf("stats %+v: want one split, asked again once", s)
	}
}

// A server without ranges answers the head whole (200): it completes the
// object alone.
func TestHintedSplitNoRanges(t *testing.T) {
	h, fakes, want := splitHinted(t)
	got := getAsync(t, h, hints.Hint{Class: hints.Script, Size: 50000, Urgency: 1}, nil)
	head, _ := fakes[1].next(t), fakes[0].next(t)
	write(t, head.answer(http.StatusOK, objHeader(`"v1"`), int64(len(want))), want)
	if g := got(); !bytes.Equal(g.Body, want) || g.Path != 1 {
		t.Fatalf("body of %d bytes (path %d): want the object, from exp", len(g.Body), g.Path)
	}
}

// A join over the loopback server: a 600,000-byte document goes whole on
// exp (1 MB/s), alone up; cheap comes up 150 ms later, idle, and takes the
// rest from a cut (by Range) while exp's stream, its credit held, stops
// exactly there: exp receives no DATA past the cut, nothing is read twice,
// every byte is checked.
func TestHintedJoin(t *testing.T) {
	cheap := loopPath("", 0, 0)
	dial := cheap.Dial
	cheap.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(150 * time.Millisecond)
		return dial(ctx, network, addr)
	}
	h, base := startHinted(t, "class=document -> path=exp join\n* -> path=cheap", cheap, loopPath("", 1e6, 0))
	const size = 600000
	g := getChecked(t, h, base, size, hints.Hint{Class: hints.Document, Size: size, Urgency: 0})
	s := h.Stats()
	exp, ch := s.Paths[1], s.Paths[0]
	if s.Joins != 1 || g.Decision.Split <= 0 || g.Decision.Rest != 0 || exp.Used != g.Decision.Split || ch.Used != size-g.Decision.Split || ch.Requests != 1 || s.Wasted != 0 {
		t.Fatalf("decision %+v, stats %+v: want one join, exp's bytes up to the cut, cheap's from it", g.Decision, s)
	}
	if exp.Received != exp.Used {
		t.Errorf("exp received %d bytes of DATA, used %d: want its stream stopped at the cut", exp.Received, exp.Used)
	}
	// Without join the whole stays on exp.
	h, base = startHinted(t, "class=document -> path=exp\n* -> path=cheap", loopPath("", 0, 0), loopPath("", 0, 0))
	if g := getChecked(t, h, base, 100000, hints.Hint{Class: hints.Document, Size: 100000, Urgency: 0}); g.Path != 1 || h.Stats().Joins != 0 {
		t.Errorf("no join rule: path %d, stats %+v", g.Path, h.Stats())
	}
}

// A join rule needs streams whose credit the client holds.
func TestHintedJoinNeedsFlowControl(t *testing.T) {
	pol, err := hints.Parse("x.rules", "urgent -> path=fast join\n* -> path=cheap")
	if err != nil {
		t.Fatal(err)
	}
	h := &Hinted{Client: &Client{Paths: []Path{{Name: "cheap"}, {Name: "exp"}}, EndAdjust: EndReset}, Policy: pol}
	if err := h.Start("http://origin.test"); err == nil || !strings.Contains(err.Error(), "EndFlowControl") {
		t.Errorf("Start: %v, want an error naming EndFlowControl", err)
	}
}
