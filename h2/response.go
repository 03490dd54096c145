package h2

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// responseWriter is the http.ResponseWriter of one server stream. The body
// goes straight into the stream's send queue; HEADERS wait until the handler
// flushes, writes more than startSendThreshold, or returns, so small
// responses get a Content-Length and travel as HEADERS plus one DATA frame.
type responseWriter struct {
	c   *Conn
	st  *stream
	req *http.Request

	header        http.Header
	status        int
	wroteHeader   bool // status decided
	sentHeader    bool // HEADERS queued
	contentLength int64
	written       int64
	isHead        bool
	ended         bool // finish ran (CloseWrite or the handler's return)
	trailerKeys   []string
	// prepared are WritePrepared's fields, sent after those of the header map.
	prepared []hpack.HeaderField
	// fieldBuf holds the HEADERS' fields of most responses: the writer
	// encodes them from here, no allocation of their own.
	fieldBuf [8]hpack.HeaderField
}

var (
	_ http.Flusher   = (*responseWriter)(nil)
	_ http.Pusher    = (*responseWriter)(nil)
	_ io.ReaderFrom  = (*responseWriter)(nil)
	_ SharedWriter   = (*responseWriter)(nil)
	_ PreparedWriter = (*responseWriter)(nil)
)

// SharedWriter is implemented by the server's http.ResponseWriter.
// WriteShared is Write for bytes the caller never modifies afterwards, such
// as a cache's: they are sent from p itself instead of from a copy.
type SharedWriter interface {
	WriteShared(p []byte) (int, error)
}

// PreparedWriter is implemented by the server's http.ResponseWriter.
// WritePrepared sends a whole response (in place of WriteHeader and Write)
// whose header fields and body were made once and are shared by many
// responses, such as a cache's: the fields go to HPACK as they are, and the
// body is sent from body itself, as WriteShared does. A response header
// map walked, validated and lower-cased per request cost more than the
// rest of a cached file's answer; here the caller has done it once: the
// fields have valid lower-case names and valid values, none is a
// pseudo-header or connection-specific, and content-length, if present,
// is len(body). Neither is modified afterwards. Fields set through Header()
// before the call are sent too (none may repeat a prepared one); no
// Content-Type is sniffed. A HEAD request gets the headers only.
type PreparedWriter interface {
	WritePrepared(status int, fields []hpack.HeaderField, body []byte) error
}

// WritePrepared implements PreparedWriter.
func (w *responseWriter) WritePrepared(status int, fields []hpack.HeaderField, body []byte) error {
	if w.wroteHeader {
		return errors.New("h2: WritePrepared after the response's header")
	}
	if status < 200 {
		return fmt.Errorf("h2: WritePrepared with status %d: not a final response", status)
	}
	w.prepared = fields
	w.WriteHeader(status)
	if w.contentLength < 0 {
		w.contentLength = int64(len(body))
	}
	if len(body) == 0 {
		return nil
	}
	_, err := w.write(body, true)
	return err
}

func (w *responseWriter) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header)
	}
	return w.header
}

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("h2: invalid WriteHeader code %v", code))
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.sendInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	h := w.header
	if len(h) == 0 {
		return
	}
	if cl := h.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.contentLength = n
		} else {
			h.Del("Content-Length")
		}
	}
	for _, v := range h["Trailer"] {
		w.trailerKeys = append(w.trailerKeys, splitComma(v)...)
	}
}

func (w *responseWriter) sendInformational(code int) {
	fields := []hpack.HeaderField{{Name: ":status", Value: statusText(code)}}
	fields = appendHeaderFields(fields, w.header, nil)
	w.c.mu.Lock()
	if w.st.state != stateClosed {
		w.c.queueLocked(wframe{kind: wHeaders, id: w.st.id, fields: fields})
	}
	w.c.mu.Unlock()
}

func bodyAllowed(status int) bool {
	return !(status >= 100 && status < 200 || status == http.StatusNoContent || status == http.StatusNotModified)
}

func (w *responseWriter) Write(p []byte) (int, error) { return w.write(p, false) }

func (w *responseWriter) WriteShared(p []byte) (int, error) { return w.write(p, true) }

func (w *responseWriter) write(p []byte, shared bool) (int, error) {
	if send, err := w.beginWrite(len(p)); err != nil {
		return 0, err
	} else if !send {
		return len(p), nil
	}
	var err error
	if shared {
		err = w.c.queueShared(w.st, p)
	} else {
		err = w.c.writeBody(w.st, p, false)
	}
	if err != nil {
		return 0, w.writeErr(err)
	}
	return len(p), nil
}

