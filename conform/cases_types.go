package conform

import (
	"bytes"
	"fmt"
	"time"

	"golang.org/x/net/http2"
)

// padded is a padded frame payload: pad length, data, padding.
func padded(padLen byte, data []byte) []byte {
	return append(append([]byte{padLen}, data...), make([]byte, padLen)...)
}

func dataCases() []*Case {
	const sec = "RFC 9113 6.1 DATA"
	return []*Case{
		{ID: "http2/6.1/1", Section: sec, Desc: "DATA on stream 0",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, raw(typeData, 0, 0, []byte("x")), bodyEnd)},
		{ID: "http2/6.1/2", Section: sec, Desc: "DATA whose pad length equals the payload length",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, onReq(typeData, flagPadded, []byte{4, 'a', 'b', 'c'}), bodyEnd)},
		{ID: "http2/6.1/3", Section: sec, Desc: "DATA whose pad length exceeds the payload length",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, onReq(typeData, flagPadded, []byte{200, 'a', 'b', 'c'}), bodyEnd)},
		{ID: "http2/6.1/4", Section: sec, Desc: "DATA with the PADDED flag and no room for the pad length",
			Expect: connErr(codeProtocol, codeSize), Serve: seq(headersOnly, onReq(typeData, flagPadded, nil), bodyEnd)},
		{ID: "http2/6.1/5", Section: sec, Desc: "padded DATA (255 bytes of padding): the padding is not content",
			Expect: complete(), Serve: seq(headersOnly, func(s *Session) error {
				return s.Raw(typeData, flagPadded|flagEndStream, s.Stream, padded(255, s.Case.body()))
			})},
		{ID: "http2/6.1/6", Section: sec, Desc: "a DATA frame that is all padding, then the body",
			Expect: complete(), Serve: seq(headersOnly, onReq(typeData, flagPadded, padded(40, nil)), bodyEnd)},
		{ID: "http2/6.1/7", Section: sec, Desc: "DATA before the response's HEADERS",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error { return s.Data(s.Stream, false, []byte("early")) }, respond)},
		{ID: "http2/6.1/8", Section: sec, Desc: "the body in many DATA frames, some of them empty",
			Expect: complete(), Serve: seq(headersOnly, func(s *Session) error {
				for _, c := range s.Case.body() {
					if err := s.Data(s.Stream, false, nil); err != nil {
						return err
					}
					if err := s.Data(s.Stream, false, []byte{c}); err != nil {
						return err
					}
				}
				return s.Data(s.Stream, true, nil)
			})},
		{ID: "http2/6.1/9", Section: sec, Desc: "a 1 MiB body, larger than the client's initial windows: the client must grant window (6.9)",
			Expect: complete(), Body: bytes.Repeat([]byte("conform window\n"), 1<<20/15)},
	}
}

func headersCases() []*Case {
	const sec = "RFC 9113 6.2 HEADERS"
	return []*Case{
		{ID: "http2/6.2/1", Section: sec, Desc: "HEADERS on stream 0",
			Expect: connErr(codeProtocol), Serve: seq(raw(typeHeaders, flagEndHeaders, 0, block(status200)), respond)},
		{ID: "http2/6.2/2", Section: sec, Desc: "HEADERS whose pad length exceeds the payload",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeHeaders, flagEndHeaders|flagPadded, append([]byte{250}, block(status200)...)), bodyEnd)},
		{ID: "http2/6.2/3", Section: sec, Desc: "padded HEADERS (padding 20 bytes)",
			Expect: complete(), Serve: seq(func(s *Session) error {
				return s.Raw(typeHeaders, flagEndHeaders|flagPadded, s.Stream, padded(20, block(status200)))
			}, bodyEnd)},
		{ID: "http2/6.2/4", Section: sec, Desc: "padded HEADERS with priority fields",
			Expect: complete(), Serve: seq(func(s *Session) error {
				return s.Raw(typeHeaders, flagEndHeaders|flagPadded|flagPriority, s.Stream, padded(7, append(prio(0, 3), block(status200)...)))
			}, bodyEnd)},
		{ID: "http2/6.2/5", Section: sec, Desc: "HEADERS with the PRIORITY flag and only 3 bytes of payload",
			Expect: connErr(codeProtocol, codeSize), Serve: seq(onReq(typeHeaders, flagEndHeaders|flagPriority, []byte{0, 0, 0}), bodyEnd)},
		{ID: "http2/6.2/6", Section: sec, Desc: "HEADERS with the PADDED flag and an empty payload",
			Expect: connErr(codeProtocol, codeSize), Serve: seq(onReq(typeHeaders, flagEndHeaders|flagPadded, nil), bodyEnd)},
		{ID: "http2/6.2/7", Section: sec, Desc: "HEADERS without END_HEADERS followed by a PRIORITY frame",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeHeaders, 0, block(status200)), onIdle(typePriority, 0, prio(0, 1)), onReq(typeContinuation, flagEndHeaders, nil), bodyEnd)},
		{ID: "http2/6.2/8", Section: sec, Desc: "HEADERS without END_HEADERS followed by DATA on the same stream",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeHeaders, 0, block(status200)), onReq(typeData, 0, []byte("x")), onReq(typeContinuation, flagEndHeaders, nil), bodyEnd)},
		{ID: "http2/6.2/9", Section: sec, Desc: "the response's HEADERS with END_STREAM and no body (content-length 0)",
			Expect: complete(), Body: []byte{}, Serve: func(s *Session) error {
				return s.Headers(s.Stream, true, block(status200, hf("content-length", "0")))
			}},
	}
}

