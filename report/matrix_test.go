package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

// The shipped h2load matrix's report: matrix.md has a row per object and
// protocol with every metric and the ratios to h2o and nginx under the same
// load, then the ratios per repetition with the count of repetitions each
// protocol did better in, and the order each repetition ran the servers in;
// summary.json the same ratios. A server whose CPU time rounds to 0 (too
// short a run for /proc's 10 ms ticks) still plots.
func TestH2loadMatrix(t *testing.T) {
	rate := map[string]float64{"shunt": 50_000, "h2o": 100_000, "nginx": 40_000}
	dir, sum := shippedReport(t, "h2load", func(r *experiment.Run, rec *experiment.Record) {
		server := r.Protocol.Params["server"]
		v := rate[server] * (1 + 0.01*float64(r.Rep))
		if r.Protocol.Params["tls"] == "true" {
			v /= 2 // the TLS peers' ratios must not mix with h2c's
		}
		cpu := 2e6 / v
		if server == "h2o" && r.Object.Name == "1KB" {
			cpu = 0
		}
		rec.Metrics = map[string]float64{"req_per_s": v, "mb_per_s": v / 100, "cpu_per_req_us": cpu,
			"latency_p50_ms": 1e5 / v, "latency_p99_ms": 1e6 / v, "rss_kb": 20_000}
	})
	md, err := os.ReadFile(filepath.Join(dir, MatrixFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| object | protocol | runs | req_per_s (req/s) | mb_per_s (MB/s) | cpu_per_req_us (µs) | latency_p50_ms (ms) | latency_p99_ms (ms) | rss_kb (KB) | req_per_s / h2o | req_per_s / nginx | cpu_per_req_us / h2o | cpu_per_req_us / nginx | latency_p99_ms / h2o | latency_p99_ms / nginx |",
		"| 16KB | shunt-tls-c100 | 3 | 25250 [25125-25375] | 252.5 [251.2-253.8] | 79.2 [78.8-79.6] | 3.96 [3.94-3.98] | 39.6 [39.4-39.8] | 20000 [20000-20000] | 0.50 | 1.25 | 2.00 | 0.80 | 2.00 | 0.80 |",
		// No ratio to a median of 0.
		"| 1KB | shunt-h2c-c10 | 3 | 50500 [50250-50750] | 505.0 [502.5-507.5] | 39.6 [39.4-39.8] | 1.98 [1.97-1.99] | 19.8 [19.7-19.9] | 20000 [20000-20000] | 0.50 | 1.25 |  | 0.80 | 2.00 | 0.80 |",
		"| 1MB | h2o-tls-c10 | 3 |",
		"| 16KB | shunt-tls-c100 | 0.50 [0.50-0.50] 0/3 better | 1.25 [1.25-1.25] 3/3 better | 2.00 [2.00-2.00] 0/3 better | 0.80 [0.80-0.80] 3/3 better | 2.00 [2.00-2.00] 0/3 better | 0.80 [0.80-0.80] 3/3 better |",
		"- repetition 0: server shunt, h2o, nginx in every group of 3\n- repetition 1: server h2o, nginx, shunt in every group of 3\n- repetition 2: server nginx, shunt, h2o in every group of 3\n",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("matrix.md lacks %q:\n%s", want, md)
		}
	}
	whole, perRep, _ := strings.Cut(string(md), "per repetition")
	if n := strings.Count(whole, "\n| "); n != 1+3*12 {
		t.Errorf("%d table lines, want a header and 36 rows:\n%s", n, md)
	}
	if n := strings.Count(perRep, "\n| "); n != 1+3*12 {
		t.Errorf("%d lines in the table per repetition, want a header and 36 rows:\n%s", n, md)
	}
	// Per load, object and metric: shunt against h2o and nginx, h2o
	// against nginx and back; less the 1 KB CPU ratios to h2o's 0 (shunt's
	// and nginx's, 4 loads).
	if want := 4*3*3*4 - 4*2; len(sum.Ratios) != want {
		t.Errorf("%d ratios, want %d", len(sum.Ratios), want)
	}
}
