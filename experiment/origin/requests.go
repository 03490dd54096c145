package origin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/shunt-net/shunt/peers"
)

// Requests returns the lines of the server's access log (Extras.AccessLog)
// whose URI ends in suffix, once the requests of a finished run are logged:
// nginx and h2o log a request when it ends, and one whose connection died
// with its path would end only at a retransmission timeout or the server's
// send timeout (nginx 60 s), so the server's connections still open are cut
// first (ss -K). Call it only when no client of the server is running: it
// ends their requests.
func (s *Server) Requests(ctx context.Context, suffix string) ([]peers.Access, error) {
	if s.accessLog == "" {
		return nil, errors.New("the server keeps no access log")
	}
	_, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return nil, err
	}
	cut := s.host.Command(ctx, "ss", "-K", "-tn", "state", "established", "state", "close-wait", "sport", "=", ":"+port)
	if out, err := cut.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(cut.Args, " "), err, out)
	}
	// The server logs the requests of the cut connections as it sees them
	// fail: read until the log has not grown for settle.
	const settle, bound = 300 * time.Millisecond, 5 * time.Second
	var lines []peers.Access
	for grew, deadline := time.Now(), time.Now().Add(bound); time.Since(grew) < settle; time.Sleep(50 * time.Millisecond) {
		all, err := peers.ReadAccessLog(s.accessLog)
		if err != nil {
			return nil, err
		}
		if len(all) != len(lines) {
			lines, grew = all, time.Now()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the access log still growing after %v", bound)
		}
	}
	var out []peers.Access
	for _, a := range lines {
		if strings.HasSuffix(a.URI, suffix) {
			out = append(out, a)
		}
	}
	return out, nil
}