func rstCases() []*Case {
	const sec = "RFC 9113 6.4 RST_STREAM"
	return []*Case{
		{ID: "http2/6.4/1", Section: sec, Desc: "RST_STREAM on stream 0",
			Expect: connErr(codeProtocol), Serve: seq(raw(typeRST, 0, 0, u32(uint32(codeCancel))), respond)},
		{ID: "http2/6.4/2", Section: sec, Desc: "RST_STREAM of 3 bytes",
			Expect: connErr(codeSize), Serve: seq(headersOnly, onReq(typeRST, 0, []byte{0, 0, 8}), bodyEnd)},
		{ID: "http2/6.4/3", Section: sec, Desc: "RST_STREAM of 5 bytes",
			Expect: connErr(codeSize), Serve: seq(headersOnly, onReq(typeRST, 0, []byte{0, 0, 0, 8, 0}), bodyEnd)},
		{ID: "http2/6.4/4", Section: sec, Desc: "RST_STREAM(CANCEL) in the middle of the body: a truncated response is not a success",
			Expect: reject(), Serve: seq(headersOnly, partBody, onReq(typeRST, 0, u32(uint32(codeCancel))))},
		{ID: "http2/6.4/5", Section: sec, Desc: "RST_STREAM(INTERNAL_ERROR) before any response",
			Expect: reject(), Serve: onReq(typeRST, 0, u32(uint32(codeInternal)))},
		{ID: "http2/6.4/6", Section: sec, Desc: "RST_STREAM with an unknown error code in the middle of a body without content-length",
			Expect: reject(), Serve: seq(func(s *Session) error { return s.Headers(s.Stream, false, block(status200)) }, partBody, onReq(typeRST, 0, u32(0xdead)))},
		{ID: "http2/6.4/7", Section: sec, Desc: "RST_STREAM(REFUSED_STREAM) before any processing: the request can be retried on a new connection (8.7)",
			Expect: complete(), Serve: func(s *Session) error {
				if s.Attempt == 1 {
					if err := s.Raw(typeRST, 0, s.Stream, u32(uint32(codeRefused))); err != nil {
						return err
					}
					// the request again, on this connection (the client may
					// also open a new one: Attempt 2)
					f, ok := s.Await(5*time.Second, func(f Frame) bool { return f.Path != "" && f.Stream > s.Stream })
					if !ok {
						return nil
					}
					s.Stream, s.sentStream = f.Stream, 0
				}
				return s.Respond()
			}},
	}
}

