package conform

import (
	"bytes"
	"fmt"

	"golang.org/x/net/http2"
)

func prefaceCases() []*Case {
	const sec = "RFC 9113 3.4 HTTP/2 connection preface"
	return []*Case{
		{ID: "http2/3.4/1", Section: sec, Desc: "the server's preface is an empty SETTINGS frame; the client acknowledges it",
			Expect: complete(), Serve: seq(awaitAck("the preface"), respond)},
		{ID: "http2/3.4/2", Section: sec, Desc: "the server's preface is a PING, not SETTINGS",
			Expect: connErr(codeProtocol), Preface: raw(typePing, 0, 0, ping8), Serve: seq(writeSettings(), respond)},
		{ID: "http2/3.4/3", Section: sec, Desc: "the server's first frame is the response's HEADERS, not SETTINGS",
			Expect: connErr(codeProtocol), Preface: headersOnly, Serve: seq(writeSettings(), bodyEnd)},
		{ID: "http2/3.4/4", Section: sec, Desc: "the server's first frame is a WINDOW_UPDATE, not SETTINGS",
			Expect: connErr(codeProtocol), Preface: raw(typeWindowUpdate, 0, 0, u32(1000)), Serve: seq(writeSettings(), respond)},
		{ID: "http2/3.4/5", Section: sec, Desc: "the server's preface SETTINGS carries parameters and arrives one byte per write",
			Expect: complete(), Preface: func(s *Session) error {
				var b bytes.Buffer
				fr := http2.NewFramer(&b, nil)
				fr.WriteSettings(setting(http2.SettingMaxConcurrentStreams, 100), setting(http2.SettingInitialWindowSize, 1<<20))
				for _, c := range b.Bytes() {
					if err := s.Write([]byte{c}); err != nil {
						return err
					}
				}
				return nil
			}},
		{ID: "http2/3.4/6", Section: sec, Desc: "the server answers the h2 preface with an HTTP/1.1 response",
			Expect: connErr(codeProtocol, codeSize), Preface: func(s *Session) error {
				return s.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
			}, Serve: respond},
	}
}

