package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shunt-net/shunt/peers"
)

// object is something shunt serves and the bytes it must send for it.
type object struct {
	path string
	body []byte
}

// fetchCase is one download and what it must return.
type fetchCase struct {
	obj     object
	rng     string
	upgrade bool
}

// check runs one download with fetch and checks status, protocol,
// Content-Range and the body (length and SHA-256).
func (c fetchCase) check(t *testing.T, client string, fetch func(context.Context, peers.Fetch) (peers.Response, error), base string) {
	t.Helper()
	f := peers.Fetch{URL: base + c.obj.path, Range: c.rng, Upgrade: c.upgrade, Out: filepath.Join(t.TempDir(), "body")}
	resp, err := fetch(timeout(t, time.Minute), f)
	if err != nil {
		t.Errorf("%s: %v", client, err)
		return
	}
	want, wantCR, wantStatus := c.obj.body, "", 200
	if c.rng != "" {
		if want, wantCR, err = peers.RangeOf(c.obj.body, c.rng); err != nil {
			t.Fatal(err)
		}
		wantStatus = 206
	}
	if resp.Status != wantStatus || resp.Proto != "2" || resp.ContentRange != wantCR {
		t.Errorf("%s %s range %q upgrade=%v: got %+v, want status %d over HTTP/2, Content-Range %q",
			client, f.URL, c.rng, c.upgrade, resp, wantStatus, wantCR)
	}
	if err := peers.VerifyFile(f.Out, want); err != nil {
		t.Errorf("%s %s range %q upgrade=%v: %v", client, f.URL, c.rng, c.upgrade, err)
	}
}

// TestClientsAgainstShunt: curl and nghttp download files and generated
// objects, whole and in ranges, from shunt serve over TLS and h2c.
func TestClientsAgainstShunt(t *testing.T) {
	needTools(t, "curl", "nghttp")
	root := t.TempDir()
	file := object{"/file.bin", writeRandom(t, root, "file.bin", 300_000)}
	small := object{"/gen/10KB", generated(t, "10KB")}
	big := object{"/gen/3MB", generated(t, "3MB")}
	cases := []fetchCase{
		{obj: file}, {obj: file, rng: "0-0"}, {obj: file, rng: "1000-70999"}, {obj: file, rng: "-100"},
		{obj: small}, {obj: small, rng: "9000-"},
		{obj: big}, {obj: big, rng: "1048576-2097151"}, {obj: big, rng: "2999990-"},
	}
	for _, tls := range []bool{false, true} {
		srv := startShunt(t, root, tls)
		for _, client := range []struct {
			name  string
			fetch func(context.Context, peers.Fetch) (peers.Response, error)
		}{{"curl", peers.Curl}, {"nghttp", peers.Nghttp}} {
			t.Run(fmt.Sprintf("%s/tls=%v", client.name, tls), func(t *testing.T) {
				for _, c := range cases {
					c.check(t, client.name, client.fetch, srv.base)
				}
				if !tls {
					// curl 7.88 cannot take more than 32 KiB right after a 101
					// (see peers), hence the small object for it.
					fetchCase{obj: small, upgrade: true}.check(t, client.name, client.fetch, srv.base)
					if client.name == "nghttp" {
						fetchCase{obj: big, upgrade: true}.check(t, client.name, client.fetch, srv.base)
					}
				}
			})
		}
	}
}

// TestRangeNotSatisfiable: a range past the end gets 416, not a body.
func TestRangeNotSatisfiable(t *testing.T) {
	needTools(t, "curl")
	srv := startShunt(t, t.TempDir(), false)
	f := peers.Fetch{URL: srv.url("/gen/1KB"), Range: "1000-", Out: filepath.Join(t.TempDir(), "body")}
	resp, err := peers.Curl(timeout(t, time.Minute), f)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 416 || resp.ContentRange != "bytes */1000" {
		t.Errorf("range 1000- of /gen/1KB: got %+v, want 416 with Content-Range bytes */1000", resp)
	}
}
