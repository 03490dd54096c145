package h2

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// headerBlock is the header block being read: HEADERS plus CONTINUATION
// frames, decoded as they arrive. Owned by the read goroutine.
type headerBlock struct {
	active     bool
	id         uint32
	end        bool // END_STREAM
	selfDep    bool // RFC 7540 priority naming the stream itself
	frames     int
	bytes      int
	fields     []hpack.HeaderField
	size       uint32
	tooLarge   bool   // over MaxHeaderListSize: fields dropped, decoding goes on
	bad        string // why the block is malformed, "" if it is not
	sawRegular bool

	promised uint32 // PUSH_PROMISE (client role): the promised stream; 0 for HEADERS
	scan     blockScan
}

func (c *Conn) onHeadersFrame(f *http2.HeadersFrame) error {
	return c.onHeaders(f.StreamID, f.StreamEnded(), f.HasPriority() && f.Priority.StreamDep == f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
}

// onHeaders starts a header block on stream id with a HEADERS frame's
// fragment.
func (c *Conn) onHeaders(id uint32, end, selfDep bool, frag []byte, ended bool) error {
	c.hb = headerBlock{
		active:  true,
		id:      id,
		end:     end,
		selfDep: selfDep,
		fields:  c.hb.fields[:0],
	}
	return c.headerFragment(frag, ended)
}

func (c *Conn) onContinuation(f *http2.ContinuationFrame) error {
	if !c.hb.active || f.StreamID != c.hb.id {
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("unexpected CONTINUATION on stream %d", f.StreamID)}
	}
	return c.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded())
}

// headerFragment decodes one fragment. Decoding is incremental, so memory is
// bounded by the limits checked here whatever the number of frames (the
// CONTINUATION flood), and by MaxHeaderListSize whatever the compression
// ratio (the HPACK bomb).
func (c *Conn) headerFragment(frag []byte, ended bool) error {
	hb := &c.hb
	hb.frames++
	hb.bytes += len(frag)
	if hb.frames > maxHeaderBlockFrames || hb.bytes > 2*int(c.cfg.MaxHeaderListSize)+int(c.cfg.MaxReadFrameSize) {
		return connError{http2.ErrCodeEnhanceYourCalm, fmt.Sprintf("header block of %d frames, %d bytes on stream %d", hb.frames, hb.bytes, hb.id)}
	}
	if hb.frames == 1 && ended && c.repeat.is(frag) {
		// The last block again: its fields are still in fields' array.
		hb.fields, hb.size = hb.fields[:c.repeat.n], c.repeat.size
		hb.active = false
		return c.blockDone()
	}
	c.repeat.n = 0 // this block may change the dynamic table
	if err := hb.scan.scan(frag); err != nil {
		return connError{http2.ErrCodeCompression, fmt.Sprintf("HPACK on stream %d: %v", hb.id, err)}
	}
	if c.hdec == nil {
		c.newDecoder()
	}
	if _, err := c.hdec.Write(frag); err != nil {
		return connError{http2.ErrCodeCompression, fmt.Sprintf("HPACK on stream %d: %v", hb.id, err)}
	}
	if !ended {
		return nil
	}
	hb.active = false
	if err := c.hdec.Close(); err != nil {
		return connError{http2.ErrCodeCompression, fmt.Sprintf("HPACK on stream %d: %v", hb.id, err)}
	}
	if hb.frames == 1 && hb.bad == "" && !hb.tooLarge && len(hb.fields) > 0 && !hb.scan.changes && !hb.scan.broken {
		c.repeat = repeatBlock{block: append(c.repeat.block[:0], frag...), n: len(hb.fields), size: hb.size}
	}
	return c.blockDone()
}

// repeatBlock is the last header block decoded, if it was one frame that
// left the dynamic table as it was (indexed fields and literals not
// indexed, RFC 7541 6.1-6.2; no size update) and whose fields passed
// onField's checks. Clients repeat such blocks: h2load's requests after
// the first (nghttp2 never indexes :path, so it sends the same literal),
// a page's requests that differ in no field. The same bytes are then the
// same fields, until the next block decoded, which replaces or forgets
// it. Its fields stay where its decoding put them, in headerBlock.fields'
// array. HPACK decoding (with a string allocated for each literal), the
// fields' checks and parseRequestFields were ~3,100 instructions a request
// of BenchmarkInlineBurst/1024, whose client sends h2load's block.
type repeatBlock struct {
	block []byte
	n     int    // fields; 0: none remembered
	size  uint32 // their size for MaxHeaderListSize
	// The request they make (server role), once parsed.
	head   requestHead
	parsed bool
}

// request is parseRequestFields of the block just read, done once for a
// block remembered and repeated: n > 0 means it is the block just read.
func (r *repeatBlock) request(fields []hpack.HeaderField) (requestHead, error) {
	if r.n > 0 && r.parsed {
		return r.head, nil
	}
	rh, err := parseRequestFields(fields)
	if r.n > 0 && err == nil {
		r.head, r.parsed = rh, true
	}
	return rh, err
}

