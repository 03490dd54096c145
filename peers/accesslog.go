package peers

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// AccessFormat is nginx's log_format of Options.AccessLog: when the request
// ended (s since the epoch), its connection's serial number, status, URI
// with query, and the bytes of response body and of the whole response
// (headers included) nginx wrote to the socket: written, not delivered, so
// what a request sent into a connection that then died counts too.
const AccessFormat = "$msec $connection $status $request_uri $body_bytes_sent $bytes_sent"

// H2OAccessFormat is AccessFormat in h2o's access-log format, so one
// parser reads both servers' logs. h2o counts a response's body bytes as
// it writes its DATA frames to the connection, as nginx does; it logs no
// header bytes, so its last field repeats the body's.
const H2OAccessFormat = "%{sec}t.%{msec_frac}t %{connection-id}x %s %U%q %b %b"

// Access is one line of an AccessFormat log.
type Access struct {
	End        float64 // s since the epoch
	Conn       int64
	Status     int
	URI        string
	Body, Sent int64 // h2o's Sent is Body (H2OAccessFormat)
}

// ReadAccessLog reads an AccessFormat log; a line still being written (no
// newline yet) is left for the next read.
func ReadAccessLog(file string) ([]Access, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParseAccessLog(b)
}

// ParseAccessLog parses the complete lines of an AccessFormat log.
func ParseAccessLog(b []byte) ([]Access, error) {
	var out []Access
	for i := 1; ; i++ {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return out, nil
		}
		b = rest
		f := bytes.Fields(line)
		if len(f) != 6 {
			return nil, fmt.Errorf("access log line %d: %d fields, want 6 (%s)", i, len(f), AccessFormat)
		}
		var a Access
		var errs [5]error
		a.End, errs[0] = strconv.ParseFloat(string(f[0]), 64)
		a.Conn, errs[1] = strconv.ParseInt(string(f[1]), 10, 64)
		a.Status, errs[2] = strconv.Atoi(string(f[2]))
		a.URI = string(f[3])
		a.Body, errs[3] = strconv.ParseInt(string(f[4]), 10, 64)
		a.Sent, errs[4] = strconv.ParseInt(string(f[5]), 10, 64)
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("access log line %d: %v", i, err)
			}
		}
		out = append(out, a)
	}
}
