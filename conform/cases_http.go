package conform

import (
	"bytes"
	"fmt"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// malformed is a case whose response head carries fields (after :status
// and content-length unless noStatus) that make it malformed (RFC 9113
// 8.1.1): the client must not accept it.
func malformed(id, desc string, fields ...hpack.HeaderField) *Case {
	return &Case{ID: id, Section: "RFC 9113 8.1, 8.2, 8.3 HTTP messages and fields", Desc: desc, Expect: streamErr(codeProtocol),
		Serve: func(s *Session) error {
			b := block(status200, hf("content-length", fmt.Sprint(len(s.Case.body()))))
			if err := s.Headers(s.Stream, false, append(b, block(fields...)...)); err != nil {
				return err
			}
			return bodyEnd(s)
		}}
}

// malformedBlock is a case whose whole response field block is b.
func malformedBlock(id, desc string, b func(s *Session) []byte) *Case {
	return &Case{ID: id, Section: "RFC 9113 8.1, 8.2, 8.3 HTTP messages and fields", Desc: desc, Expect: streamErr(codeProtocol),
		Serve: func(s *Session) error {
			if err := s.Headers(s.Stream, false, b(s)); err != nil {
				return err
			}
			return bodyEnd(s)
		}}
}

func clen(s *Session) hpack.HeaderField {
	return hf("content-length", fmt.Sprint(len(s.Case.body())))
}

func httpCases() []*Case {
	const sec = "RFC 9113 8.1, 8.2, 8.3 HTTP messages and fields"
	cs := []*Case{
		malformed("http2/8.2.1/1", "a field name with uppercase letters", hf("X-Upper", "1")),
		malformed("http2/8.2.1/2", "a field name with a space", hf("x bad", "1")),
		malformed("http2/8.2.1/3", "a field name with a non-ASCII octet", hf("x-\xe9", "1")),
		malformed("http2/8.2.1/4", "a regular field name with a colon inside", hf("x:y", "1")),
		malformed("http2/8.2.1/5", "an empty field name", hf("", "1")),
		malformed("http2/8.2.1/6", "a field value with NUL", hf("x-nul", "a\x00b")),
		malformed("http2/8.2.1/7", "a field value with LF", hf("x-lf", "a\nb")),
		malformed("http2/8.2.1/8", "a field value with CR", hf("x-cr", "a\rb")),
		malformed("http2/8.2.1/9", "a field value starting with a space", hf("x-sp", " a")),
		malformed("http2/8.2.1/10", "a field value ending with a tab", hf("x-tab", "a\t")),
		malformed("http2/8.2.2/1", "a connection field", hf("connection", "keep-alive")),
		malformed("http2/8.2.2/2", "a keep-alive field", hf("keep-alive", "timeout=5")),
		malformed("http2/8.2.2/3", "a proxy-connection field", hf("proxy-connection", "keep-alive")),
		malformed("http2/8.2.2/4", "a transfer-encoding field", hf("transfer-encoding", "chunked")),
		malformed("http2/8.2.2/5", "an upgrade field", hf("upgrade", "h2c")),
		malformedBlock("http2/8.3/1", "no :status pseudo-header", func(s *Session) []byte { return block(clen(s)) }),
		malformedBlock("http2/8.3/2", "two :status pseudo-headers", func(s *Session) []byte { return block(status200, status200, clen(s)) }),
		malformedBlock("http2/8.3/3", ":status after a regular field", func(s *Session) []byte { return block(clen(s), status200) }),
		malformedBlock("http2/8.3/4", "an unknown pseudo-header :foo", func(s *Session) []byte { return block(status200, hf(":foo", "bar"), clen(s)) }),
		malformedBlock("http2/8.3/5", "a request pseudo-header (:path) in a response", func(s *Session) []byte { return block(status200, hf(":path", "/"), clen(s)) }),
		malformedBlock("http2/8.3/6", ":status that is not a number (abc)", func(s *Session) []byte { return block(hf(":status", "abc"), clen(s)) }),
		malformedBlock("http2/8.3/7", "an empty :status", func(s *Session) []byte { return block(hf(":status", ""), clen(s)) }),
		malformedBlock("http2/8.3/8", ":method in a response", func(s *Session) []byte { return block(status200, hf(":method", "GET"), clen(s)) }),
		{ID: "http2/8.1.1/1", Section: sec, Desc: "content-length 10 more than the DATA carries",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				return s.Headers(s.Stream, false, block(status200, hf("content-length", fmt.Sprint(len(s.Case.body())+10))))
			}, bodyEnd)},
		{ID: "http2/8.1.1/2", Section: sec, Desc: "a response larger than its content-length announced",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				return s.Headers(s.Stream, false, block(status200, hf("content-length", fmt.Sprint(len(s.Case.body())-5))))
			}, bodyEnd)},
		{ID: "http2/8.1.1/3", Section: sec, Desc: "two content-length fields with different values",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				return s.Headers(s.Stream, false, block(status200, clen(s), hf("content-length", "3")))
			}, bodyEnd)},
		{ID: "http2/8.1.1/4", Section: sec, Desc: "a content-length that is not a number",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				return s.Headers(s.Stream, false, block(status200, hf("content-length", "ten")))
			}, bodyEnd)},
		{ID: "http2/8.1.1/5", Section: sec, Desc: "content-length 0 with a body",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				return s.Headers(s.Stream, false, block(status200, hf("content-length", "0")))
			}, bodyEnd)},
		{ID: "http2/8.1/1", Section: sec, Desc: "trailers after the body are accepted",
			Expect: complete(), Serve: seq(headersOnly, func(s *Session) error {
				if err := s.SendBody(s.Case.body(), false); err != nil {
					return err
				}
				return s.Headers(s.Stream, true, block(hf("x-checksum", "abc"), hf("grpc-status", "0")))
			})},
		{ID: "http2/8.1/2", Section: sec, Desc: "trailers without END_STREAM, then DATA",
			Expect: streamErr(codeProtocol), Serve: seq(headersOnly, partBody, onReq(typeHeaders, flagEndHeaders, block(hf("x-trailer", "1"))), func(s *Session) error {
				b := s.Case.body()
				return s.SendBody(b[len(b)/2:], true)
			})},
		{ID: "http2/8.1/3", Section: sec, Desc: "a pseudo-header (:status) in the trailers (no content-length: the client must read to END_STREAM)",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error { return s.Headers(s.Stream, false, block(status200)) }, func(s *Session) error {
				if err := s.SendBody(s.Case.body(), false); err != nil {
					return err
				}
				return s.Headers(s.Stream, true, block(status200))
			})},
		{ID: "http2/8.1/4", Section: sec, Desc: "a 103 informational response, then the final 200",
			Expect: complete(), Serve: seq(func(s *Session) error {
				return s.Headers(s.Stream, false, block(hf(":status", "103"), hf("link", "</style.css>; rel=preload")))
			}, respond)},
		{ID: "http2/8.1/5", Section: sec, Desc: "two informational responses (100, 103), then the final 200",
			Expect: complete(), Serve: seq(func(s *Session) error {
				if err := s.Headers(s.Stream, false, block(hf(":status", "100"))); err != nil {
					return err
				}
				return s.Headers(s.Stream, false, block(hf(":status", "103")))
			}, respond)},
		{ID: "http2/8.1/6", Section: sec, Desc: "an informational response (103) with END_STREAM",
			Expect: streamErr(codeProtocol), Serve: func(s *Session) error {
				return s.Headers(s.Stream, true, block(hf(":status", "103")))
			}},
		{ID: "http2/8.1/7", Section: sec, Desc: "DATA after an informational response, before the final one",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				if err := s.Headers(s.Stream, false, block(hf(":status", "103"))); err != nil {
					return err
				}
				return s.Data(s.Stream, false, []byte("early"))
			}, respond)},
		{ID: "http2/8.1/13", Section: sec, Desc: "DATA before any response HEADERS, then a response without content-length (the early bytes must not become the body's first)",
			Expect: streamErr(codeProtocol), Serve: seq(func(s *Session) error {
				if err := s.Data(s.Stream, false, []byte("early")); err != nil {
					return err
				}
				return s.Headers(s.Stream, false, block(status200))
			}, bodyEnd)},
		{ID: "http2/8.1/8", Section: sec, Desc: "a second final response head (HEADERS without END_STREAM after the 200's)",
			Expect: streamErr(codeProtocol), Serve: seq(headersOnly, onReq(typeHeaders, flagEndHeaders, block(status200)), bodyEnd)},
		{ID: "http2/8.1/9", Section: sec, Desc: "the body in DATA frames with a content-length that matches",
			Expect: complete(), Body: bytes.Repeat([]byte("0123456789"), 5000)},
		{ID: "http2/8.1/10", Section: sec, Desc: "a response without content-length, its end marked by END_STREAM",
			Expect: complete(), Serve: seq(func(s *Session) error { return s.Headers(s.Stream, false, block(status200)) }, bodyEnd)},
	}
	return cs
}