func frameCases() []*Case {
	const sec = "RFC 9113 4.1 frame format, 5.5 extensions"
	const size = "RFC 9113 4.2 frame size"
	const comp = "RFC 9113 4.3 field section compression"
	big := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16384 bytes
	return []*Case{
		{ID: "http2/4.1/1", Section: sec, Desc: "an unknown frame type on stream 0 before the response is ignored",
			Expect: complete(), Serve: seq(raw(typeUnknown, 0, 0, []byte("ignore me")), respond)},
		{ID: "http2/4.1/2", Section: sec, Desc: "an unknown frame type on the request's stream between HEADERS and DATA is ignored",
			Expect: complete(), Serve: seq(headersOnly, onReq(typeUnknown, 0xff, []byte("ignore me")), bodyEnd)},
		{ID: "http2/4.1/3", Section: sec, Desc: "undefined flags on DATA are ignored",
			Expect: complete(), Serve: seq(headersOnly, func(s *Session) error {
				return s.Raw(typeData, flagEndStream|0x02|0x04|0x10|0x20|0x40|0x80, s.Stream, s.Case.body())
			})},
		{ID: "http2/4.1/4", Section: sec, Desc: "undefined flags on HEADERS are ignored",
			Expect: complete(), Serve: seq(func(s *Session) error {
				return s.Raw(typeHeaders, flagEndHeaders|0x02|0x10|0x40|0x80, s.Stream, block(status200))
			}, bodyEnd)},
		{ID: "http2/4.1/5", Section: sec, Desc: "undefined flags on SETTINGS are ignored (and it is acknowledged)",
			Expect: complete(), Serve: seq(raw(typeSettings, 0xfe, 0, nil), awaitAck("SETTINGS with undefined flags"), respond)},
		{ID: "http2/4.1/6", Section: sec, Desc: "undefined flags on PING are ignored (and it is answered)",
			Expect: complete(), Serve: seq(raw(typePing, 0xfe, 0, ping8), awaitPingAck, respond)},
		{ID: "http2/4.1/7", Section: sec, Desc: "the reserved bit of the stream identifier is set on HEADERS and DATA; it is ignored",
			Expect: complete(), Serve: func(s *Session) error {
				if err := s.Raw(typeHeaders, flagEndHeaders, s.Stream|1<<31, block(status200)); err != nil {
					return err
				}
				return s.Raw(typeData, flagEndStream, s.Stream|1<<31, s.Case.body())
			}},
		{ID: "http2/4.1/8", Section: sec, Desc: "an unknown frame type of 16384 bytes is ignored",
			Expect: complete(), Serve: seq(raw(typeUnknown, 0, 0, big), respond)},
		{ID: "http2/4.1/9", Section: sec, Desc: "an unknown frame type on an idle stream is ignored",
			Expect: complete(), Serve: seq(raw(typeUnknown, 0, 101, []byte("x")), respond)},
		{ID: "http2/4.2/1", Section: size, Desc: "a DATA frame one byte over the client's SETTINGS_MAX_FRAME_SIZE",
			Expect: streamErr(codeSize), Serve: func(s *Session) error {
				n := int(s.ClientSetting(http2.SettingMaxFrameSize, 16384)) + 1
				if n > int(s.ClientSetting(http2.SettingInitialWindowSize, 65535)) {
					s.Notef("untestable: the client's MAX_FRAME_SIZE %d is not below its window", n-1)
					return nil
				}
				if err := s.ResponseHeaders(false); err != nil {
					return err
				}
				return s.Data(s.Stream, true, bytes.Repeat([]byte("x"), n))
			}},
		{ID: "http2/4.2/2", Section: size, Desc: "a HEADERS frame one byte over the client's SETTINGS_MAX_FRAME_SIZE",
			Expect: connErr(codeSize), Serve: func(s *Session) error {
				n := int(s.ClientSetting(http2.SettingMaxFrameSize, 16384)) + 1
				return s.Raw(typeHeaders, flagEndHeaders|flagEndStream, s.Stream, padTo(block(status200), n))
			}},
		{ID: "http2/4.2/3", Section: size, Desc: "DATA frames of exactly 16384 bytes, the largest allowed",
			Expect: complete(), Body: bytes.Repeat(big, 3)},
		{ID: "http2/4.2/4", Section: size, Desc: "a field block of ~30 KB in HEADERS and CONTINUATION frames of 16384 bytes each",
			Expect: complete(), Serve: func(s *Session) error {
				b := block(status200, hf("content-length", fmt.Sprint(len(s.Case.body()))))
				b = hLiteral(b, "x-large", string(bytes.Repeat([]byte("v"), 30000)))
				if err := s.Raw(typeHeaders, 0, s.Stream, b[:16384]); err != nil {
					return err
				}
				if err := s.Raw(typeContinuation, flagEndHeaders, s.Stream, b[16384:]); err != nil {
					return err
				}
				return bodyEnd(s)
			}},
		{ID: "http2/4.3/1", Section: comp, Desc: "a response field block that cannot be decoded (index 0)",
			Expect: connErr(codeComp), Serve: seq(onReq(typeHeaders, flagEndHeaders, hIndexed(nil, 0)), bodyEnd)},
		{ID: "http2/4.3/2", Section: comp, Desc: "the dynamic table carries over: the trailers refer to an entry the response's HEADERS added",
			Expect: complete(), Serve: func(s *Session) error {
				b := hIncremental(block(status200), "x-carried", "over")
				if err := s.Headers(s.Stream, false, b); err != nil {
					return err
				}
				if err := s.SendBody(s.Case.body(), false); err != nil {
					return err
				}
				return s.Headers(s.Stream, true, hIndexed(nil, 62))
			}},
	}
}

// padTo appends one literal field to b whose value makes the block exactly
// n bytes long (n well above len(b)).
func padTo(b []byte, n int) []byte {
	for v := n - len(b); v >= 0; v-- {
		if out := hLiteral(b, "x-pad", string(bytes.Repeat([]byte("p"), v))); len(out) == n {
			return out
		}
	}
	panic("padTo: no fill")
}

func awaitPingAck(s *Session) error {
	if _, ok := s.Await(2e9, func(f Frame) bool {
		return f.Type == typePing && f.Flags&flagAck != 0 && bytes.Equal(f.Data[:], ping8)
	}); !ok {
		s.Notef("no PING ACK with the PING's payload within 2 s (RFC 9113 6.7)")
	}
	return nil
}