// is reports whether frag is the remembered block.
func (r *repeatBlock) is(frag []byte) bool { return r.n > 0 && string(frag) == string(r.block) }

// blockDone handles a complete, decoded header block.
func (c *Conn) blockDone() error {
	hb := &c.hb
	if c.client && hb.promised != 0 {
		return c.onPromisedRequest()
	}
	if c.client {
		return c.onResponseHeaders()
	}
	return c.onRequestHeaders()
}

// onField receives each decoded field and checks what RFC 9113 8.2 asks of
// every field; message-level checks come once the block is complete.
func (c *Conn) onField(f hpack.HeaderField) {
	hb := &c.hb
	if hb.bad != "" || hb.tooLarge {
		return
	}
	hb.size += f.Size()
	if hb.size > c.cfg.MaxHeaderListSize {
		hb.tooLarge = true
		return
	}
	pseudo := f.IsPseudo()
	if pseudo && hb.sawRegular {
		hb.bad = "pseudo-header " + f.Name + " after regular header"
		return
	}
	hb.sawRegular = hb.sawRegular || !pseudo
	if !hb.checkedBefore(f) {
		if !pseudo && !validFieldName(f.Name) {
			hb.bad = fmt.Sprintf("invalid header name %q", f.Name)
			return
		}
		if !httpguts.ValidHeaderFieldValue(f.Value) {
			hb.bad = "invalid value for header " + f.Name
			return
		}
		// RFC 9113 8.2.1: nor may a value start or end with SP or HTAB.
		if v := f.Value; v != "" && (isBlank(v[0]) || isBlank(v[len(v)-1])) {
			hb.bad = fmt.Sprintf("value of header %s starts or ends with whitespace", f.Name)
			return
		}
	}
	hb.fields = append(hb.fields, f)
}

