package origin

import (
	"fmt"
	"io"
	"net/http"

	"github.com/shunt-net/shunt/content"
)

// Fetch sends req with rt and checks the whole body, byte for byte,
// against the generated object of want bytes (what every origin server
// serves at ObjectPath), calling progress (if set) with the byte count as
// it arrives. It returns the response, its body read and closed, once the
// last byte is in.
func Fetch(rt http.RoundTripper, req *http.Request, want int64, progress func(int64)) (*http.Response, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp, fmt.Errorf("GET %s: status %s", req.URL.Path, resp.Status)
	}
	v := content.NewVerifier(0)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := v.Write(buf[:n]); err != nil {
				return resp, fmt.Errorf("GET %s: %w", req.URL.Path, err)
			}
			if progress != nil {
				progress(v.Offset())
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return resp, fmt.Errorf("GET %s after %d bytes: %w", req.URL.Path, v.Offset(), rerr)
		}
	}
	if v.Offset() != want {
		return resp, fmt.Errorf("GET %s: %d bytes, want %d", req.URL.Path, v.Offset(), want)
	}
	return resp, nil
}
