package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// h2cUpgrade reports whether r asks to switch to h2c (RFC 7540 section 3.2) in
// a way this server accepts, and returns the decoded HTTP2-Settings payload.
// Requests with a body are not upgraded: they are served over HTTP/1.1, which
// the RFC allows and which spares buffering the body for stream 1.
// A malformed HTTP2-Settings value is an error (answered 400).
func h2cUpgrade(r *http.Request) (settings []byte, ok bool, err error) {
	if !r.ProtoAtLeast(1, 1) || r.ProtoMajor != 1 ||
		!httpguts.HeaderValuesContainsToken(r.Header["Upgrade"], "h2c") ||
		!httpguts.HeaderValuesContainsToken(r.Header["Connection"], "Upgrade") ||
		!httpguts.HeaderValuesContainsToken(r.Header["Connection"], "HTTP2-Settings") {
		return nil, false, nil
	}
	// The RFC forbids upgrading without exactly one HTTP2-Settings field.
	if len(r.Header.Values("HTTP2-Settings")) != 1 {
		return nil, false, nil
	}
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		return nil, false, nil
	}
	settings, err = decodeSettings(r.Header.Get("HTTP2-Settings"))
	if err != nil {
		return nil, false, err
	}
	return settings, true, nil
}

// decodeSettings decodes an HTTP2-Settings header: base64url, padding
// optional, holding whole 6-byte settings.
func decodeSettings(v string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
	if err != nil {
		return nil, fmt.Errorf("HTTP2-Settings %q: %w", v, err)
	}
	if len(b)%6 != 0 {
		return nil, fmt.Errorf("HTTP2-Settings %q: %d bytes is not a whole number of settings", v, len(b))
	}
	return b, nil
}

// switchingProtocols is the 101 answer to an accepted h2c upgrade.
const switchingProtocols = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
