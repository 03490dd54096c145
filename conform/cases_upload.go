package conform

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/net/http2"
)

// UploadSize is the request body's size in the upload cases: three times
// the initial flow-control window, so the window must be granted twice.
const UploadSize = 3 * 65535

// UploadBody is the request body the upload cases expect, byte for byte.
func UploadBody() []byte {
	line := []byte("conform upload body, checked byte for byte\n")
	return bytes.Repeat(line, UploadSize/len(line)+1)[:UploadSize]
}

// WriteUploadFile writes UploadBody to dir/upload.bin for client commands.
func WriteUploadFile(dir string) (string, error) {
	name := filepath.Join(dir, "upload.bin")
	return name, os.WriteFile(name, UploadBody(), 0o644)
}

// grantStep is what http2/6.9.1/6 grants at a time: 17 round trips for
// the body, few enough for a loaded machine.
const grantStep = 8192

// upload is the server's view of the request body on s.Stream.
type upload struct {
	stream, conn int // DATA bytes (payload with padding, as flow control counts) on the stream, on the connection
	body         []byte
	ended        bool
	maxFrame     int // the largest DATA frame
}

func (s *Session) upload() upload {
	var u upload
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	for _, f := range s.log.Frames {
		if f.Type != http2.FrameData {
			continue
		}
		u.conn += f.Len
		u.maxFrame = max(u.maxFrame, f.Len)
		if f.Stream == s.Stream {
			u.stream += f.Len
			u.body = append(u.body, f.Payload...)
			u.ended = u.ended || f.Flags&http2.FlagDataEndStream != 0
		}
	}
	return u
}

// grant opens the connection's and the stream's window by n.
func (s *Session) grant(n uint32) error {
	if err := s.Raw(typeWindowUpdate, 0, 0, u32(n)); err != nil {
		return err
	}
	return s.Raw(typeWindowUpdate, 0, s.Stream, u32(n))
}

// idle waits d, reading what the client sends meanwhile.
func (s *Session) idle(d time.Duration) {
	s.Await(d, func(Frame) bool { return false })
}

// finishUpload waits for the body's END_STREAM, checks the body and the
// frame size limit, and responds.
func finishUpload(s *Session, maxFrame int) error {
	if !s.upload().ended {
		s.Await(5*time.Second, func(f Frame) bool {
			return f.Type == typeData && f.Stream == s.Stream && f.Flags&http2.FlagDataEndStream != 0
		})
	}
	u := s.upload()
	switch {
	case !u.ended:
		s.Notef("the request body did not end (END_STREAM) within 5 s: %d of %d bytes", len(u.body), UploadSize)
	case !bytes.Equal(u.body, UploadBody()):
		s.Notef("the request body differs from the file: %d bytes, want %d", len(u.body), UploadSize)
	}
	if u.maxFrame > maxFrame {
		s.Notef("a DATA frame of %d bytes, over SETTINGS_MAX_FRAME_SIZE %d (RFC 9113 4.2)", u.maxFrame, maxFrame)
	}
	return s.Respond()
}

