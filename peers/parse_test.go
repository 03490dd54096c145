package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The testdata files are real outputs captured on Debian 12 (nghttp2 1.52.0,
// h2spec 2.2.1, nginx 1.22.1); see the file names for what produced them.

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseH2load(t *testing.T) {
	for _, tc := range []struct {
		file string
		want LoadResult
	}{
		{"h2load-nghttpd-ok.txt", LoadResult{
			Duration: 69420 * time.Microsecond, ReqPerSec: 28811.80, BytesPerSec: 440.47 * (1 << 20),
			Total: 2000, Started: 2000, Done: 2000, Succeeded: 2000,
			Status: [4]int{2000, 0, 0, 0}, TrafficBytes: 32060970, DataBytes: 32000000,
		}},
		{"h2load-nginx-404.txt", LoadResult{
			Total: 100, Started: 100, Done: 100, Failed: 100, Status: [4]int{0, 0, 100, 0},
		}},
		{"h2load-refused.txt", LoadResult{
			Duration: 560 * time.Microsecond, Total: 100, Failed: 100, Errored: 100,
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseH2load(readTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if tc.file == "h2load-nginx-404.txt" {
				// Timing fields of this capture are not pinned; the counts are what matter.
				got.Duration, got.ReqPerSec, got.BytesPerSec, got.TrafficBytes, got.DataBytes = 0, 0, 0, 0, 0
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseH2loadRejectsTruncated(t *testing.T) {
	full := string(readTestdata(t, "h2load-nghttpd-ok.txt"))
	for _, drop := range []string{"finished in", "requests:", "status codes:", "traffic:"} {
		var kept []string
		for _, l := range strings.Split(full, "\n") {
			if !strings.HasPrefix(l, drop) {
				kept = append(kept, l)
			}
		}
		if _, err := ParseH2load([]byte(strings.Join(kept, "\n"))); err == nil || !strings.Contains(err.Error(), drop) {
			t.Errorf("without %q: err = %v, want one naming the line", drop, err)
		}
	}
}

func TestParseH2spec(t *testing.T) {
	got, err := ParseH2spec(readTestdata(t, "h2spec-nghttpd.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := ConformanceResult{Tests: 146, Passed: 145, Failed: 1, Failures: []string{"http2/5.1.1/2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nghttpd: got %+v, want %+v", got, want)
	}

	got, err = ParseH2spec(readTestdata(t, "h2spec-nginx-tls.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Tests != 146 || got.Passed != 119 || got.Skipped != 0 || got.Failed != 27 {
		t.Errorf("nginx summary: got %+v, want 146/119/0/27", got)
	}
	if len(got.Failures) != got.Failed {
		t.Errorf("nginx: %d failure IDs for %d failures: %v", len(got.Failures), got.Failed, got.Failures)
	}
	for _, id := range []string{"http2/4.2/2", "http2/6.9.1/3", "http2/8.1.2.6/2", "hpack/4.2/1", "hpack/5.2/1"} {
		if !slices.Contains(got.Failures, id) {
			t.Errorf("nginx: failure %s missing from %v", id, got.Failures)
		}
	}

	if _, err := ParseH2spec([]byte("Generic tests for HTTP/2 server\n")); err == nil {
		t.Error("a report without its summary parsed")
	}
}

func TestParseHAR(t *testing.T) {
	got, err := ParseHAR(readTestdata(t, "nghttp-range.har"))
	if err != nil {
		t.Fatal(err)
	}
	// nghttpd ignores Range: a 200 with the whole object.
	want := Response{Status: 200, Proto: "2", Size: 16000}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := ParseHAR([]byte(`{"log":{"entries":[]}}`)); err == nil {
		t.Error("a HAR without entries parsed")
	}
}

func TestParseCurlWriteOut(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Response
		wantErr bool
	}{
		{in: "206 2 100 bytes 100-199/16000\n", want: Response{206, "2", 100, "bytes 100-199/16000"}},
		{in: "200 2 16000 \n", want: Response{200, "2", 16000, ""}},
		{in: "200 1.1 5\n", want: Response{200, "1.1", 5, ""}},
		{in: "000 0 0 \n", want: Response{0, "0", 0, ""}},
		{in: "200 2\n", wantErr: true},
		{in: "ok 2 5 \n", wantErr: true},
		{in: "200 2 -1 \n", wantErr: true},
	} {
		got, err := ParseCurlWriteOut([]byte(tc.in))
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// The fuzz targets look for panics and hangs on arbitrary tool output.

func FuzzParseH2load(f *testing.F) {
	for _, n := range []string{"h2load-nghttpd-ok.txt", "h2load-nginx-404.txt", "h2load-refused.txt"} {
		f.Add(readTestdata(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) { ParseH2load(b) })
}

func FuzzParseH2spec(f *testing.F) {
	f.Add(readTestdata(f, "h2spec-nghttpd.txt"))
	f.Add(readTestdata(f, "h2spec-nginx-tls.txt"))
	f.Fuzz(func(t *testing.T, b []byte) { ParseH2spec(b) })
}

func FuzzParseHAR(f *testing.F) {
	f.Add(readTestdata(f, "nghttp-range.har"))
	f.Fuzz(func(t *testing.T, b []byte) { ParseHAR(b) })
}

func FuzzParseCurlWriteOut(f *testing.F) {
	f.Add([]byte("206 2 100 bytes 100-199/16000\n"))
	f.Add([]byte("200 2 16000 \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseCurlWriteOut(b); err == nil && r.Size < 0 {
			t.Errorf("negative size from %q", b)
		}
	})
}

func TestRangeOf(t *testing.T) {
	obj := []byte("0123456789")
	for _, tc := range []struct{ r, body, cr string }{
		{"0-0", "0", "bytes 0-0/10"},
		{"2-5", "2345", "bytes 2-5/10"},
		{"7-", "789", "bytes 7-9/10"},
		{"-3", "789", "bytes 7-9/10"},
		{"-30", "0123456789", "bytes 0-9/10"},
		{"8-100", "89", "bytes 8-9/10"},
	} {
		body, cr, err := RangeOf(obj, tc.r)
		if err != nil || string(body) != tc.body || cr != tc.cr {
			t.Errorf("%q: got %q, %q, %v; want %q, %q", tc.r, body, cr, err, tc.body, tc.cr)
		}
	}
	for _, r := range []string{"", "5", "-", "5-2", "10-", "-0", "x-1", "1-y"} {
		if _, _, err := RangeOf(obj, r); err == nil {
			t.Errorf("%q: no error", r)
		}
	}
}

func TestVerifyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(p, []byte("hello")); err != nil {
		t.Errorf("same content: %v", err)
	}
	if err := VerifyFile(p, []byte("hellO")); err == nil || !strings.Contains(err.Error(), "byte 4") {
		t.Errorf("different content: err = %v, want one naming byte 4", err)
	}
	if err := VerifyFile(p, []byte("hell")); err == nil {
		t.Error("different length: no error")
	}
}

func TestParseH2loadLog(t *testing.T) {
	got, err := ParseH2loadLog(readTestdata(t, "h2load-log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var ok, missing int
	for _, r := range got {
		switch r.Status {
		case 200:
			ok++
		case 404:
			missing++
		}
		if r.Time <= 0 || r.Start.Year() != 2026 {
			t.Errorf("%+v: want a positive time and a start in 2026", r)
		}
	}
	// h2load -n 20 over one good and one missing URL.
	if ok != 10 || missing != 10 {
		t.Errorf("%d 200s and %d 404s, want 10 and 10", ok, missing)
	}
	if want := (LoggedRequest{Start: time.UnixMicro(1795616869444766), Status: 404, Time: 2009 * time.Microsecond}); got[0] != want {
		t.Errorf("first line %+v, want %+v", got[0], want)
	}
	for _, bad := range []string{"1\t200\n", "1\t200\tx\n", "-1\t200\t5\n", "1\t200\t-5\n", "a\tb\tc\n"} {
		if _, err := ParseH2loadLog([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// formatH2loadLog writes requests as h2load's --log-file does.
func formatH2loadLog(rs []LoggedRequest) []byte {
	var b []byte
	for _, r := range rs {
		b = fmt.Appendf(b, "%d\t%d\t%d\n", r.Start.UnixMicro(), r.Status, r.Time.Microseconds())
	}
	return b
}

func FuzzParseH2loadLog(f *testing.F) {
	f.Add(readTestdata(f, "h2load-log.txt"))
	f.Add([]byte("1\t-1\t0\textra\n"))
	// Round trip: what parsed prints back as h2load would and parses to
	// the same requests.
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseH2loadLog, formatH2loadLog) })
}

// roundTrip checks that what parse makes of b, printed by format, parses
// to the same values.
func roundTrip[T comparable](t *testing.T, b []byte, parse func([]byte) ([]T, error), format func([]T) []byte) {
	vs, err := parse(b)
	if err != nil {
		return
	}
	again, err := parse(format(vs))
	if err != nil || !slices.Equal(again, vs) {
		t.Errorf("%q: round trip gave %v, %v; want %v", b, again, err, vs)
	}
}

// procStat is a /proc/PID/stat line whose command name holds a space and
// parentheses.
const procStat = "1234 (a b) c)) S 1 1234 1234 0 -1 4194560 500 0 0 0 731 95 0 0 20 0 3 0 100 1000000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"

func TestParseProc(t *testing.T) {
	u, s, err := ParseStatCPU([]byte(procStat))
	if err != nil || u != 731 || s != 95 {
		t.Errorf("ParseStatCPU = %d, %d, %v; want 731, 95", u, s, err)
	}
	for _, bad := range []string{"1 (x S 1 2", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 1 1 0 0 0 u 95 0", "1 (x) S 1 1 1 0 -1 1 1 0 0 0 7 -9 0"} {
		if _, _, err := ParseStatCPU([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	got, err := ParseVmRSS([]byte("Name:\tshunt\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nRssAnon:\t 1000 kB\n"))
	if err != nil || got != 1234*1024 {
		t.Errorf("ParseVmRSS = %d, %v; want %d", got, err, 1234*1024)
	}
	for _, bad := range []string{"Name:\tkthreadd\n", "VmRSS:\t12 MB\n", "VmRSS:\t-3 kB\n"} {
		if _, err := ParseVmRSS([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// This process: at least 1 MB resident, and some CPU used by now.
	if n, err := TreeRSS(os.Getpid()); err != nil || n < 1<<20 {
		t.Errorf("TreeRSS(self) = %d, %v", n, err)
	}
	if _, err := TreeCPU(os.Getpid()); err != nil {
		t.Errorf("TreeCPU(self): %v", err)
	}
}

func FuzzParseStatCPU(f *testing.F) {
	f.Add([]byte(procStat))
	f.Fuzz(func(t *testing.T, b []byte) {
		if u, s, err := ParseStatCPU(b); err == nil && (u < 0 || s < 0) {
			t.Errorf("%q: negative times %d, %d", b, u, s)
		}
	})
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add([]byte("Name:\tshunt\nVmRSS:\t    1234 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := ParseVmRSS(b); err == nil && n < 0 {
			t.Errorf("%q: negative size %d", b, n)
		}
	})
}

// formatSockets writes sockets as the kernel writes /proc/net/tcp (tcp4_seq_show).
func formatSockets(ss []Socket) []byte {
	b := []byte("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	for i, s := range ss {
		b = fmt.Appendf(b, "%4d: 0100007F:%04X 0100007F:%04X %02X 00000000:00000000 00:00000000 00000000     0        0 %d 1 0000000099862f8a 100 0 0 10 0\n",
			i, s.LocalPort, s.RemotePort, s.State, s.Inode)
	}
	return b
}

// Every state and port survives a round trip through the kernel's format;
// the captured tables parse to their listeners and a connection each side.
func TestParseSockets(t *testing.T) {
	want := []Socket{{8000, 0, tcpListen, 1605}, {8000, 41234, 1, 13587}, {41234, 8000, 1, 13588},
		{8001, 50000, 8, 20000}, {50000, 8001, 5, 20001}, {8002, 50001, 9, 0}, {50002, 8002, tcpTimeWait, 0}, {65535, 1, 11, 1<<64 - 1}}
	got, err := ParseSockets(formatSockets(want))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("round trip: %v, %v; want %v", got, err, want)
	}
	got, err = ParseSockets(readTestdata(t, "proc-net-tcp.txt"))
	if want := []Socket{{2024, 0, tcpListen, 1605}, {18099, 0, tcpListen, 13587}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("tcp: %v, %v; want %v", got, err, want)
	}
	got, err = ParseSockets(readTestdata(t, "proc-net-tcp6.txt"))
	if want := []Socket{{18098, 0, tcpListen, 13601}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("tcp6: %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{
		"   0: 0100007F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 13587 1\n",
		"   0: 0100007F:46B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 x 1\n",
		"   0: 0100007F:46B3 00000000:0000 0A\n",
	} {
		if _, err := ParseSockets([]byte("hdr\n" + bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for _, bad := range []string{"0100007F:46B3 0100007F 01", "0100007F:46B3 0100007F:1 0x1", "0100007F:46B3 0100007F:1 100"} {
		line := "   0: " + bad + " 00000000:00000000 00:00000000 00000000     0        0 1 1\n"
		if _, err := ParseSockets([]byte("hdr\n" + line)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseSockets(f *testing.F) {
	f.Add(readTestdata(f, "proc-net-tcp.txt"))
	f.Add(readTestdata(f, "proc-net-tcp6.txt"))
	f.Add(formatSockets([]Socket{{8000, 41234, 1, 13587}, {41234, 8000, 6, 0}}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseSockets, formatSockets) })
}
