package conform

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/net/http2"
)

// Case is one test: what the server does after the client's request, and
// the reaction the RFC requires.
type Case struct {
	ID      string // h2spec style: "http2/6.5/1", "hpack/5.2/1"
	Section string // the RFC and section: "RFC 9113 6.5"
	Desc    string // what the server does, from the client's side
	Expect  Expect
	// Preface, when set, replaces the server's connection preface (an empty
	// SETTINGS frame); it is sent before Serve runs.
	Preface func(s *Session) error
	// Serve answers the request on s.Stream. It returns when its script is
	// done; the session keeps reading the client's frames until the case ends.
	Serve func(s *Session) error
	// Upload: the client under test sends a request body (UploadBody) in a
	// POST; such cases need a client command that uploads.
	Upload bool
	// Body is the response body a completing request must deliver exactly;
	// empty: "conform <id>\n".
	Body []byte
	// NotApplicable, when set, returns why the case says nothing about
	// this client (it enabled push, so a PUSH_PROMISE is no violation): the
	// case is skipped, not passed.
	NotApplicable func(o *Outcome) string
	// Check, when set, adds a requirement read from the outcome (a SETTINGS
	// ACK owed, no stream opened after GOAWAY...); a non-nil error fails the case.
	Check func(o *Outcome) error
}

// body is the response body of the case.
func (c *Case) body() []byte {
	if c.Body != nil {
		return c.Body
	}
	return []byte("conform " + c.ID + "\n")
}

// Kind is the class of reaction a case requires.
type Kind int

const (
	// ConnError: a GOAWAY with one of Codes, or the client closing the
	// connection and failing the request by itself.
	ConnError Kind = iota
	// StreamError: RST_STREAM on the request's stream with one of Codes (a
	// GOAWAY with one of them is allowed too, RFC 9113 5.4.1), or the
	// client failing the request by itself.
	StreamError
	// Complete: the client exits 0 and prints exactly the body; a GOAWAY
	// or RST_STREAM it sends must carry NO_ERROR (or CANCEL on a stream it
	// gave up) or one of Codes. Codes name a connection error accepted
	// instead of completing (a flood answered with ENHANCE_YOUR_CALM): a
	// GOAWAY with one of them, or the client failing and closing by itself.
	Complete
	// Reject: the request must fail (the client exits non-zero by itself),
	// whatever it sends: a reset or truncated response is not a success.
	Reject
)

// Expect is the reaction a case requires.
type Expect struct {
	Kind  Kind
	Codes []http2.ErrCode
}

func connErr(codes ...http2.ErrCode) Expect   { return Expect{ConnError, codes} }
func streamErr(codes ...http2.ErrCode) Expect { return Expect{StreamError, codes} }
func complete(alt ...http2.ErrCode) Expect    { return Expect{Complete, alt} }
func reject() Expect                          { return Expect{Kind: Reject} }

func (e Expect) has(code http2.ErrCode) bool {
	for _, c := range e.Codes {
		if c == code {
			return true
		}
	}
	return false
}

func codeList(codes []http2.ErrCode) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = c.String()
	}
	return strings.Join(s, " or ")
}

func (e Expect) String() string {
	switch e.Kind {
	case ConnError:
		return "connection error: GOAWAY " + codeList(e.Codes) + ", or the connection closed"
	case StreamError:
		return "stream error: RST_STREAM " + codeList(e.Codes) + " (or GOAWAY), or the request failed"
	case Complete:
		if len(e.Codes) > 0 {
			return "the request completes with the exact body, or a connection error: GOAWAY " + codeList(e.Codes) + ", or the connection closed"
		}
		return "the request completes with the exact body"
	default:
		return "the request fails (no truncated or reset response reported as success)"
	}
}

// Result is what a client run produced.
type Result struct {
	Exit     int  // exit status; 0 success
	TimedOut bool // killed at the case's timeout
	Stdout   []byte
	Stderr   []byte
}

// Outcome is everything a verdict is read from.
type Outcome struct {
	Case   *Case
	Result Result
	Conns  []*ConnLog // the case's connections, in the order they came
	Notes  []string   // what the scripts saw go wrong (a window overrun...)
}

// Frames returns the frames of the given type the client sent on all the
// case's connections.
func (o *Outcome) Frames(t http2.FrameType) []Frame {
	var fs []Frame
	for _, c := range o.Conns {
		for _, f := range c.Frames {
			if f.Type == t {
				fs = append(fs, f)
			}
		}
	}
	return fs
}

