package conform

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func TestCaseTable(t *testing.T) {
	cases := Cases()
	if len(cases) < 146 {
		t.Errorf("%d cases, want at least 146", len(cases))
	}
	id := regexp.MustCompile(`^(http2|hpack)/[0-9.]+/[0-9]+$`)
	seen := map[string]bool{}
	for _, c := range cases {
		if !id.MatchString(c.ID) {
			t.Errorf("case id %q is not like http2/6.5/1", c.ID)
		}
		if seen[c.ID] {
			t.Errorf("case id %q twice", c.ID)
		}
		seen[c.ID] = true
		if c.Section == "" || c.Desc == "" {
			t.Errorf("%s: no section or description", c.ID)
		}
		if (c.Expect.Kind == ConnError || c.Expect.Kind == StreamError) && len(c.Expect.Codes) == 0 {
			t.Errorf("%s: an error case names no error code", c.ID)
		}
	}
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    int // -1: at least one
	}{{"http2/6.5/1", 1}, {"http2/6.5.2/*", 14}, {"hpack/", -1}, {"", len(Cases())}} {
		got, err := Select(tc.pattern)
		if err != nil || tc.want >= 0 && len(got) != tc.want || len(got) == 0 {
			t.Errorf("Select(%q) = %d cases, %v; want %d", tc.pattern, len(got), err, tc.want)
		}
	}
	if _, err := Select("nope/"); err == nil {
		t.Error("Select(nope/) matched")
	}
}

// out builds an outcome of a case expecting e from the client's frames and result.
func out(e Expect, res Result, frames ...Frame) *Outcome {
	c := &Case{ID: "http2/0/1", Expect: e}
	l := newConnLog()
	l.add(Frame{Type: http2.FrameHeaders, Stream: 1, Path: "/case/http2/0/1"})
	for _, f := range frames {
		l.add(f)
	}
	return &Outcome{Case: c, Result: res, Conns: []*ConnLog{l}}
}

func TestJudge(t *testing.T) {
	body := []byte("conform http2/0/1\n")
	ok := Result{Stdout: body}
	failed := Result{Exit: 1}
	hung := Result{Exit: -1, TimedOut: true}
	wrong := Result{Stdout: body[:5]}
	goaway := func(c http2.ErrCode) Frame { return Frame{Type: http2.FrameGoAway, Code: c} }
	rst := func(id uint32, c http2.ErrCode) Frame { return Frame{Type: http2.FrameRSTStream, Stream: id, Code: c} }
	for _, tc := range []struct {
		name string
		o    *Outcome
		want Verdict
	}{
		{"conn: GOAWAY with the code", out(connErr(codeProtocol), failed, goaway(codeProtocol)), Pass},
		{"conn: GOAWAY, then killed", out(connErr(codeProtocol), hung, goaway(codeProtocol)), Pass},
		{"conn: GOAWAY with another code", out(connErr(codeProtocol), failed, goaway(codeInternal)), Fail},
		{"conn: closed by a failing client", out(connErr(codeProtocol), failed), Pass},
		{"conn: a stream error instead", out(connErr(codeProtocol), failed, rst(1, codeProtocol)), Fail},
		{"conn: ignored", out(connErr(codeProtocol), ok), Fail},
		{"conn: hung", out(connErr(codeProtocol), hung), Fail},
		{"conn: exit 0 with a wrong body", out(connErr(codeProtocol), wrong), Fail},
		{"stream: RST_STREAM with the code", out(streamErr(codeProtocol), failed, rst(1, codeProtocol)), Pass},
		{"stream: RST_STREAM on another stream", out(streamErr(codeProtocol), ok, rst(3, codeProtocol)), Fail},
		{"stream: GOAWAY with the code", out(streamErr(codeProtocol), failed, goaway(codeProtocol)), Pass},
		{"stream: RST_STREAM CANCEL", out(streamErr(codeProtocol), failed, rst(1, codeCancel)), Fail},
		{"stream: failed", out(streamErr(codeProtocol), failed), Pass},
		{"stream: accepted", out(streamErr(codeProtocol), ok), Fail},
		{"complete", out(complete(), ok), Pass},
		{"complete: wrong body", out(complete(), wrong), Fail},
		{"complete: failed", out(complete(), failed), Fail},
		{"complete: hung", out(complete(), hung), Fail},
		{"complete: but a GOAWAY with an error", out(complete(), ok, goaway(codeProtocol)), Fail},
		{"complete: GOAWAY NO_ERROR", out(complete(), ok, goaway(codeNo)), Pass},
		{"complete or calm: calm", out(complete(codeCalm), failed, goaway(codeCalm)), Pass},
		{"complete or closed: RST_STREAM STREAM_CLOSED", out(complete(codeClosed), ok, rst(1, codeClosed)), Pass},
		{"complete: a given-up stream cancelled", out(complete(), ok, rst(1, codeCancel)), Pass},
		{"complete or calm: failed and closed", out(complete(codeCalm), failed), Pass},
		{"complete or calm: GOAWAY with another code", out(complete(codeCalm), failed, goaway(codeProtocol)), Fail},
		{"complete or calm: hung", out(complete(codeCalm), hung), Fail},
		{"reject: failed", out(reject(), failed), Pass},
		{"reject: truncated success", out(reject(), wrong), Fail},
		{"reject: hung", out(reject(), hung), Fail},
	} {
		if got, did := Judge(tc.o); got != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.name, got, did, tc.want)
		}
	}
	// A case that does not apply is skipped whatever the reaction.
	o := out(connErr(codeProtocol), ok)
	o.Case.NotApplicable = func(*Outcome) string { return "push enabled" }
	if v, did := Judge(o); v != Skip || did != "push enabled" {
		t.Errorf("not applicable: %v %s", v, did)
	}
	// A requirement of the case and a script's note fail a passing reaction.
	o = out(complete(), ok)
	o.Notes = []string{"no SETTINGS ACK"}
	if v, did := Judge(o); v != Fail || !strings.Contains(did, "no SETTINGS ACK") {
		t.Errorf("note: %v %s", v, did)
	}
}