// hpackCase is a case whose response head is the given block, and whose
// reaction is expect.
func hpackCase(id, desc string, expect Expect, b func(s *Session) []byte) *Case {
	return &Case{ID: id, Section: "RFC 7541 HPACK", Desc: desc, Expect: expect,
		Serve: func(s *Session) error {
			if err := s.Headers(s.Stream, false, b(s)); err != nil {
				return err
			}
			return bodyEnd(s)
		}}
}

func hpackCases() []*Case {
	ok, bad := complete(), connErr(codeComp)
	head := func(s *Session) []byte { return block(status200, clen(s)) }
	return []*Case{
		hpackCase("hpack/2.3.3/1", "an indexed field with index 0", bad, func(s *Session) []byte { return hIndexed(head(s), 0) }),
		hpackCase("hpack/2.3.3/2", "an indexed field beyond the static and (empty) dynamic table (70)", bad, func(s *Session) []byte { return hIndexed(head(s), 70) }),
		hpackCase("hpack/2.3.3/3", "a literal whose indexed name is beyond the tables (100)", bad, func(s *Session) []byte { return hNamed(head(s), 100, "v") }),
		hpackCase("hpack/2.3.3/4", "an indexed field with a huge index (2^32)", bad, func(s *Session) []byte { return hIndexed(head(s), 1<<32) }),
		hpackCase("hpack/4.2/1", "a dynamic table size update above the client's SETTINGS_HEADER_TABLE_SIZE", bad, func(s *Session) []byte {
			return append(hSizeUpdate(nil, uint64(s.ClientSetting(http2.SettingHeaderTableSize, 4096))+1), head(s)...)
		}),
		hpackCase("hpack/4.2/2", "a dynamic table size update after a field that entered the dynamic table", bad, func(s *Session) []byte {
			return hSizeUpdate(hIncremental(head(s), "x-entry", "v"), 100)
		}),
		hpackCase("hpack/4.2/5", "a dynamic table size update after a field, the dynamic table empty", bad, func(s *Session) []byte {
			return hSizeUpdate(head(s), 0)
		}),
		hpackCase("hpack/4.2/3", "a dynamic table size update to 0 at the block's start", ok, func(s *Session) []byte { return append(hSizeUpdate(nil, 0), head(s)...) }),
		hpackCase("hpack/4.2/4", "two dynamic table size updates (0, then 1024) at the block's start", ok, func(s *Session) []byte {
			return append(hSizeUpdate(hSizeUpdate(nil, 0), 1024), head(s)...)
		}),
		hpackCase("hpack/5.1/1", "an integer over 2^64 (eleven continuation bytes)", bad, func(s *Session) []byte {
			return append(head(s), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
		}),
		hpackCase("hpack/5.1/2", "the block ends inside an integer", bad, func(s *Session) []byte { return append(head(s), 0xff, 0x80) }),
		hpackCase("hpack/5.2/1", "a string length beyond the block's end", bad, func(s *Session) []byte {
			return append(append(head(s), 0x00, 0x05, 'x', '-', 'a', 'b', 'c', 0x7e), "short"...)
		}),
		hpackCase("hpack/5.2/2", "a Huffman string holding the EOS symbol", bad, func(s *Session) []byte {
			// 'a' (00011, 5 bits) then EOS (30 ones), padded with ones
			return hRawHuff(append(append(head(s), 0x00), hStr(nil, "x-eos")...), []byte{0x1f, 0xff, 0xff, 0xff, 0xff})
		}),
		hpackCase("hpack/5.2/3", "Huffman padding longer than 7 bits", bad, func(s *Session) []byte {
			coded := append(hpack.AppendHuffmanString(nil, "abc"), 0xff)
			return hRawHuff(append(append(head(s), 0x00), hStr(nil, "x-pad")...), coded)
		}),
		hpackCase("hpack/5.2/4", "Huffman padding that is not the EOS prefix (zeros)", bad, func(s *Session) []byte {
			// 'a' is 00011: three bits of padding, here 000 instead of 111
			return hRawHuff(append(append(head(s), 0x00), hStr(nil, "x-pad")...), []byte{0x18})
		}),
		hpackCase("hpack/5.2/5", "Huffman-coded names and values", ok, func(s *Session) []byte {
			return hHuff(hHuff(append(head(s), 0x00), "x-huffman"), "a Huffman coded value")
		}),
		hpackCase("hpack/6.1/1", ":status 200 as the static table's index 8", ok, func(s *Session) []byte { return append(hIndexed(nil, 8), block(clen(s))...) }),
		hpackCase("hpack/6.2.1/1", "a literal added to the dynamic table, then referred to by index 62 in the same block", ok, func(s *Session) []byte {
			return hIndexed(hIncremental(head(s), "x-dyn", "v"), 62)
		}),
		hpackCase("hpack/6.2.3/1", "never-indexed literals", ok, func(s *Session) []byte { return hNeverIndexed(head(s), "x-secret", "v") }),
		hpackCase("hpack/6.2.1/2", "a literal with incremental indexing and an indexed name (content-type, 31)", ok, func(s *Session) []byte {
			return hStr(hInt(head(s), 0x40, 6, 31), "text/plain")
		}),
		{ID: "hpack/4.4/1", Section: "RFC 7541 HPACK", Desc: "the trailers' block empties the table (size update 0) and refers to an entry the response's block added",
			Expect: bad, Serve: func(s *Session) error {
				// no content-length: the client must read to END_STREAM
				if err := s.Headers(s.Stream, false, hIncremental(block(status200), "x-gone", "v")); err != nil {
					return err
				}
				if err := s.SendBody(s.Case.body(), false); err != nil {
					return err
				}
				return s.Headers(s.Stream, true, hIndexed(hSizeUpdate(nil, 0), 62))
			}},
		hpackCase("hpack/4.4/2", "an entry larger than the table empties it; referring to index 62 then", bad, func(s *Session) []byte {
			big := string(bytes.Repeat([]byte("e"), 5000))
			return hIndexed(hIncremental(head(s), "x-big", big), 62)
		}),
		hpackCase("hpack/4.4/3", "eviction: 100 entries of 100 bytes through a 4096-byte table, the newest still referred to", ok, func(s *Session) []byte {
			b := head(s)
			for i := 0; i < 100; i++ {
				b = hIncremental(b, fmt.Sprintf("x-e%02d", i), string(bytes.Repeat([]byte("v"), 63)))
			}
			return hIndexed(b, 62)
		}),
		{ID: "hpack/6.3/1", Section: "RFC 7541 HPACK", Desc: "the trailers' block starts with a table size update: accepted",
			Expect: ok, Serve: func(s *Session) error {
				if err := s.Headers(s.Stream, false, hIncremental(head(s), "x-kept", "v")); err != nil {
					return err
				}
				if err := s.SendBody(s.Case.body(), false); err != nil {
					return err
				}
				return s.Headers(s.Stream, true, hIndexed(hSizeUpdate(nil, 2048), 62))
			}},
	}
}

func floodCases() []*Case {
	const sec = "Floods (RFC 9113 10.5 denial of service)"
	flood := func(n int, write func(s *Session, i int) error) func(s *Session) error {
		return func(s *Session) error {
			deadline := time.Now().Add(3 * time.Second)
			for i := 0; i < n && time.Now().Before(deadline); i++ {
				if err := write(s, i); err != nil {
					return err
				}
			}
			return s.Respond()
		}
	}
	return []*Case{
		{ID: "http2/10.5/1", Section: sec, Desc: count(10000, "PINGs before the response: the client answers or stops with ENHANCE_YOUR_CALM"),
			Expect: complete(codeCalm), Serve: flood(10000, func(s *Session, i int) error { return s.Raw(typePing, 0, 0, ping8) })},
		{ID: "http2/10.5/2", Section: sec, Desc: count(5000, "SETTINGS frames before the response: acknowledged, or ENHANCE_YOUR_CALM"),
			Expect: complete(codeCalm), Serve: flood(5000, func(s *Session, i int) error { return s.Settings(setting(http2.SettingMaxConcurrentStreams, 100)) })},
		{ID: "http2/10.5/3", Section: sec, Desc: count(10000, "unknown frames before the response"),
			Expect: complete(codeCalm), Serve: flood(10000, func(s *Session, i int) error { return s.Raw(typeUnknown, 0, 0, []byte("flood")) })},
		{ID: "http2/10.5/4", Section: sec, Desc: count(10000, "PRIORITY frames on idle streams before the response"),
			Expect: complete(codeCalm), Serve: flood(10000, func(s *Session, i int) error { return s.Raw(typePriority, 0, uint32(2*i+101), prio(0, 1)) })},
		{ID: "http2/10.5/5", Section: sec, Desc: count(10000, "WINDOW_UPDATEs of 1 on the connection before the response"),
			Expect: complete(codeCalm), Serve: flood(10000, func(s *Session, i int) error { return s.Raw(typeWindowUpdate, 0, 0, u32(1)) })},
		{ID: "http2/10.5/6", Section: sec, Desc: count(10000, "empty DATA frames before the body"),
			Expect: complete(codeCalm), Serve: seq(headersOnly, func(s *Session) error {
				for i := 0; i < 10000; i++ {
					if err := s.Data(s.Stream, false, nil); err != nil {
						return err
					}
				}
				return nil
			}, bodyEnd)},
		{ID: "http2/10.5/7", Section: sec, Desc: "a CONTINUATION flood: a field block growing without END_HEADERS (64 MB at most); the client must stop it",
			Expect: connErr(codeCalm, codeProtocol, codeComp, codeInternal, codeSize), Serve: func(s *Session) error {
				if err := s.Raw(typeHeaders, 0, s.Stream, block(status200)); err != nil {
					return err
				}
				chunk := bytes.Repeat(hLiteral(nil, "x-flood", string(bytes.Repeat([]byte("f"), 100))), 150)
				deadline := time.Now().Add(4 * time.Second)
				for sent := 0; sent < 64<<20 && time.Now().Before(deadline); sent += len(chunk) {
					if err := s.Raw(typeContinuation, 0, s.Stream, chunk); err != nil {
						return err
					}
				}
				return nil
			}},
		{ID: "http2/10.5/8", Section: sec, Desc: count(10000, "empty CONTINUATION frames, then END_HEADERS: completes or ENHANCE_YOUR_CALM"),
			Expect: complete(codeCalm, codeProtocol), Serve: seq(func(s *Session) error {
				b := block(status200, clen(s))
				if err := s.Raw(typeHeaders, 0, s.Stream, b); err != nil {
					return err
				}
				for i := 0; i < 10000; i++ {
					if err := s.Raw(typeContinuation, 0, s.Stream, nil); err != nil {
						return err
					}
				}
				return s.Raw(typeContinuation, flagEndHeaders, s.Stream, nil)
			}, bodyEnd)},
	}
}