func uploadCases() []*Case {
	const sec = "RFC 9113 6.9 flow control of the request body"
	return []*Case{
		{ID: "http2/6.9.1/5", Section: sec, Desc: "the server grants no window for 1 s: the client sends at most the initial 65,535 bytes, then the rest once granted",
			Upload: true, Expect: complete(), Serve: func(s *Session) error {
				s.idle(time.Second)
				if u := s.upload(); u.stream > 65535 || u.conn > 65535 {
					s.Notef("the client sent %d bytes on a window of 65,535 (RFC 9113 6.9.1)", u.stream)
				}
				if err := s.grant(UploadSize); err != nil {
					return err
				}
				return finishUpload(s, 16384)
			}},
		{ID: "http2/6.9.1/6", Section: sec, Desc: "the server grants window 8,192 bytes at a time once the client used it all: the client never sends beyond it",
			Upload: true, Expect: complete(), Serve: func(s *Session) error {
				granted := 0
				for {
					u := s.upload()
					if u.stream > 65535+granted {
						s.Notef("the client sent %d bytes with %d granted in all (RFC 9113 6.9.1)", u.stream, 65535+granted)
						break
					}
					if u.ended {
						break
					}
					if u.stream == 65535+granted {
						if err := s.grant(grantStep); err != nil {
							return err
						}
						granted += grantStep
					}
					if _, ok := s.Await(2*time.Second, func(f Frame) bool { return f.Type == typeData && f.Stream == s.Stream }); !ok {
						s.Notef("the client stopped sending with %d bytes sent and %d granted", u.stream, 65535+granted)
						break
					}
				}
				return finishUpload(s, 16384)
			}},
		{ID: "http2/6.9.2/2", Section: sec, Desc: "SETTINGS_INITIAL_WINDOW_SIZE = 0 after the request: once it acknowledged, the client sends nothing more until a WINDOW_UPDATE",
			Upload: true, Expect: complete(), Preface: writeSettings(setting(http2.SettingInitialWindowSize, 0)), Serve: func(s *Session) error {
				if _, ok := s.AwaitType(2*time.Second, typeSettings, flagAck); !ok {
					s.Notef("no SETTINGS ACK within 2 s")
					return s.Respond()
				}
				before := s.upload().stream // the client's window is 0 minus what it sent before the ACK
				s.idle(500 * time.Millisecond)
				if after := s.upload().stream; after > before {
					s.Notef("the client sent %d bytes after acknowledging a window of 0 (RFC 9113 6.9.2)", after-before)
				}
				if err := s.grant(UploadSize); err != nil {
					return err
				}
				return finishUpload(s, 16384)
			}},
		{ID: "http2/6.9.1/7", Section: sec, Desc: "one WINDOW_UPDATE to the maximum (2^31-1) on the connection and the stream: the upload completes",
			Upload: true, Expect: complete(), Serve: func(s *Session) error {
				if err := s.grant(1<<31 - 1 - 65535); err != nil {
					return err
				}
				return finishUpload(s, 16384)
			}},
		{ID: "http2/6.9.1/8", Section: sec, Desc: "SETTINGS_MAX_FRAME_SIZE = 2^24-1 and a large window: the upload completes, in frames of any allowed size",
			Upload: true, Expect: complete(), Preface: writeSettings(setting(http2.SettingMaxFrameSize, 1<<24-1)), Serve: func(s *Session) error {
				if err := s.grant(UploadSize); err != nil {
					return err
				}
				return finishUpload(s, 1<<24-1)
			}},
		{ID: "http2/8.1/11", Section: sec, Desc: "the response comes before the body was read, then RST_STREAM(NO_ERROR): the client keeps the response (RFC 9113 8.1)",
			Upload: true, Expect: complete(), Serve: seq(respond, onReq(typeRST, 0, u32(uint32(codeNo))))},
		{ID: "http2/6.9.1/9", Section: sec, Desc: "WINDOW_UPDATE with increment 0 on the stream the client is uploading on",
			Upload: true, Expect: streamErr(codeProtocol), Serve: seq(onReq(typeWindowUpdate, 0, u32(0)), func(s *Session) error { return s.grant(UploadSize) }, respond)},
		{ID: "http2/6.9.1/10", Section: sec, Desc: "WINDOW_UPDATE taking the upload stream's window above 2^31-1",
			// The first overflows unless the client already used the whole
			// initial window; then the second does: the connection's window,
			// not opened, keeps it from sending in between.
			Upload: true, Expect: streamErr(codeFlow), Serve: seq(onReq(typeWindowUpdate, 0, u32(1<<31-1)), onReq(typeWindowUpdate, 0, u32(1)), respond)},
		{ID: "http2/6.9.2/3", Section: sec, Desc: fmt.Sprintf("SETTINGS_INITIAL_WINDOW_SIZE lowered to 1000 while the client uploads, then a WINDOW_UPDATE of %d: the upload completes", UploadSize),
			Upload: true, Expect: complete(), Serve: seq(writeSettings(setting(http2.SettingInitialWindowSize, 1000)), awaitAck("the preface"), awaitAck("SETTINGS_INITIAL_WINDOW_SIZE = 1000"),
				func(s *Session) error { return s.grant(UploadSize) }, func(s *Session) error { return finishUpload(s, 16384) })},
	}
}