func settingsCases() []*Case {
	const sec = "RFC 9113 6.5 SETTINGS"
	const par = "RFC 9113 6.5.2 SETTINGS parameters"
	return []*Case{
		{ID: "http2/6.5/1", Section: sec, Desc: "a SETTINGS ACK with a payload",
			Expect: connErr(codeSize), Serve: seq(raw(typeSettings, flagAck, 0, settingsPayload(setting(http2.SettingMaxConcurrentStreams, 1))), respond)},
		{ID: "http2/6.5/2", Section: sec, Desc: "SETTINGS on the request's stream",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeSettings, 0, nil), respond)},
		{ID: "http2/6.5/3", Section: sec, Desc: "SETTINGS of 3 bytes (not a multiple of 6)",
			Expect: connErr(codeSize), Serve: seq(raw(typeSettings, 0, 0, []byte{0, 3, 0}), respond)},
		{ID: "http2/6.5/4", Section: sec, Desc: "SETTINGS of 8 bytes (not a multiple of 6)",
			Expect: connErr(codeSize), Serve: seq(raw(typeSettings, 0, 0, []byte{0, 3, 0, 0, 0, 100, 0, 0}), respond)},
		{ID: "http2/6.5/5", Section: sec, Desc: "three SETTINGS frames: the client acknowledges each",
			Expect: complete(), Serve: seq(writeSettings(setting(http2.SettingMaxConcurrentStreams, 50)), writeSettings(), writeSettings(setting(http2.SettingHeaderTableSize, 1024)),
				func(s *Session) error {
					for i := 0; i < 4; i++ { // the preface's and three more
						if _, ok := s.AwaitType(2*time.Second, typeSettings, flagAck); !ok {
							s.Notef("%d SETTINGS ACKs for 4 SETTINGS frames (RFC 9113 6.5.3)", i)
							break
						}
					}
					return nil
				}, respond)},
		{ID: "http2/6.5/6", Section: sec, Desc: "a SETTINGS frame with an unknown parameter (0xff) is acknowledged and the parameter ignored",
			Expect: complete(), Serve: seq(writeSettings(setting(0xff, 77)), awaitAck("the preface"), awaitAck("SETTINGS with an unknown parameter"), respond)},
		{ID: "http2/6.5/7", Section: sec, Desc: "SETTINGS sent between the response's HEADERS and DATA is acknowledged",
			Expect: complete(), Serve: seq(headersOnly, awaitAck("the preface"), writeSettings(setting(http2.SettingMaxConcurrentStreams, 10)), awaitAck("SETTINGS in mid-response"), bodyEnd)},
		{ID: "http2/6.5.2/1", Section: par, Desc: "SETTINGS_ENABLE_PUSH = 2",
			Expect: connErr(codeProtocol), Preface: writeSettings(setting(http2.SettingEnablePush, 2))},
		{ID: "http2/6.5.2/2", Section: par, Desc: "SETTINGS_ENABLE_PUSH = 1 from a server (RFC 9113: a client MUST treat it as a connection error)",
			Expect: connErr(codeProtocol), Preface: writeSettings(setting(http2.SettingEnablePush, 1))},
		{ID: "http2/6.5.2/3", Section: par, Desc: "SETTINGS_ENABLE_PUSH = 0 from a server is accepted",
			Expect: complete(), Preface: writeSettings(setting(http2.SettingEnablePush, 0))},
		{ID: "http2/6.5.2/4", Section: par, Desc: "SETTINGS_INITIAL_WINDOW_SIZE = 2^31 (above the maximum window)",
			Expect: connErr(codeFlow), Preface: writeSettings(setting(http2.SettingInitialWindowSize, 1<<31))},
		{ID: "http2/6.5.2/5", Section: par, Desc: "SETTINGS_INITIAL_WINDOW_SIZE = 2^32-1",
			Expect: connErr(codeFlow), Preface: writeSettings(setting(http2.SettingInitialWindowSize, 1<<32-1))},
		{ID: "http2/6.5.2/6", Section: par, Desc: "SETTINGS_INITIAL_WINDOW_SIZE = 2^31-1, the maximum, is accepted",
			Expect: complete(), Preface: writeSettings(setting(http2.SettingInitialWindowSize, 1<<31-1))},
		{ID: "http2/6.5.2/7", Section: par, Desc: "SETTINGS_MAX_FRAME_SIZE = 16383 (below the minimum)",
			Expect: connErr(codeProtocol), Preface: writeSettings(setting(http2.SettingMaxFrameSize, 16383))},
		{ID: "http2/6.5.2/8", Section: par, Desc: "SETTINGS_MAX_FRAME_SIZE = 2^24 (above the maximum)",
			Expect: connErr(codeProtocol), Preface: writeSettings(setting(http2.SettingMaxFrameSize, 1<<24))},
		{ID: "http2/6.5.2/9", Section: par, Desc: "SETTINGS_MAX_FRAME_SIZE = 0",
			Expect: connErr(codeProtocol), Preface: writeSettings(setting(http2.SettingMaxFrameSize, 0))},
		{ID: "http2/6.5.2/10", Section: par, Desc: "SETTINGS_MAX_FRAME_SIZE = 2^24-1, the maximum, is accepted",
			Expect: complete(), Preface: writeSettings(setting(http2.SettingMaxFrameSize, 1<<24-1))},
		{ID: "http2/6.5.2/11", Section: par, Desc: "SETTINGS_HEADER_TABLE_SIZE = 0 is accepted",
			Expect: complete(), Preface: writeSettings(setting(http2.SettingHeaderTableSize, 0))},
		{ID: "http2/6.5.2/12", Section: par, Desc: "SETTINGS_MAX_CONCURRENT_STREAMS = 0 after the request: the open stream completes",
			Expect: complete(), Preface: writeSettings(setting(http2.SettingMaxConcurrentStreams, 0))},
		{ID: "http2/6.5.2/13", Section: par, Desc: "SETTINGS_MAX_HEADER_LIST_SIZE = 1 after the request: the open stream completes",
			Expect: complete(), Preface: writeSettings(setting(http2.SettingMaxHeaderListSize, 1))},
		{ID: "http2/6.5.2/14", Section: par, Desc: "SETTINGS_INITIAL_WINDOW_SIZE = 0 after a request without a body: the response completes",
			Expect: complete(), Preface: writeSettings(setting(http2.SettingInitialWindowSize, 0))},
	}
}