// succeeded: the client exited 0 by itself and printed exactly the body.
func (o *Outcome) succeeded() bool {
	r := o.Result
	return !r.TimedOut && r.Exit == 0 && bytes.Equal(r.Stdout, o.Case.body())
}

// failed: the client gave up by itself, with a non-zero exit.
func (o *Outcome) failed() bool { return !o.Result.TimedOut && o.Result.Exit != 0 }

// Verdict is a case's result.
type Verdict int

const (
	Pass Verdict = iota
	Fail
	Skip
)

func (v Verdict) String() string { return [...]string{"PASS", "FAIL", "SKIP"}[v] }

// errorFrames lists the GOAWAY and RST_STREAM frames the client sent with
// an error code other than NO_ERROR, RST_STREAMs only on the case's
// request streams.
func (o *Outcome) errorFrames() (goaways, rsts []Frame) {
	for _, c := range o.Conns {
		for _, f := range c.Frames {
			switch {
			case f.Type == http2.FrameGoAway && f.Code != http2.ErrCodeNo:
				goaways = append(goaways, f)
			case f.Type == http2.FrameRSTStream && f.Code != http2.ErrCodeNo && c.isRequest(f.Stream):
				rsts = append(rsts, f)
			}
		}
	}
	return goaways, rsts
}

// Judge reads the verdict off the outcome, with what the client did.
func Judge(o *Outcome) (Verdict, string) {
	if o.Case.NotApplicable != nil {
		if why := o.Case.NotApplicable(o); why != "" {
			return Skip, why
		}
	}
	v, what := judgeReaction(o)
	if v == Pass && o.Case.Check != nil {
		if err := o.Case.Check(o); err != nil {
			return Fail, what + "; but " + err.Error()
		}
	}
	if v == Pass && len(o.Notes) > 0 {
		return Fail, what + "; but " + strings.Join(o.Notes, "; ")
	}
	return v, what
}

func judgeReaction(o *Outcome) (Verdict, string) {
	e := o.Case.Expect
	goaways, rsts := o.errorFrames()
	did := o.describe(goaways, rsts)
	switch e.Kind {
	case ConnError, StreamError:
		for _, g := range goaways {
			if e.has(g.Code) {
				return Pass, did
			}
		}
		if e.Kind == StreamError {
			for _, r := range rsts {
				if e.has(r.Code) {
					return Pass, did
				}
			}
		}
		if len(goaways)+len(rsts) > 0 {
			return Fail, did
		}
		if o.failed() {
			return Pass, did
		}
		return Fail, did
	case Complete:
		allowed := true
		for _, f := range append(goaways, rsts...) {
			// A stream the client gave up (one the server did not process,
			// sent again elsewhere) may be cancelled.
			if f.Type == http2.FrameRSTStream && f.Code == http2.ErrCodeCancel {
				continue
			}
			if !e.has(f.Code) {
				allowed = false
			}
		}
		if allowed && (o.succeeded() || len(goaways) > 0) {
			return Pass, did
		}
		// the alternative connection error, without GOAWAY (RFC 9113
		// 5.4.1: SHOULD send one), as for ConnError
		if len(e.Codes) > 0 && len(goaways)+len(rsts) == 0 && o.failed() {
			return Pass, did
		}
		return Fail, did
	default: // Reject
		if o.failed() {
			return Pass, did
		}
		return Fail, did
	}
}

// describe says what the client did, for the report.
func (o *Outcome) describe(goaways, rsts []Frame) string {
	var parts []string
	for _, g := range goaways {
		parts = append(parts, fmt.Sprintf("GOAWAY %v (last stream %d)", g.Code, g.Last))
	}
	for _, r := range rsts {
		parts = append(parts, fmt.Sprintf("RST_STREAM %v on stream %d", r.Code, r.Stream))
	}
	r := o.Result
	switch {
	case r.TimedOut:
		parts = append(parts, "no reaction: killed at the timeout")
	case r.Exit != 0:
		parts = append(parts, fmt.Sprintf("exit %d%s", r.Exit, tail(r.Stderr)))
	case bytes.Equal(r.Stdout, o.Case.body()):
		parts = append(parts, "completed with the exact body (exit 0)")
	default:
		parts = append(parts, fmt.Sprintf("exit 0 with a wrong body (%d bytes, want %d)", len(r.Stdout), len(o.Case.body())))
	}
	if len(o.Conns) > 1 {
		parts = append(parts, fmt.Sprintf("%d connections", len(o.Conns)))
	}
	return strings.Join(parts, "; ")
}

// tail is the last line of a client's stderr, for the report.
func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 160 {
		last = last[:160] + "..."
	}
	return ": " + last
}
