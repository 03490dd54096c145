package h2

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/http2"
)

// ParseSettingsPayload parses a SETTINGS frame payload, as carried base64url
// in the HTTP2-Settings header of an h2c upgrade (RFC 7540 3.2.1).
func ParseSettingsPayload(p []byte) ([]http2.Setting, error) {
	if len(p)%6 != 0 {
		return nil, fmt.Errorf("settings payload of %d bytes is not a multiple of 6", len(p))
	}
	out := make([]http2.Setting, 0, len(p)/6)
	for ; len(p) > 0; p = p[6:] {
		s := http2.Setting{ID: http2.SettingID(binary.BigEndian.Uint16(p)), Val: binary.BigEndian.Uint32(p[2:])}
		if err := s.Valid(); err != nil {
			return nil, fmt.Errorf("setting %v: %w", s, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// AppendSettingsPayload appends settings in SETTINGS payload form.
func AppendSettingsPayload(b []byte, settings ...http2.Setting) []byte {
	for _, s := range settings {
		b = binary.BigEndian.AppendUint16(b, uint16(s.ID))
		b = binary.BigEndian.AppendUint32(b, s.Val)
	}
	return b
}