func pushCases() []*Case {
	const sec = "RFC 9113 6.6 PUSH_PROMISE, 8.4 server push"
	promise := func(promised uint32) []byte {
		return append(u32(promised), block(hf(":method", "GET"), hf(":scheme", "https"), hf(":authority", "localhost"), hf(":path", "/pushed"))...)
	}
	pushDisabled := func(o *Outcome) bool {
		for _, c := range o.Conns {
			c.mu.Lock()
			v := clientSetting(c, http2.SettingEnablePush, 1)
			c.mu.Unlock()
			if v != 0 {
				return false
			}
		}
		return true
	}
	return []*Case{
		{ID: "http2/6.6/1", Section: sec, Desc: "PUSH_PROMISE although the client disabled push (SETTINGS_ENABLE_PUSH = 0)",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, onReq(typePushPromise, flagEndHeaders, promise(2)), bodyEnd),
			NotApplicable: func(o *Outcome) string {
				if !pushDisabled(o) {
					return "the client left push enabled (SETTINGS_ENABLE_PUSH = 1), so a PUSH_PROMISE is allowed"
				}
				return ""
			}},
		{ID: "http2/6.6/2", Section: sec, Desc: "PUSH_PROMISE on stream 0",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, raw(typePushPromise, flagEndHeaders, 0, promise(2)), bodyEnd)},
		{ID: "http2/6.6/3", Section: sec, Desc: "PUSH_PROMISE promising an odd (client) stream",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, onReq(typePushPromise, flagEndHeaders, promise(3)), bodyEnd)},
		{ID: "http2/6.6/4", Section: sec, Desc: "PUSH_PROMISE on an idle stream",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, onIdle(typePushPromise, flagEndHeaders, promise(2)), bodyEnd)},
		{ID: "http2/6.6/5", Section: sec, Desc: "PUSH_PROMISE whose pad length exceeds the payload",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, onReq(typePushPromise, flagEndHeaders|flagPadded, append([]byte{250}, promise(2)...)), bodyEnd)},
	}
}