// checkedBefore reports whether f equals the field an earlier block kept
// at the same place in fields' array, which only holds fields that passed
// onField's checks: a client repeats its fields block after block, decoded
// from the same HPACK table entries (so the comparison is mostly of
// pointers). A name is never empty once checked, unlike the array's unused
// slots.
func (hb *headerBlock) checkedBefore(f hpack.HeaderField) bool {
	i := len(hb.fields)
	if i == cap(hb.fields) || f.Name == "" {
		return false
	}
	last := hb.fields[:i+1][i]
	return last.Name == f.Name && last.Value == f.Value
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func validFieldName(name string) bool {
	if !httpguts.ValidHeaderFieldName(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// connectionSpecific reports fields HTTP/2 forbids (RFC 9113 8.2.2).
func connectionSpecific(name string) bool {
	switch name {
	case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// requestHead is the validated pseudo-header part of a request.
type requestHead struct {
	method, scheme, authority, path, protocol string
	contentLength                             int64
}

// parseRequestFields checks a request header block (RFC 9113 8.3.1).
func parseRequestFields(fields []hpack.HeaderField) (requestHead, error) {
	rh := requestHead{contentLength: -1}
	for _, f := range fields {
		if f.IsPseudo() {
			var dst *string
			switch f.Name {
			case ":method":
				dst = &rh.method
			case ":scheme":
				dst = &rh.scheme
			case ":authority":
				dst = &rh.authority
			case ":path":
				dst = &rh.path
			default:
				return rh, fmt.Errorf("pseudo-header %s not allowed in a request", f.Name)
			}
			if *dst != "" {
				return rh, fmt.Errorf("duplicate pseudo-header %s", f.Name)
			}
			if f.Value == "" {
				return rh, fmt.Errorf("empty pseudo-header %s", f.Name)
			}
			*dst = f.Value
			continue
		}
		if err := checkRegularField(f, &rh.contentLength); err != nil {
			return rh, err
		}
	}
	if rh.method == "" {
		return rh, fmt.Errorf("missing :method")
	}
	if rh.method == http.MethodConnect {
		if rh.authority == "" || rh.scheme != "" || rh.path != "" {
			return rh, fmt.Errorf("CONNECT needs :authority and no :scheme or :path")
		}
		return rh, nil
	}
	if rh.scheme == "" || rh.path == "" {
		return rh, fmt.Errorf("missing :scheme or :path")
	}
	return rh, nil
}

// checkRegularField applies the per-field rules shared by requests,
// responses and trailers, and records content-length.
func checkRegularField(f hpack.HeaderField, contentLength *int64) error {
	if connectionSpecific(f.Name) {
		return fmt.Errorf("connection-specific header %s", f.Name)
	}
	switch f.Name {
	case "te":
		if f.Value != "trailers" {
			return fmt.Errorf("te: %q, only \"trailers\" allowed", f.Value)
		}
	case "content-length":
		n, err := strconv.ParseUint(f.Value, 10, 63)
		if err != nil {
			return fmt.Errorf("content-length %q: not a number", f.Value)
		}
		if *contentLength >= 0 && *contentLength != int64(n) {
			return fmt.Errorf("conflicting content-length values")
		}
		*contentLength = int64(n)
	}
	return nil
}

// parseResponseStatus checks a response header block and returns :status.
func parseResponseFields(fields []hpack.HeaderField) (status int, contentLength int64, err error) {
	contentLength = -1
	for _, f := range fields {
		if f.IsPseudo() {
			if f.Name != ":status" || status != 0 {
				return 0, 0, fmt.Errorf("pseudo-header %s not allowed in a response", f.Name)
			}
			if len(f.Value) != 3 {
				return 0, 0, fmt.Errorf(":status %q is not three digits", f.Value)
			}
			n, perr := strconv.Atoi(f.Value)
			if perr != nil || n < 100 {
				return 0, 0, fmt.Errorf(":status %q is not a status code", f.Value)
			}
			status = n
			continue
		}
		if err := checkRegularField(f, &contentLength); err != nil {
			return 0, 0, err
		}
	}
	if status == 0 {
		return 0, 0, fmt.Errorf("missing :status")
	}
	return status, contentLength, nil
}

// parseTrailerFields checks a trailer block: no pseudo-headers.
func parseTrailerFields(fields []hpack.HeaderField) error {
	cl := int64(-1)
	for _, f := range fields {
		if f.IsPseudo() {
			return fmt.Errorf("pseudo-header %s in trailers", f.Name)
		}
		if err := checkRegularField(f, &cl); err != nil {
			return err
		}
	}
	return nil
}

// fieldsToHeader converts regular fields to an http.Header, joining cookie
// fields as RFC 9113 8.2.3 requires.
func fieldsToHeader(fields []hpack.HeaderField) http.Header {
	h := make(http.Header, len(fields))
	fillHeader(h, make([]string, 0, len(fields)), fields)
	return h
}

// fillHeader is fieldsToHeader into the empty h, its values appended to
// vals, which it returns.
func fillHeader(h http.Header, vals []string, fields []hpack.HeaderField) []string {
	// The values share one array; each key's slice is capped, so that an
	// append to it (a repeated name, or the handler's) copies.
	var cookies []string
	for _, f := range fields {
		if f.IsPseudo() {
			continue
		}
		if f.Name == "cookie" {
			cookies = append(cookies, f.Value)
			continue
		}
		k := canonicalKey(f.Name)
		if vv, ok := h[k]; ok {
			h[k] = append(vv, f.Value)
			continue
		}
		vals = append(vals, f.Value)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if len(cookies) > 0 {
		h["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	return vals
}

var commonCanonical, commonLower = func() (map[string]string, map[string]string) {
	names := []string{"accept", "accept-charset", "accept-encoding", "accept-language", "accept-ranges",
		"age", "authorization", "cache-control", "content-disposition", "content-encoding",
		"content-language", "content-length", "content-location", "content-range", "content-type",
		"cookie", "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
		"if-none-match", "if-range", "if-unmodified-since", "last-modified", "link", "location",
		"max-forwards", "origin", "priority", "range", "referer", "refresh", "retry-after", "server",
		"set-cookie", "strict-transport-security", "trailer", "user-agent", "vary", "via",
		"www-authenticate", "x-forwarded-for"}
	canon := make(map[string]string, len(names))
	lower := make(map[string]string, len(names))
	for _, n := range names {
		k := textproto.CanonicalMIMEHeaderKey(n)
		canon[n] = k
		lower[k] = n
	}
	return canon, lower
}()

func canonicalKey(lower string) string {
	if k, ok := commonCanonical[lower]; ok {
		return k
	}
	return textproto.CanonicalMIMEHeaderKey(lower)
}

func lowerKey(canon string) string {
	if k, ok := commonLower[canon]; ok {
		return k
	}
	return strings.ToLower(canon)
}

// appendHeaderFields appends h as HPACK fields, dropping fields HTTP/2
// forbids and any whose name or value is invalid.
func appendHeaderFields(fields []hpack.HeaderField, h http.Header, skip func(string) bool) []hpack.HeaderField {
	for k, vv := range h {
		name := lowerKey(k)
		if connectionSpecific(name) || !httpguts.ValidHeaderFieldName(name) || skip != nil && skip(name) {
			continue
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				continue
			}
			if name == "te" && v != "trailers" {
				continue
			}
			fields = append(fields, hpack.HeaderField{Name: name, Value: v, Sensitive: name == "authorization" || name == "cookie" && len(v) < 20})
		}
	}
	return fields
}

// statusTexts holds the :status values of the registered codes, by code:
// an array, not a map (a map lookup cost ~80 instructions a response).
var statusTexts = func() (a [600]string) {
	for code := 100; code < len(a); code++ {
		if http.StatusText(code) != "" {
			a[code] = strconv.Itoa(code)
		}
	}
	return a
}()

// statusText returns the :status value for code without allocating for
// registered codes.
func statusText(code int) string {
	if code >= 0 && code < len(statusTexts) && statusTexts[code] != "" {
		return statusTexts[code]
	}
	return strconv.Itoa(code)
}

// splitComma splits a comma-separated header value, trimming spaces.
func splitComma(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
