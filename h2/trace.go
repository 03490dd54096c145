package h2

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http2"
)

// FrameTracer returns a Config.Trace that prints one line per frame to w,
// stamped with the time since start: what `shunt get -v` shows. describe,
// if set, names extension frames (those the framer leaves unknown); w must
// be safe for concurrent use, since the connection's goroutines call it.
func FrameTracer(w io.Writer, start time.Time, describe func(http2.FrameHeader, []byte) (string, bool)) func(Direction, http2.Frame) {
	return func(dir Direction, f http2.Frame) {
		// The frame is only valid during the call, so it is formatted at once.
		fmt.Fprintf(w, "%9.3fms %s %s\n", time.Since(start).Seconds()*1000, dir, DescribeFrame(f, describe))
	}
}

// DescribeFrame is a frame on one line, its header in the framer's words
// without the brackets ("DATA flags=END_STREAM stream=1 len=5") and the
// fields that matter per type; header fields follow on lines of their own.
func DescribeFrame(f http2.Frame, describe func(http2.FrameHeader, []byte) (string, bool)) string {
	s := strings.TrimSuffix(strings.TrimPrefix(f.Header().String(), "[FrameHeader "), "]")
	switch f := f.(type) {
	case *http2.SettingsFrame:
		var parts []string
		f.ForeachSetting(func(st http2.Setting) error {
			parts = append(parts, st.String())
			return nil
		})
		if len(parts) > 0 {
			s += " " + strings.Join(parts, " ")
		}
	case *http2.WindowUpdateFrame:
		s += fmt.Sprintf(" increment=%d", f.Increment)
	case *http2.PingFrame:
		s += fmt.Sprintf(" data=%x", f.Data)
	case *http2.RSTStreamFrame:
		s += " code=" + f.ErrCode.String()
	case *http2.GoAwayFrame:
		s += fmt.Sprintf(" last_stream=%d code=%s", f.LastStreamID, f.ErrCode)
		if d := f.DebugData(); len(d) > 0 {
			s += fmt.Sprintf(" debug=%q", d)
		}
	case *http2.UnknownFrame:
		if describe != nil {
			if d, ok := describe(f.FrameHeader, f.Payload()); ok {
				s = d
			}
		}
	case *http2.MetaHeadersFrame:
		for _, hf := range f.Fields {
			s += fmt.Sprintf("\n            %s: %s", hf.Name, hf.Value)
		}
	}
	return s
}

// ResponseProto says how a response came: its protocol and, over TLS, the
// version and the ALPN protocol ("HTTP/2.0 over TLS 1.3 (ALPN h2)"), so a
// run records what really ran.
func ResponseProto(resp *http.Response) string {
	p := resp.Proto
	if resp.TLS != nil {
		p += " over " + tls.VersionName(resp.TLS.Version) + " (ALPN " + resp.TLS.NegotiatedProtocol + ")"
	}
	return p
}