func pingCases() []*Case {
	const sec = "RFC 9113 6.7 PING"
	return []*Case{
		{ID: "http2/6.7/1", Section: sec, Desc: "a PING is answered with an ACK carrying the same payload",
			Expect: complete(), Serve: seq(raw(typePing, 0, 0, ping8), awaitPingAck, respond)},
		{ID: "http2/6.7/2", Section: sec, Desc: "an unsolicited PING ACK is ignored, not answered",
			Expect: complete(), Serve: seq(raw(typePing, flagAck, 0, ping8), respond),
			Check: func(o *Outcome) error {
				for _, f := range o.Frames(typePing) {
					if f.Flags&flagAck != 0 && bytes.Equal(f.Data[:], ping8) {
						return fmt.Errorf("the client answered a PING ACK with a PING ACK")
					}
				}
				return nil
			}},
		{ID: "http2/6.7/3", Section: sec, Desc: "PING on the request's stream",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typePing, 0, ping8), respond)},
		{ID: "http2/6.7/4", Section: sec, Desc: "PING of 7 bytes",
			Expect: connErr(codeSize), Serve: seq(raw(typePing, 0, 0, ping8[:7]), respond)},
		{ID: "http2/6.7/5", Section: sec, Desc: "PING of 9 bytes",
			Expect: connErr(codeSize), Serve: seq(raw(typePing, 0, 0, append([]byte("x"), ping8...)), respond)},
		{ID: "http2/6.7/6", Section: sec, Desc: "a PING ACK of 7 bytes",
			Expect: connErr(codeSize), Serve: seq(raw(typePing, flagAck, 0, ping8[:7]), respond)},
		{ID: "http2/6.7/7", Section: sec, Desc: "a PING in mid-response, between two DATA frames, is answered",
			Expect: complete(), Serve: seq(headersOnly, partBody, raw(typePing, 0, 0, ping8), awaitPingAck, func(s *Session) error {
				b := s.Case.body()
				return s.SendBody(b[len(b)/2:], true)
			})},
	}
}

func goawayCases() []*Case {
	const sec = "RFC 9113 6.8 GOAWAY"
	retry := func(first func(s *Session) error) func(s *Session) error {
		return func(s *Session) error {
			if s.Attempt == 1 {
				return first(s)
			}
			return s.Respond()
		}
	}
	noStreamAfterGoAway := func(o *Outcome) error {
		first := o.Conns[0]
		first.mu.Lock()
		defer first.mu.Unlock()
		if len(first.Requests) > 1 {
			return fmt.Errorf("the client opened stream %d on the connection that had received GOAWAY", first.Requests[1])
		}
		return nil
	}
	return []*Case{
		{ID: "http2/6.8/1", Section: sec, Desc: "GOAWAY on the request's stream",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeGoAway, 0, goaway(1, codeNo, "")), respond)},
		{ID: "http2/6.8/2", Section: sec, Desc: "GOAWAY of 7 bytes",
			Expect: connErr(codeSize), Serve: seq(raw(typeGoAway, 0, 0, goaway(1, codeNo, "")[:7]), respond)},
		{ID: "http2/6.8/3", Section: sec, Desc: "GOAWAY(NO_ERROR) whose last stream covers the request, then the response: it completes",
			Expect: complete(), Serve: seq(func(s *Session) error { return s.Raw(typeGoAway, 0, 0, goaway(s.Stream, codeNo, "draining")) }, respond)},
		{ID: "http2/6.8/4", Section: sec, Desc: "GOAWAY(NO_ERROR, last stream 0) and close: the unprocessed request is retried on a new connection",
			Expect: complete(), Serve: retry(func(s *Session) error {
				s.Raw(typeGoAway, 0, 0, goaway(0, codeNo, "not processed"))
				return s.Close()
			}), Check: noStreamAfterGoAway},
		{ID: "http2/6.8/5", Section: sec, Desc: "GOAWAY(NO_ERROR, last stream 0) with the connection left open: retried on a new connection, not this one",
			Expect: complete(), Serve: retry(raw(typeGoAway, 0, 0, goaway(0, codeNo, "not processed"))), Check: noStreamAfterGoAway},
		{ID: "http2/6.8/6", Section: sec, Desc: "a graceful GOAWAY (last stream 2^31-1) then a second one naming the request's stream, then the response",
			Expect: complete(), Serve: seq(raw(typeGoAway, 0, 0, goaway(1<<31-1, codeNo, "")), func(s *Session) error { return s.Raw(typeGoAway, 0, 0, goaway(s.Stream, codeNo, "")) }, respond)},
		{ID: "http2/6.8/7", Section: sec, Desc: "GOAWAY with 1000 bytes of debug data covering the request, then the response",
			Expect: complete(), Serve: seq(func(s *Session) error {
				return s.Raw(typeGoAway, 0, 0, goaway(s.Stream, codeNo, string(bytes.Repeat([]byte("d"), 1000))))
			}, respond)},
		{ID: "http2/6.8/8", Section: sec, Desc: "GOAWAY with an unknown error code covering the request, then the response",
			Expect: complete(), Serve: seq(func(s *Session) error { return s.Raw(typeGoAway, 0, 0, goaway(s.Stream, 0xbeef, "")) }, respond)},
		{ID: "http2/6.8/9", Section: sec, Desc: "GOAWAY(INTERNAL_ERROR, last stream 0) and close: the unprocessed request is retried",
			Expect: complete(), Serve: retry(func(s *Session) error {
				s.Raw(typeGoAway, 0, 0, goaway(0, codeInternal, "restart"))
				return s.Close()
			}), Check: noStreamAfterGoAway},
		{ID: "http2/6.8/10", Section: sec, Desc: "the response, then GOAWAY(NO_ERROR) and close: the request stands",
			Expect: complete(), Serve: seq(respond, func(s *Session) error {
				s.Raw(typeGoAway, 0, 0, goaway(s.Stream, codeNo, ""))
				return s.Close()
			})},
		{ID: "http2/6.8/11", Section: sec, Desc: "the connection closed in mid-body without GOAWAY: not a success",
			Expect: reject(), Serve: seq(func(s *Session) error { return s.Headers(s.Stream, false, block(status200)) }, partBody, func(s *Session) error { return s.Close() })},
	}
}

