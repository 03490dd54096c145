package h2

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// BenchmarkGet measures this package's client against its server over
// loopback h2c: one connection, requests in parallel (GOMAXPROCS x 10).
func BenchmarkGet(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			ts := startServer(b, genHandler(), Config{}, false)
			tr := &Transport{AllowHTTP: true}
			defer tr.CloseIdleConnections()
			url := ts.url(fmt.Sprintf("/gen/%d", size))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.SetParallelism(10)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 32<<10)
				for pb.Next() {
					req, _ := http.NewRequest("GET", url, nil)
					res, err := tr.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					n, err := io.CopyBuffer(io.Discard, res.Body, buf)
					res.Body.Close()
					if err != nil || n != int64(size) {
						b.Errorf("read %d bytes, %v", n, err)
						return
					}
				}
			})
		})
	}
}