// TestHeaderBlocks decodes the hand-made representations with x/net's
// decoder: what the cases call valid must decode to the fields meant.
func TestHeaderBlocks(t *testing.T) {
	long := strings.Repeat("v", 300)
	for _, tc := range []struct {
		name  string
		block []byte
		want  []hpack.HeaderField
	}{
		{"literal", hLiteral(nil, "x-a", "b"), []hpack.HeaderField{hf("x-a", "b")}},
		{"long value", hLiteral(nil, "x-a", long), []hpack.HeaderField{hf("x-a", long)}},
		{"indexed static", hIndexed(nil, 8), []hpack.HeaderField{status200}},
		{"incremental then indexed", hIndexed(hIncremental(nil, "x-d", "v"), 62), []hpack.HeaderField{hf("x-d", "v"), hf("x-d", "v")}},
		{"never indexed", hNeverIndexed(nil, "x-s", "v"), []hpack.HeaderField{{Name: "x-s", Value: "v", Sensitive: true}}},
		{"named", hNamed(nil, 31, "text/plain"), []hpack.HeaderField{hf("content-type", "text/plain")}},
		{"huffman", hHuff(hHuff([]byte{0}, "x-h"), "value"), []hpack.HeaderField{hf("x-h", "value")}},
		{"size update first", append(hSizeUpdate(nil, 0), block(status200)...), []hpack.HeaderField{status200}},
		{"padTo", padTo(block(status200), 16385), nil},
	} {
		d := hpack.NewDecoder(4096, nil)
		d.SetMaxStringLength(1 << 20)
		got, err := d.DecodeFull(tc.block)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.want == nil {
			if len(tc.block) != 16385 {
				t.Errorf("%s: %d bytes", tc.name, len(tc.block))
			}
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: field %d = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	for _, n := range []uint64{0, 30, 31, 127, 128, 1 << 20, 1<<32 + 5} {
		b := hInt(nil, 0x20, 5, n)
		if got, _ := readInt(b, 5); got != n {
			t.Errorf("hInt(%d) reads back %d", n, got)
		}
	}
}

// readInt decodes an HPACK integer, for the round trip above.
func readInt(b []byte, n uint) (uint64, int) {
	max := uint64(1)<<n - 1
	v := uint64(b[0]) & max
	if v < max {
		return v, 1
	}
	var shift uint
	for i := 1; i < len(b); i++ {
		v += uint64(b[i]&0x7f) << shift
		shift += 7
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// TestCommandTimeout: a command still running when ctx ends is killed and
// reported as timed out; one that exits first is not. Under -race it also
// checks that Get reads whether it killed the command only after the
// goroutine that kills it has said so.
func TestCommandTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := Command("sleep 10; echo {url}").Get(ctx, "http://x/")
	if !r.TimedOut || r.Exit != -1 {
		t.Fatalf("a command past its context: timed out %v, exit %d; want true, -1", r.TimedOut, r.Exit)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Get returned after %v: the command was not killed", d)
	}
	r = Command("echo {url}; exit 3").Get(context.Background(), "http://x/")
	if r.TimedOut || r.Exit != 3 || string(r.Stdout) != "http://x/\n" {
		t.Fatalf("a command that exits: timed out %v, exit %d, stdout %q; want false, 3, the URL", r.TimedOut, r.Exit, r.Stdout)
	}
}