func windowCases() []*Case {
	const sec = "RFC 9113 6.9 WINDOW_UPDATE, flow control"
	return []*Case{
		{ID: "http2/6.9/1", Section: sec, Desc: "WINDOW_UPDATE with increment 0 on the connection",
			Expect: connErr(codeProtocol), Serve: seq(raw(typeWindowUpdate, 0, 0, u32(0)), respond)},
		{ID: "http2/6.9/2", Section: sec, Desc: "WINDOW_UPDATE with increment 0 on the request's stream",
			Expect: streamErr(codeProtocol), Serve: seq(headersOnly, onReq(typeWindowUpdate, 0, u32(0)), bodyEnd)},
		{ID: "http2/6.9/3", Section: sec, Desc: "WINDOW_UPDATE of 3 bytes",
			Expect: connErr(codeSize), Serve: seq(raw(typeWindowUpdate, 0, 0, []byte{0, 0, 1}), respond)},
		{ID: "http2/6.9/4", Section: sec, Desc: "WINDOW_UPDATE of 5 bytes",
			Expect: connErr(codeSize), Serve: seq(raw(typeWindowUpdate, 0, 0, []byte{0, 0, 0, 1, 0}), respond)},
		{ID: "http2/6.9/5", Section: sec, Desc: "WINDOW_UPDATE with the reserved bit set: the bit is ignored",
			Expect: complete(), Serve: seq(raw(typeWindowUpdate, 0, 0, u32(1<<31|1000)), respond)},
		{ID: "http2/6.9.1/1", Section: sec, Desc: "WINDOW_UPDATE taking the connection's send window above 2^31-1",
			Expect: connErr(codeFlow), Serve: seq(raw(typeWindowUpdate, 0, 0, u32(1<<31-1)), respond)},
		{ID: "http2/6.9.1/2", Section: sec, Desc: "WINDOW_UPDATE taking the request stream's send window above 2^31-1",
			Expect: streamErr(codeFlow), Serve: seq(headersOnly, onReq(typeWindowUpdate, 0, u32(1<<31-1)), bodyEnd)},
		{ID: "http2/6.9.1/3", Section: sec, Desc: "two WINDOW_UPDATEs on the connection summing above 2^31-1",
			Expect: connErr(codeFlow), Serve: seq(raw(typeWindowUpdate, 0, 0, u32(1<<30)), raw(typeWindowUpdate, 0, 0, u32(1<<30)), respond)},
		{ID: "http2/6.9.1/4", Section: sec, Desc: "WINDOW_UPDATEs taking the connection's send window to exactly 2^31-1 are accepted",
			Expect: complete(), Serve: seq(raw(typeWindowUpdate, 0, 0, u32(1<<31-1-65535)), respond)},
		{ID: "http2/6.9.2/1", Section: sec, Desc: "SETTINGS_INITIAL_WINDOW_SIZE change that takes the stream's send window above 2^31-1",
			Expect: connErr(codeFlow), Serve: seq(headersOnly, onReq(typeWindowUpdate, 0, u32(1<<31-1-65535)), writeSettings(setting(http2.SettingInitialWindowSize, 65536)), bodyEnd)},
	}
}

