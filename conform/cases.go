package conform

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// Cases returns the whole suite, in report order; ids are unique.
func Cases() []*Case {
	casesOnce.Do(func() {
		for _, group := range [][]*Case{
			prefaceCases(), frameCases(), streamCases(), priorityCases(),
			dataCases(), headersCases(), rstCases(), settingsCases(),
			pushCases(), pingCases(), goawayCases(), windowCases(),
			continuationCases(), uploadCases(), httpCases(), hpackCases(), floodCases(),
		} {
			allCases = append(allCases, group...)
		}
	})
	return allCases
}

var (
	casesOnce sync.Once
	allCases  []*Case
)

// Shorthands for the tables.
const (
	codeNo       = http2.ErrCodeNo
	codeProtocol = http2.ErrCodeProtocol
	codeInternal = http2.ErrCodeInternal
	codeFlow     = http2.ErrCodeFlowControl
	codeClosed   = http2.ErrCodeStreamClosed
	codeSize     = http2.ErrCodeFrameSize
	codeRefused  = http2.ErrCodeRefusedStream
	codeCancel   = http2.ErrCodeCancel
	codeComp     = http2.ErrCodeCompression
	codeCalm     = http2.ErrCodeEnhanceYourCalm
)

const (
	typeData         = http2.FrameData
	typeHeaders      = http2.FrameHeaders
	typePriority     = http2.FramePriority
	typeRST          = http2.FrameRSTStream
	typeSettings     = http2.FrameSettings
	typePushPromise  = http2.FramePushPromise
	typePing         = http2.FramePing
	typeGoAway       = http2.FrameGoAway
	typeWindowUpdate = http2.FrameWindowUpdate
	typeContinuation = http2.FrameContinuation
	typeUnknown      = http2.FrameType(0x20) // no such type: extensions must ignore it

	flagEndStream  = http2.Flags(0x1)
	flagAck        = http2.Flags(0x1)
	flagEndHeaders = http2.Flags(0x4)
	flagPadded     = http2.Flags(0x8)
	flagPriority   = http2.Flags(0x20)
)

// step is one thing a script does; steps run in order, and the first
// error ends the script.
type step func(s *Session) error

func seq(steps ...step) func(*Session) error {
	return func(s *Session) error {
		for _, st := range steps {
			if err := st(s); err != nil {
				return err
			}
		}
		return nil
	}
}

// raw writes one frame; stream 0 means... stream 0. reqStream is the request's.
func raw(t http2.FrameType, flags http2.Flags, stream uint32, payload []byte) step {
	return func(s *Session) error { return s.Raw(t, flags, stream, payload) }
}

// onReq writes one frame on the request's stream.
func onReq(t http2.FrameType, flags http2.Flags, payload []byte) step {
	return func(s *Session) error { return s.Raw(t, flags, s.Stream, payload) }
}

// onIdle writes one frame on the client's next stream, idle (RFC 9113
// 5.1): a client that sent its request on stream n has not used n+2, while
// lower ones may be implicitly closed (nghttp sends PRIORITY frames for
// streams 3 to 11 and its request on 13).
func onIdle(t http2.FrameType, flags http2.Flags, payload []byte) step {
	return func(s *Session) error { return s.Raw(t, flags, s.Stream+2, payload) }
}

// respond writes the whole response.
func respond(s *Session) error { return s.Respond() }

// headersOnly writes the response's HEADERS without END_STREAM.
func headersOnly(s *Session) error { return s.ResponseHeaders(false) }

// bodyEnd writes the body, END_STREAM on its last frame.
func bodyEnd(s *Session) error { return s.SendBody(s.Case.body(), true) }

// partBody writes half the body without END_STREAM.
func partBody(s *Session) error {
	b := s.Case.body()
	return s.SendBody(b[:len(b)/2], false)
}

// writeSettings writes a SETTINGS frame.
func writeSettings(set ...http2.Setting) step {
	return func(s *Session) error { return s.Settings(set...) }
}

// awaitAck waits for the client's SETTINGS ACK (of the preface's SETTINGS,
// or of the one before), noting its absence.
func awaitAck(what string) step {
	return func(s *Session) error {
		if _, ok := s.AwaitType(2*time.Second, typeSettings, flagAck); !ok {
			s.Notef("no SETTINGS ACK for %s within 2 s (RFC 9113 6.5.3)", what)
		}
		return nil
	}
}

func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// prio is a PRIORITY frame's payload: dependency, weight.
func prio(dep uint32, weight byte) []byte { return append(u32(dep), weight) }

// goaway is a GOAWAY payload.
func goaway(last uint32, code http2.ErrCode, debug string) []byte {
	return append(append(u32(last), u32(uint32(code))...), debug...)
}

// ping8 is a PING payload.
var ping8 = []byte("conform!")

// count formats n frames for descriptions.
func count(n int, what string) string { return fmt.Sprintf("%d %s", n, what) }

// setting is an http2.Setting.
func setting(id http2.SettingID, v uint32) http2.Setting { return http2.Setting{ID: id, Val: v} }
