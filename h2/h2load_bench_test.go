package h2

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// BenchmarkH2load drives the server over loopback h2c with h2load (-c 10
// -m 10, as the comparison with nginx and h2o) and reports req/s.
// Run with -benchtime 1x; each iteration is one bounded h2load run.
func BenchmarkH2load(b *testing.B) {
	bin, err := exec.LookPath("h2load")
	if err != nil {
		b.Skip("h2load not installed (apt install nghttp2-client)")
	}
	for _, size := range []string{"16384", "1048576"} {
		b.Run(size, func(b *testing.B) {
			ts := startServer(b, genHandler(), Config{}, false)
			n := "50000"
			if size != "16384" {
				n = "2000"
			}
			for i := 0; i < b.N; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				out, _ := exec.CommandContext(ctx, bin, "-n", n, "-c", "10", "-m", "10", "http://"+ts.addr+"/gen/"+size).CombinedOutput()
				cancel()
				ok := regexp.MustCompile(`(\d+) succeeded`).FindSubmatch(out)
				rps := regexp.MustCompile(`finished in [^,]+, ([\d.]+) req/s, ([\d.]+)([KMG]?B)/s`).FindSubmatch(out)
				if ok == nil || rps == nil || string(ok[1]) != n {
					b.Fatalf("h2load did not complete all %s requests:\n%s", n, out)
				}
				v, _ := strconv.ParseFloat(string(rps[1]), 64)
				b.ReportMetric(v, "req/s")
			}
		})
	}
}