func continuationCases() []*Case {
	const sec = "RFC 9113 6.10 CONTINUATION"
	return []*Case{
		{ID: "http2/6.10/1", Section: sec, Desc: "CONTINUATION without a preceding HEADERS",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeContinuation, flagEndHeaders, block(status200)), respond)},
		{ID: "http2/6.10/2", Section: sec, Desc: "CONTINUATION after a HEADERS that had END_HEADERS",
			Expect: connErr(codeProtocol), Serve: seq(headersOnly, onReq(typeContinuation, flagEndHeaders, block(hf("x-late", "1"))), bodyEnd)},
		{ID: "http2/6.10/3", Section: sec, Desc: "HEADERS, then CONTINUATION on another stream",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeHeaders, 0, block(status200)), onIdle(typeContinuation, flagEndHeaders, nil), bodyEnd)},
		{ID: "http2/6.10/4", Section: sec, Desc: "HEADERS, then CONTINUATION on stream 0",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeHeaders, 0, block(status200)), raw(typeContinuation, flagEndHeaders, 0, nil), bodyEnd)},
		{ID: "http2/6.10/5", Section: sec, Desc: "a field block in HEADERS and three CONTINUATION frames",
			Expect: complete(), Serve: seq(func(s *Session) error {
				b := block(status200, hf("content-length", fmt.Sprint(len(s.Case.body()))), hf("x-one", "1"), hf("x-two", "2"))
				parts := [][]byte{b[:3], b[3:10], b[10:20], b[20:]}
				if err := s.Raw(typeHeaders, 0, s.Stream, parts[0]); err != nil {
					return err
				}
				for i, p := range parts[1:] {
					var fl http2.Flags
					if i == 2 {
						fl = flagEndHeaders
					}
					if err := s.Raw(typeContinuation, fl, s.Stream, p); err != nil {
						return err
					}
				}
				return nil
			}, bodyEnd)},
		{ID: "http2/6.10/6", Section: sec, Desc: "HEADERS, then a PING before the CONTINUATION",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeHeaders, 0, block(status200)), raw(typePing, 0, 0, ping8), onReq(typeContinuation, flagEndHeaders, nil), bodyEnd)},
		{ID: "http2/6.10/7", Section: sec, Desc: "HEADERS, then an unknown frame type before the CONTINUATION",
			Expect: connErr(codeProtocol), Serve: seq(onReq(typeHeaders, 0, block(status200)), raw(typeUnknown, 0, 0, nil), onReq(typeContinuation, flagEndHeaders, nil), bodyEnd)},
		{ID: "http2/6.10/8", Section: sec, Desc: "trailers in HEADERS and CONTINUATION",
			Expect: complete(), Serve: seq(headersOnly, func(s *Session) error {
				if err := s.SendBody(s.Case.body(), false); err != nil {
					return err
				}
				b := block(hf("x-trailer-one", "1"), hf("x-trailer-two", "2"))
				if err := s.Raw(typeHeaders, flagEndStream, s.Stream, b[:5]); err != nil {
					return err
				}
				return s.Raw(typeContinuation, flagEndHeaders, s.Stream, b[5:])
			})},
		{ID: "http2/6.10/9", Section: sec, Desc: "undefined flags on CONTINUATION are ignored",
			Expect: complete(), Serve: seq(func(s *Session) error {
				b := block(status200)
				if err := s.Raw(typeHeaders, 0, s.Stream, b[:2]); err != nil {
					return err
				}
				return s.Raw(typeContinuation, flagEndHeaders|0xf3&^flagEndHeaders, s.Stream, b[2:])
			}, bodyEnd)},
	}
}