// queueShared queues p by reference on the stream's send side. Unlike
// writeBody it does not wait for queue space: shared bytes cost no memory.
func (c *Conn) queueShared(st *stream, p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.send.err != nil {
		return st.send.err
	}
	st.send.q.WriteShared(p)
	if st.send.q.Len()-st.send.ready >= flushThreshold {
		c.releaseLocked(st)
	}
	return nil
}

// beginWrite accounts for n body bytes about to be written and sends the
// headers when enough is buffered. It reports whether the bytes go on the
// wire; when not, err says why (nil for HEAD, which discards the body).
func (w *responseWriter) beginWrite(n int) (send bool, err error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return false, http.ErrBodyNotAllowed
	}
	if w.ended {
		return false, errWriteClosed
	}
	if w.contentLength >= 0 && w.written+int64(n) > w.contentLength {
		return false, http.ErrContentLength
	}
	w.written += int64(n)
	if w.isHead {
		return false, nil
	}
	if !w.sentHeader && w.written > startSendThreshold {
		if err := w.sendHeaders(false); err != nil {
			return false, err
		}
	}
	return true, nil
}

// ReadFrom is io.Copy's path (http.ServeContent's too): it reads r through
// a pooled chunk instead of the 32 KB buffer io.Copy would allocate for
// every response.
func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	buf := chunkPool.Get().(*[chunkSize]byte)
	defer chunkPool.Put(buf)
	var total int64
	for {
		n, rerr := io.ReadFull(r, buf[:])
		if n > 0 {
			if _, err := w.write(buf[:n], false); err != nil {
				return total, err
			}
			total += int64(n)
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return total, nil
		default:
			return total, rerr
		}
	}
}

func (w *responseWriter) WriteString(s string) (int, error) {
	return w.Write([]byte(s))
}

// writeErr turns a stream failure into what a handler expects.
func (w *responseWriter) writeErr(err error) error {
	if errors.Is(err, errStreamDone) {
		return http.ErrHandlerTimeout
	}
	return err
}

// errWriteClosed is a response body write after CloseWrite.
var errWriteClosed = errors.New("h2: response written after CloseWrite")

// CloseWrite ends the response now (END_STREAM after what was written)
// while the handler goes on reading the request body: either direction of
// a CONNECT tunnel ends on its own (RFC 9113 8.5). Writes after it fail.
func (w *responseWriter) CloseWrite() error {
	w.finish()
	// The END_STREAM may have closed the stream already (the request had
	// ended): that is success, not the write failure sendErr would report.
	w.c.mu.Lock()
	err := w.st.send.err
	w.c.mu.Unlock()
	if err == nil || errors.Is(err, errStreamDone) {
		return nil
	}
	return w.writeErr(err)
}

// Flush sends the headers and everything written so far.
func (w *responseWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sentHeader {
		w.sendHeaders(false)
	}
	w.c.mu.Lock()
	w.c.releaseLocked(w.st)
	w.c.mu.Unlock()
}

// FlushError is Flush reporting whether the stream can still carry data.
func (w *responseWriter) FlushError() error {
	w.Flush()
	return w.sendErr()
}

// sendErr is why the stream can carry no more data, nil while it can.
func (w *responseWriter) sendErr() error {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if err := w.st.send.err; err != nil {
		return w.writeErr(err)
	}
	return nil
}

// sendHeaders queues the response HEADERS; end means the response has no body.
func (w *responseWriter) sendHeaders(end bool) error {
	w.sentHeader = true
	h := w.header
	fields := append(w.fieldBuf[:0], hpack.HeaderField{Name: ":status", Value: statusText(w.status)})
	if len(h) > 0 {
		fields = appendHeaderFields(fields, h, isTrailerPrefixed)
	}
	c, st := w.c, w.st
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := h["Content-Type"]; !ok && w.prepared == nil && bodyAllowed(w.status) && st.send.q.Len() > 0 {
		var head [512]byte
		fields = append(fields, hpack.HeaderField{Name: "content-type", Value: http.DetectContentType(head[:st.send.q.Head(head[:])])})
	}
	if st.send.err != nil {
		return w.writeErr(st.send.err)
	}
	if st.state == stateReservedLocal {
		st.state = stateHalfClosedRemote
	}
	st.send.headers = true
	c.queueLocked(wframe{kind: wHeaders, id: st.id, end: end, fields: fields, shared: w.prepared})
	if end {
		st.send.end, st.send.endSent = true, true
		c.localClosedLocked(st)
		return nil
	}
	c.scheduleLocked(st)
	return nil
}

// lowerTrailerPrefix is http.TrailerPrefix as appendHeaderFields passes names.
var lowerTrailerPrefix = strings.ToLower(http.TrailerPrefix)

func isTrailerPrefixed(name string) bool { return strings.HasPrefix(name, lowerTrailerPrefix) }

