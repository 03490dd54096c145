package conform

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Frame is a frame the client sent, copied off the framer's buffers.
type Frame struct {
	Type     http2.FrameType
	Flags    http2.Flags
	Stream   uint32
	Len      int
	Code     http2.ErrCode   // RST_STREAM, GOAWAY
	Last     uint32          // GOAWAY's last stream id
	Incr     uint32          // WINDOW_UPDATE's increment
	Data     [8]byte         // PING's payload
	Settings []http2.Setting // SETTINGS' parameters
	// Path is a request's :path (HEADERS with END_HEADERS, decoded).
	Path string
	// Payload is a DATA frame's data, without padding.
	Payload []byte
}

func (f Frame) String() string {
	switch f.Type {
	case http2.FrameGoAway:
		return fmt.Sprintf("GOAWAY %v last=%d", f.Code, f.Last)
	case http2.FrameRSTStream:
		return fmt.Sprintf("RST_STREAM stream=%d %v", f.Stream, f.Code)
	case http2.FrameWindowUpdate:
		return fmt.Sprintf("WINDOW_UPDATE stream=%d +%d", f.Stream, f.Incr)
	}
	return fmt.Sprintf("%v stream=%d flags=%#x len=%d", f.Type, f.Stream, uint8(f.Flags), f.Len)
}

// ConnLog is what one connection of a case saw from the client.
type ConnLog struct {
	mu       sync.Mutex
	cond     *sync.Cond
	Frames   []Frame
	Requests []uint32 // streams the client opened with HEADERS
	Ended    bool     // the connection is over (the client closed it, or it failed)
	EndErr   error    // why reading ended
}