func streamCases() []*Case {
	const sec = "RFC 9113 5.1 stream states"
	return []*Case{
		{ID: "http2/5.1/1", Section: sec, Desc: "DATA on an idle stream (the client's next)",
			Expect: connErr(codeProtocol), Serve: seq(onIdle(typeData, 0, []byte("x")), respond)},
		{ID: "http2/5.1/2", Section: sec, Desc: "RST_STREAM on an idle stream (the client's next)",
			Expect: connErr(codeProtocol), Serve: seq(onIdle(typeRST, 0, u32(uint32(codeCancel))), respond)},
		{ID: "http2/5.1/3", Section: sec, Desc: "WINDOW_UPDATE on an idle stream (the client's next)",
			Expect: connErr(codeProtocol), Serve: seq(onIdle(typeWindowUpdate, 0, u32(100)), respond)},
		{ID: "http2/5.1/4", Section: sec, Desc: "HEADERS opening a client-numbered stream (the client's next) from the server",
			Expect: connErr(codeProtocol), Serve: seq(onIdle(typeHeaders, flagEndHeaders|flagEndStream, block(status200)), respond)},
		{ID: "http2/5.1/5", Section: sec, Desc: "HEADERS on an even stream (2) that no PUSH_PROMISE reserved",
			Expect: connErr(codeProtocol), Serve: seq(raw(typeHeaders, flagEndHeaders|flagEndStream, 2, block(status200)), respond)},
		{ID: "http2/5.1/6", Section: sec, Desc: "CONTINUATION on an idle stream (the client's next)",
			Expect: connErr(codeProtocol), Serve: seq(onIdle(typeContinuation, flagEndHeaders, block(status200)), respond)},
		{ID: "http2/5.1/7", Section: sec, Desc: "DATA after the response's END_STREAM (closed stream): the response stands, any error is STREAM_CLOSED",
			Expect: complete(codeClosed), Serve: seq(respond, onReq(typeData, 0, []byte("extra")))},
		{ID: "http2/5.1/8", Section: sec, Desc: "a second HEADERS after the response's END_STREAM: the response stands, any error is STREAM_CLOSED",
			Expect: complete(codeClosed), Serve: seq(respond, onReq(typeHeaders, flagEndHeaders|flagEndStream, block(status200)))},
		{ID: "http2/5.1/9", Section: sec, Desc: "RST_STREAM(NO_ERROR) after the complete response does not undo it (RFC 9113 8.1)",
			Expect: complete(), Serve: seq(respond, onReq(typeRST, 0, u32(uint32(codeNo))))},
		{ID: "http2/5.1/10", Section: sec, Desc: "HEADERS from the server on an odd stream two above the client's next",
			Expect: connErr(codeProtocol), Serve: seq(func(s *Session) error {
				return s.Raw(typeHeaders, flagEndHeaders|flagEndStream, s.Stream+4, block(status200))
			}, respond)},
		{ID: "http2/5.1/11", Section: sec, Desc: "DATA on stream 0",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, raw(typeData, 0, 0, []byte("x")), bodyEnd)},
	}
}

func priorityCases() []*Case {
	const sec = "RFC 9113 5.3 priority, RFC 9218"
	return []*Case{
		{ID: "http2/5.3/1", Section: sec, Desc: "a PRIORITY frame on the request's stream is accepted",
			Expect: complete(), Serve: seq(headersOnly, func(s *Session) error { return s.Raw(typePriority, 0, s.Stream, prio(0, 200)) }, bodyEnd)},
		{ID: "http2/5.3/2", Section: sec, Desc: "PRIORITY frames on idle streams are accepted",
			Expect: complete(), Serve: seq(onIdle(typePriority, 0, prio(0, 10)), func(s *Session) error { return s.Raw(typePriority, 0, s.Stream+4, prio(s.Stream+2, 10)) }, respond)},
		{ID: "http2/5.3/3", Section: sec, Desc: "the response's HEADERS carries priority fields (PRIORITY flag); they are skipped",
			Expect: complete(), Serve: seq(func(s *Session) error {
				return s.Raw(typeHeaders, flagEndHeaders|flagPriority, s.Stream, append(prio(0, 15), block(status200)...))
			}, bodyEnd)},
		{ID: "http2/5.3/4", Section: sec, Desc: "a PRIORITY frame making the request's stream depend on itself",
			Expect: streamErr(codeProtocol), Serve: seq(headersOnly, func(s *Session) error { return s.Raw(typePriority, 0, s.Stream, prio(s.Stream, 15)) }, bodyEnd)},
		{ID: "http2/5.3/5", Section: sec, Desc: "the response's HEADERS makes its stream depend on itself",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				return s.Raw(typeHeaders, flagEndHeaders|flagPriority, s.Stream, append(prio(s.Stream, 15), block(status200)...))
			}, bodyEnd)},
		{ID: "http2/5.3/6", Section: sec, Desc: "a priority response field (RFC 9218 5) is accepted, and a malformed one ignored",
			Expect: complete(), Serve: func(s *Session) error {
				if err := s.ResponseHeaders(false, hf("priority", "u=0, i"), hf("priority", "u=zz;;")); err != nil {
					return err
				}
				return bodyEnd(s)
			}},
		{ID: "http2/5.3/7", Section: sec, Desc: "SETTINGS_NO_RFC7540_PRIORITIES = 1 (RFC 9218 2.1) is accepted",
			Expect: complete(), Preface: writeSettings(setting(0x9, 1))},
		{ID: "http2/5.3/8", Section: sec, Desc: "SETTINGS_NO_RFC7540_PRIORITIES = 2, a value other than 0 or 1 (RFC 9218 2.1)",
			Expect: connErr(codeProtocol), Preface: writeSettings(setting(0x9, 2))},
		{ID: "http2/5.3/9", Section: sec, Desc: "a PRIORITY frame with an exclusive dependency on stream 0 is accepted",
			Expect: complete(), Serve: seq(headersOnly, func(s *Session) error { return s.Raw(typePriority, 0, s.Stream, prio(1<<31, 255)) }, bodyEnd)},
	}
}