// finish completes the response after the handler returned.
func (w *responseWriter) finish() {
	if w.ended {
		return
	}
	w.ended = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	trailers := w.trailers()
	c := w.c
	if !w.sentHeader && w.written < w.contentLength && !w.isHead && bodyAllowed(w.status) {
		// Nothing of a promised body went out: HEADERS with END_STREAM and
		// that content-length would be malformed (RFC 9113 8.1.1).
		c.mu.Lock()
		c.resetStreamLocked(w.st.id, http2.ErrCodeInternal)
		c.mu.Unlock()
		return
	}
	if !w.sentHeader {
		if w.contentLength < 0 && bodyAllowed(w.status) && trailers == nil && (w.written > 0 || !w.isHead) {
			w.Header().Set("Content-Length", strconv.FormatInt(w.written, 10))
		}
		if w.sendHeaders(w.isHead || w.written == 0 && trailers == nil) != nil {
			return
		}
		if w.isHead || w.written == 0 && trailers == nil {
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.contentLength >= 0 && w.written < w.contentLength && !w.isHead {
		// The handler promised more than it wrote; do not pass a truncated
		// body off as complete.
		c.resetStreamLocked(w.st.id, http2.ErrCodeInternal)
		return
	}
	c.endSendLocked(w.st, trailers)
}

// trailers collects the declared and TrailerPrefix trailers.
func (w *responseWriter) trailers() []hpack.HeaderField {
	var fields []hpack.HeaderField
	for _, k := range w.trailerKeys {
		for _, v := range w.header[http.CanonicalHeaderKey(k)] {
			fields = append(fields, hpack.HeaderField{Name: strings.ToLower(k), Value: v})
		}
	}
	for k, vv := range w.header {
		if rest, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			for _, v := range vv {
				fields = append(fields, hpack.HeaderField{Name: strings.ToLower(rest), Value: v})
			}
		}
	}
	var ok []hpack.HeaderField
	cl := int64(-1)
	for _, f := range fields {
		if validFieldName(f.Name) && checkRegularField(f, &cl) == nil && f.Name != "content-length" {
			ok = append(ok, f)
		}
	}
	return ok
}

// Push implements http.Pusher with PUSH_PROMISE (RFC 9113 8.4), when the
// client allows it.
func (w *responseWriter) Push(target string, opts *http.PushOptions) error {
	if opts == nil {
		opts = &http.PushOptions{}
	}
	method := opts.Method
	if method == "" {
		method = http.MethodGet
	}
	if method != http.MethodGet && method != http.MethodHead {
		return fmt.Errorf("h2: push method %q is not safe and cacheable", method)
	}
	u, err := url.Parse(target)
	if err != nil || u.Path == "" || u.Host != "" && u.Host != w.req.Host || !strings.HasPrefix(u.RequestURI(), "/") {
		return fmt.Errorf("h2: push target %q is not a path on %s", target, w.req.Host)
	}
	scheme := "http"
	if w.req.TLS != nil {
		scheme = "https"
	}
	fields := []hpack.HeaderField{
		{Name: ":method", Value: method},
		{Name: ":scheme", Value: scheme},
		{Name: ":authority", Value: w.req.Host},
		{Name: ":path", Value: u.RequestURI()},
	}
	fields = appendHeaderFields(fields, opts.Header, func(name string) bool { return name == "host" || name == "content-length" })
	rh, err := parseRequestFields(fields)
	if err != nil {
		return fmt.Errorf("h2: push of %q: %w", target, err)
	}

	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.peer.enablePush:
		return http.ErrNotSupported
	case c.closing || c.goAwayRecv != nil || c.goAwaySent:
		return fmt.Errorf("h2: push of %q: connection is going away", target)
	case c.activeOurs >= int(c.peer.maxStreams):
		return fmt.Errorf("h2: push of %q: peer allows %d concurrent pushed streams", target, c.peer.maxStreams)
	case w.st.state == stateClosed || w.st.send.endSent:
		return fmt.Errorf("h2: push of %q: parent stream %d is closed", target, w.st.id)
	case c.nextStreamID > 1<<31-1:
		return fmt.Errorf("h2: push of %q: stream IDs exhausted", target)
	}
	id := c.nextStreamID
	c.nextStreamID += 2
	pst := c.newStream(id, true)
	pst.state = stateReservedLocal
	pst.recv.err = io.EOF
	c.queueLocked(wframe{kind: wPushPromise, id: w.st.id, val: id, fields: fields})
	req, err := c.newRequest(pst, rh, fields, false, false)
	if err != nil {
		c.resetStreamLocked(id, http2.ErrCodeInternal)
		return err
	}
	c.goHandler(pst, req)
	return nil
}