func newConnLog() *ConnLog {
	l := &ConnLog{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *ConnLog) add(f Frame) {
	l.mu.Lock()
	l.Frames = append(l.Frames, f)
	if f.Type == http2.FrameHeaders && f.Stream%2 == 1 && !l.has(f.Stream) {
		l.Requests = append(l.Requests, f.Stream)
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

func (l *ConnLog) has(id uint32) bool {
	for _, r := range l.Requests {
		if r == id {
			return true
		}
	}
	return false
}

func (l *ConnLog) isRequest(id uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.has(id)
}

func (l *ConnLog) end(err error) {
	l.mu.Lock()
	if !l.Ended {
		l.Ended, l.EndErr = true, err
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// errEnded: the connection ended while a script waited for a frame.
var errEnded = errors.New("connection ended")

// Session is the server's side of one connection of a case: the script's
// handle to write frames and wait for the client's.
type Session struct {
	Case    *Case
	Attempt int    // 1 on the case's first connection, 2 on a retry...
	Stream  uint32 // the request's stream
	Path    string

	nc   net.Conn
	wmu  sync.Mutex
	fr   *http2.Framer // writes, under wmu
	log  *ConnLog
	next int // the next frame of log Await looks at
	st   *caseState

	prefaced    bool // the case's preface went out: SETTINGS ACKs may follow (under wmu)
	pendingAcks int

	sentConn, sentStream int // DATA bytes SendBody wrote, for the client's windows
}

// sendWindow is how many bytes the client's windows let through in one
// frame now: the connection's and the stream's window (RFC 9113 6.9, with
// the client's SETTINGS_INITIAL_WINDOW_SIZE and WINDOW_UPDATEs so far) and
// its SETTINGS_MAX_FRAME_SIZE.
func (s *Session) sendWindow() int {
	l := s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	conn, stream := int64(65535), int64(clientSetting(l, http2.SettingInitialWindowSize, 65535))
	for _, f := range l.Frames {
		if f.Type == http2.FrameWindowUpdate {
			switch f.Stream {
			case 0:
				conn += int64(f.Incr)
			case s.Stream:
				stream += int64(f.Incr)
			}
		}
	}
	n := min(conn-int64(s.sentConn), stream-int64(s.sentStream), int64(clientSetting(l, http2.SettingMaxFrameSize, 16384)))
	return int(max(n, 0))
}

// Notef records a violation the script saw; it fails the case.
func (s *Session) Notef(format string, args ...any) {
	s.st.note(fmt.Sprintf(format, args...))
}

// Raw writes one frame of any type, flags and payload.
func (s *Session) Raw(t http2.FrameType, flags http2.Flags, stream uint32, payload []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.fr.WriteRawFrame(t, flags, stream, payload)
}

// Write writes raw bytes on the connection.
func (s *Session) Write(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.nc.Write(b)
	return err
}

// Settings writes a SETTINGS frame.
func (s *Session) Settings(set ...http2.Setting) error {
	return s.Raw(http2.FrameSettings, 0, 0, settingsPayload(set...))
}

func settingsPayload(set ...http2.Setting) []byte {
	var b []byte
	for _, x := range set {
		b = binary.BigEndian.AppendUint16(b, uint16(x.ID))
		b = binary.BigEndian.AppendUint32(b, x.Val)
	}
	return b
}

// Headers writes one HEADERS frame with END_HEADERS, END_STREAM when end.
func (s *Session) Headers(stream uint32, end bool, block []byte) error {
	flags := http2.FlagHeadersEndHeaders
	if end {
		flags |= http2.FlagHeadersEndStream
	}
	return s.Raw(http2.FrameHeaders, flags, stream, block)
}

// ResponseHeaders writes a 200 response's HEADERS with the body's
// content-length and extra fields.
func (s *Session) ResponseHeaders(end bool, extra ...hpack.HeaderField) error {
	fs := append([]hpack.HeaderField{status200, {Name: "content-length", Value: fmt.Sprint(len(s.Case.body()))}}, extra...)
	return s.Headers(s.Stream, end, block(fs...))
}

// Data writes a DATA frame on stream.
func (s *Session) Data(stream uint32, end bool, b []byte) error {
	var flags http2.Flags
	if end {
		flags = http2.FlagDataEndStream
	}
	return s.Raw(http2.FrameData, flags, stream, b)
}

// Respond writes the whole response: HEADERS, then the body in DATA frames
// within the client's flow-control windows, the last with END_STREAM.
func (s *Session) Respond() error {
	if err := s.ResponseHeaders(false); err != nil {
		return err
	}
	return s.SendBody(s.Case.body(), true)
}

// SendBody writes b on the request's stream in frames no larger than the
// client's SETTINGS_MAX_FRAME_SIZE, waiting for window as needed.
func (s *Session) SendBody(b []byte, end bool) error {
	if len(b) == 0 {
		if end {
			return s.Data(s.Stream, true, nil)
		}
		return nil
	}
	for len(b) > 0 {
		n, err := s.window(len(b))
		if err != nil {
			return err
		}
		if err := s.Data(s.Stream, end && n == len(b), b[:n]); err != nil {
			return err
		}
		s.sentConn += n
		s.sentStream += n
		b = b[n:]
	}
	return nil
}

// window waits until the client's windows let up to want bytes through
// and returns how many (at most its frame size).
func (s *Session) window(want int) (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := min(want, s.sendWindow())
		if n > 0 {
			return n, nil
		}
		s.log.mu.Lock()
		seen := len(s.log.Frames)
		for len(s.log.Frames) == seen && !s.log.Ended && time.Now().Before(deadline) {
			waitFor(s.log.cond, 100*time.Millisecond)
		}
		ended := s.log.Ended
		s.log.mu.Unlock()
		if ended {
			return 0, errEnded
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no flow-control window from the client for 10 s")
		}
	}
}

// waitFor waits on cond (its lock held) at most d.
func waitFor(cond *sync.Cond, d time.Duration) {
	t := time.AfterFunc(d, cond.Broadcast)
	cond.Wait()
	t.Stop()
}

// Await waits up to d for a frame from the client, after those already
// looked at, that match accepts; it returns false when none came.
func (s *Session) Await(d time.Duration, match func(Frame) bool) (Frame, bool) {
	deadline := time.Now().Add(d)
	l := s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for s.next < len(l.Frames) {
			f := l.Frames[s.next]
			s.next++
			if match(f) {
				return f, true
			}
		}
		if l.Ended || !time.Now().Before(deadline) {
			return Frame{}, false
		}
		waitFor(l.cond, time.Until(deadline))
	}
}

// AwaitType is Await for the first frame of type t with all flags set.
func (s *Session) AwaitType(d time.Duration, t http2.FrameType, flags http2.Flags) (Frame, bool) {
	return s.Await(d, func(f Frame) bool { return f.Type == t && f.Flags&flags == flags })
}

// ClientSetting is the value the client's SETTINGS gave id so far, or def.
func (s *Session) ClientSetting(id http2.SettingID, def uint32) uint32 {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return clientSetting(s.log, id, def)
}

// clientSetting reads l's frames; l.mu held.
func clientSetting(l *ConnLog, id http2.SettingID, def uint32) uint32 {
	v := def
	for _, f := range l.Frames {
		if f.Type == http2.FrameSettings && f.Flags&http2.FlagSettingsAck == 0 {
			for _, x := range f.Settings {
				if x.ID == id {
					v = x.Val
				}
			}
		}
	}
	return v
}

// Close closes the connection.
func (s *Session) Close() error { return s.nc.Close() }

// readFrames reads the client's frames into the log until the connection
// ends; it answers the client's SETTINGS and PINGs as any server must.
func (s *Session) readFrames(fr *http2.Framer, dec *hpack.Decoder, hb *bytes.Buffer) {
	for {
		f, err := readFrame(fr, dec, hb)
		if err != nil {
			s.log.end(err)
			return
		}
		s.log.add(f)
		switch {
		case f.Type == http2.FrameSettings && f.Flags&http2.FlagSettingsAck == 0:
			s.wmu.Lock()
			if s.prefaced {
				s.fr.WriteSettingsAck()
			} else {
				s.pendingAcks++
			}
			s.wmu.Unlock()
		case f.Type == http2.FramePing && f.Flags&http2.FlagPingAck == 0:
			s.wmu.Lock()
			s.fr.WritePing(true, f.Data)
			s.wmu.Unlock()
		}
	}
}

// prefaceDone marks the case's preface sent and sends the SETTINGS ACKs
// owed meanwhile.
func (s *Session) prefaceDone() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.prefaced = true
	for ; s.pendingAcks > 0; s.pendingAcks-- {
		s.fr.WriteSettingsAck()
	}
}

// readFrame reads one frame and copies what a verdict needs; a HEADERS
// block (with its CONTINUATIONs) is decoded for its :path.
func readFrame(fr *http2.Framer, dec *hpack.Decoder, hb *bytes.Buffer) (Frame, error) {
	f, err := fr.ReadFrame()
	if err != nil {
		return Frame{}, err
	}
	h := f.Header()
	out := Frame{Type: h.Type, Flags: h.Flags, Stream: h.StreamID, Len: int(h.Length)}
	switch f := f.(type) {
	case *http2.DataFrame:
		out.Payload = append([]byte(nil), f.Data()...)
	case *http2.GoAwayFrame:
		out.Code, out.Last = f.ErrCode, f.LastStreamID
	case *http2.RSTStreamFrame:
		out.Code = f.ErrCode
	case *http2.WindowUpdateFrame:
		out.Incr = f.Increment
	case *http2.PingFrame:
		out.Data = f.Data
	case *http2.SettingsFrame:
		f.ForeachSetting(func(x http2.Setting) error {
			out.Settings = append(out.Settings, x)
			return nil
		})
	case *http2.HeadersFrame:
		hb.Reset()
		hb.Write(f.HeaderBlockFragment())
		if f.HeadersEnded() {
			out.Path = decodePath(dec, hb.Bytes())
		}
	case *http2.ContinuationFrame:
		hb.Write(f.HeaderBlockFragment())
		if f.HeadersEnded() {
			out.Path = decodePath(dec, hb.Bytes())
		}
	}
	return out, nil
}

func decodePath(dec *hpack.Decoder, block []byte) string {
	fields, err := dec.DecodeFull(block)
	if err != nil {
		return ""
	}
	for _, f := range fields {
		if f.Name == ":path" {
			return f.Value
		}
	}
	return ""
}
