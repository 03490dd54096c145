package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Fetch is one download by curl or nghttp.
type Fetch struct {
	URL string
	// Range is a byte range as in "A-B", "A-" or "-N"; empty fetches the
	// whole object.
	Range string
	// Upgrade, for http:// URLs, starts h2c with an HTTP/1.1 Upgrade instead
	// of prior knowledge.
	Upgrade bool
	// Out receives the body.
	Out string
	// Prefix is prepended to the client's argv (ip netns exec NS).
	Prefix []string
}

// Response is what a client tool reports about one download.
type Response struct {
	Status       int
	Proto        string // HTTP version as the tool reports it: "2" for HTTP/2
	Size         int64  // body bytes received
	ContentRange string // the Content-Range header, if any
}

// Curl downloads f with curl over HTTP/2: ALPN h2 for https (certificates are
// not verified: peers use self-signed ones), prior knowledge or Upgrade for
// http. It fails unless curl exits 0; the caller checks the status.
func Curl(ctx context.Context, f Fetch) (Response, error) {
	bin, err := lookTool("curl")
	if err != nil {
		return Response{}, err
	}
	args := []string{bin, "-sS", "--insecure", "-o", f.Out,
		"-w", "%{http_code} %{http_version} %{size_download} %header{content-range}\n"}
	switch {
	case strings.HasPrefix(f.URL, "https://"), f.Upgrade:
		args = append(args, "--http2")
	default:
		args = append(args, "--http2-prior-knowledge")
	}
	if f.Range != "" {
		args = append(args, "--range", f.Range)
	}
	args = append(args, f.URL)
	var out bytes.Buffer
	if err := run(ctx, f.Prefix, args, &out); err != nil {
		return Response{}, err
	}
	r, err := ParseCurlWriteOut(out.Bytes())
	if err != nil {
		return Response{}, fmt.Errorf("curl %s: %v", f.URL, err)
	}
	return r, nil
}

// ParseCurlWriteOut parses the -w line Curl asks for:
// "CODE VERSION SIZE CONTENT-RANGE...".
func ParseCurlWriteOut(b []byte) (Response, error) {
	line := strings.TrimRight(string(b), "\r\n")
	f := strings.SplitN(line, " ", 4)
	if len(f) < 3 {
		return Response{}, fmt.Errorf("write-out %q: want CODE VERSION SIZE [CONTENT-RANGE]", line)
	}
	var r Response
	var err error
	if r.Status, err = strconv.Atoi(f[0]); err != nil {
		return Response{}, fmt.Errorf("write-out %q: status: %v", line, err)
	}
	r.Proto = f[1]
	if r.Size, err = strconv.ParseInt(f[2], 10, 64); err != nil || r.Size < 0 {
		return Response{}, fmt.Errorf("write-out %q: size %q is not a byte count", line, f[2])
	}
	if len(f) == 4 {
		r.ContentRange = strings.TrimSpace(f[3])
	}
	return r, nil
}

// Nghttp downloads f with nghttp: h2 over TLS for https, prior knowledge or
// Upgrade (-u) for http. Status and headers come from its HAR output.
func Nghttp(ctx context.Context, f Fetch) (Response, error) {
	bin, err := lookTool("nghttp")
	if err != nil {
		return Response{}, err
	}
	har, err := os.CreateTemp("", "shunt-nghttp-*.har")
	if err != nil {
		return Response{}, fmt.Errorf("nghttp: %v", err)
	}
	har.Close()
	defer os.Remove(har.Name())
	args := []string{bin, "--har", har.Name()}
	if f.Upgrade {
		args = append(args, "--upgrade")
	}
	if f.Range != "" {
		args = append(args, "--header", "range: bytes="+f.Range)
	}
	args = append(args, f.URL)
	body, err := os.Create(f.Out)
	if err != nil {
		return Response{}, fmt.Errorf("nghttp: %v", err)
	}
	runErr := run(ctx, f.Prefix, args, body)
	if err := body.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("nghttp: %v", err)
	}
	if runErr != nil {
		return Response{}, runErr
	}
	b, err := os.ReadFile(har.Name())
	if err != nil {
		return Response{}, fmt.Errorf("nghttp %s: %v", f.URL, err)
	}
	r, err := ParseHAR(b)
	if err != nil {
		return Response{}, fmt.Errorf("nghttp %s: HAR: %v", f.URL, err)
	}
	if fi, err := os.Stat(f.Out); err == nil {
		r.Size = fi.Size() // what was written is what callers verify
	}
	return r, nil
}

// ParseHAR returns the response of the single entry in a HAR log as nghttp
// writes it.
func ParseHAR(b []byte) (Response, error) {
	var har struct {
		Log struct {
			Entries []struct {
				Response struct {
					Status      int    `json:"status"`
					HTTPVersion string `json:"httpVersion"`
					Headers     []struct {
						Name  string `json:"name"`
						Value string `json:"value"`
					} `json:"headers"`
					Content struct {
						Size int64 `json:"size"`
					} `json:"content"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(b, &har); err != nil {
		return Response{}, err
	}
	if n := len(har.Log.Entries); n != 1 {
		return Response{}, fmt.Errorf("%d entries, want 1", n)
	}
	resp := har.Log.Entries[0].Response
	r := Response{Status: resp.Status, Size: resp.Content.Size,
		Proto: strings.TrimSuffix(strings.TrimPrefix(resp.HTTPVersion, "HTTP/"), ".0")}
	for _, h := range resp.Headers {
		if strings.EqualFold(h.Name, "content-range") {
			r.ContentRange = h.Value
		}
	}
	return r, nil
}

// run runs argv behind prefix, with stdout to w; a failure carries stderr.
func run(ctx context.Context, prefix, argv []string, w io.Writer) error {
	_, err := runCPU(ctx, prefix, argv, w)
	return err
}

// runCPU is run, returning the user and system CPU time the command used
// (its rusage: a prefix such as ip netns exec execs it in place).
func runCPU(ctx context.Context, prefix, argv []string, w io.Writer) (time.Duration, error) {
	full := append(append([]string{}, prefix...), argv...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", strings.Join(full, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}
