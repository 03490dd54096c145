package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shunt-net/shunt/content"
	"github.com/shunt-net/shunt/internal/wiretap"
	"github.com/shunt-net/shunt/mph2"
)

// A path's budget holds over the proxy's life, not per response: split
// responses one after another and at once, a small one, a caller's own
// Range (passed through) and a CONNECT tunnel together never put more than
// the budget on the budgeted path, counted as DATA on the wire. The
// budgeted path is the first, so whatever ignored its budget would land on
// it; every body is checked.
func TestProxyBudget(t *testing.T) {
	plain, tlsOrigin := origin(t, false), origin(t, true)
	const budget = 1 << 20
	const size = 2 << 20
	var d net.Dialer
	var tunnels atomic.Int32 // CONNECTs dialed on the budgeted path
	lteDial, onWire := wiretap.Dial(func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == tlsOrigin {
			tunnels.Add(1)
		}
		return d.DialContext(ctx, network, addr)
	})
	wifi := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &pacedConn{Conn: c, rate: 16 << 20}, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{Listener: ln, ErrorLog: discardLog(),
		Paths: []mph2.Path{{Name: "lte", Dial: lteDial, Budget: budget}, {Name: "wifi", Dial: wifi}}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(c *http.Client, url string, want int64) error {
		status, n, sum, err := fetch(t, c, url)
		if err != nil || status != 200 || n != want || sum != content.Digest(want) {
			return fmt.Errorf("%s: status %d, %d bytes (%v), SHA-256 ok %v; want 200 and %d bytes", url, status, n, err, sum == content.Digest(want), want)
		}
		return nil
	}
	big := fmt.Sprintf("http://%s/gen/%d", plain, size)
	for range 3 {
		if err := check(h1Client(r.Addr), big, size); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = check(h2cClient(r.Addr), big, size) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := check(h1Client(r.Addr), fmt.Sprintf("http://%s/gen/%d", plain, 1000), 1000); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", big, nil)
	req.Header.Set("Range", "bytes=0-99999")
	res, err := h1Client(r.Addr).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 206 {
		t.Fatalf("Range through the proxy: status %d", res.StatusCode)
	}
	if err := check(h1Client(r.Addr), strings.Replace(big, "http://"+plain, "https://"+tlsOrigin, 1), size); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	wire := onWire()
	t.Logf("lte: %d DATA bytes on the wire over 8 responses (budget %d), %d tunnels", wire, budget, tunnels.Load())
	if wire > budget {
		t.Fatalf("lte received %d bytes on the wire over the proxy's responses, over its budget %d", wire, budget)
	}
	if wire < budget/2 {
		t.Errorf("lte received %d bytes, want most of its budget %d used", wire, budget)
	}
	if tunnels.Load() != 0 {
		t.Errorf("%d CONNECT tunnels dialed on the budgeted path", tunnels.Load())
	}
}
