package fetch

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/shunt-net/shunt/hints"
	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/mph2"
	"github.com/shunt-net/shunt/replay"
	"github.com/shunt-net/shunt/replay/site"
)

// TestMultipathLoadsPage loads a Table IV page over two loopback paths with
// each preset and with MP-H2 (no policy): Run checks every object's length,
// the fetcher its bytes and digest; the byte counts add up to the page.
func TestMultipathLoadsPage(t *testing.T) {
	p := testpages.Load(t, "www.dmm.co.jp_.json")
	h, err := site.NewHandler(p)
	if err != nil {
		t.Fatal(err)
	}
	srv, conf := serve(t, h, true, false)
	var urgent int64
	for i, hn := range hints.FromPage(p) {
		if hn.Urgent() {
			urgent += p.Objects[i].Size
		}
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	// urgent-exp is urgent-fast with the fast path named: on loopback
	// either path may measure the lower RTT. capped-join runs its
	// connections with flow-control ends (16 KB first windows) over TLS.
	for _, name := range []string{"urgent-exp", "redundant-urgent", "tail", "single-cheap", "capped-join", "mph2"} {
		t.Run(name, func(t *testing.T) {
			var pol *hints.Policy
			switch name {
			case "mph2":
			case "urgent-exp":
				pol, err = hints.Parse(name, "urgent -> path=exp\n* -> path=cheap")
			default:
				pol, err = hints.Preset(name)
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewMultipath(MultipathConfig{Paths: []mph2.Path{{Name: "cheap", Dial: dial}, {Name: "exp", Dial: dial}}, Cost: []float64{0, 1},
				Policy: pol, Addr: srv.Addr, TLS: true, TLSConfig: conf, Page: p, Schedule: Browser})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := replay.Run(ctx, p, m, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := m.Stats()
			if err := m.Close(); err != nil {
				t.Error(err)
			}
			if res.Bytes != p.TotalSize() {
				t.Fatalf("%d bytes, want %d", res.Bytes, p.TotalSize())
			}
			used := s.Paths[0].Used + s.Paths[1].Used
			if used != p.TotalSize() {
				t.Errorf("paths used %d bytes, want the page's %d: %+v", used, p.TotalSize(), s)
			}
			if s.Paths[0].Received+s.Paths[1].Received < used {
				t.Errorf("connections received %d+%d bytes, less than used", s.Paths[0].Received, s.Paths[1].Received)
			}
			switch name {
			case "urgent-exp":
				if s.Paths[1].Used != urgent || s.Wasted != 0 || s.Redundant != 0 {
					t.Errorf("urgent %d bytes: %+v", urgent, s)
				}
			case "redundant-urgent":
				if s.Redundant == 0 {
					t.Errorf("no redundant request: %+v", s)
				}
			case "single-cheap":
				if s.Paths[1].Requests != 0 || s.Paths[0].Requests != len(p.Objects) {
					t.Errorf("%+v", s)
				}
			}
		})
	}
}
