package smig

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/shunt-net/shunt/content"
)

// TestCancelMigratedStream cancels a download whose response moved to the
// pooled connection (as a browser navigating away does): reading must stop
// with the cancellation at once, and the server must stop sending on the
// new connection, not finish the object there.
func TestCancelMigratedStream(t *testing.T) {
	for _, p := range []Policy{{Kind: MigSW, Threshold: 256 << 10}, {Kind: MigCP, Threshold: 256 << 10}} {
		t.Run(p.String(), func(t *testing.T) {
			ts := startServer(t, p, true)
			tr := &Transport{AllowHTTP: true, Policy: p}
			defer tr.CloseIdleConnections()
			fetch(t, tr, ts.url+"/gen/10240", 10<<10)
			waitBound(t, tr)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const size = 64 << 20
			req, _ := http.NewRequestWithContext(ctx, "GET", ts.url+"/gen/67108864", nil)
			res, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			v := content.NewVerifier(0)
			// Read until the response has moved, and a little beyond.
			buf := make([]byte, 32<<10)
			for tr.Stats().Migrated.Load() == 0 || v.Offset() < 2<<20 {
				n, err := res.Body.Read(buf)
				if _, verr := v.Write(buf[:n]); verr != nil {
					t.Fatal(verr)
				}
				if err != nil {
					t.Fatalf("after %d bytes: %v", v.Offset(), err)
				}
			}
			cancel()
			done := make(chan error, 1)
			go func() {
				_, err := io.Copy(v, res.Body)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || v.Offset() >= size {
					t.Fatalf("read %d of %d bytes after the cancellation, then %v; want it to stop with context.Canceled", v.Offset(), size, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the body kept coming for 5 s after its request was cancelled (%d of %d bytes)", v.Offset(), size)
			}
		})
	}
}
