package peers

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseAccessLog(t *testing.T) {
	got, err := ParseAccessLog([]byte("1764278400.123 7 206 /o/8000000?r=3 500000 500251\n" +
		"1764278401.500 8 200 /o/8000000?r=3 7500000 7500262\n1764278402.000 9 2"))
	want := []Access{
		{End: 1764278400.123, Conn: 7, Status: 206, URI: "/o/8000000?r=3", Body: 500000, Sent: 500251},
		{End: 1764278401.5, Conn: 8, Status: 200, URI: "/o/8000000?r=3", Body: 7500000, Sent: 7500262},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v (the unfinished last line left out)", got, err, want)
	}
	if _, err := ParseAccessLog([]byte("1 2 200 /x 5\n")); err == nil {
		t.Error("a line of 5 fields: no error")
	}
	if _, err := ParseAccessLog([]byte("1 2 200 /x five 6\n")); err == nil {
		t.Error("a body size that is not a number: no error")
	}
}

// nginx and h2o log what they wrote per request, ranges and whole objects
// alike; the other servers refuse an access log.
func TestAccessLog(t *testing.T) {
	requireTools(t, Nginx, H2O, Nghttpd, "curl")
	root := t.TempDir()
	obj := writeObject(t, root, "obj", 300_000)
	for _, server := range []string{Nginx, H2O} {
		p := startPeer(t, server, Options{Root: root, TLS: true, AccessLog: true})
		checkFetch(t, "curl", Curl, Fetch{URL: p.URL("/obj?r=1")}, obj)
		checkFetch(t, "curl", Curl, Fetch{URL: p.URL("/obj?r=2"), Range: "1000-1999"}, obj)
		var got []Access
		// A request's line is written once the request has ended.
		for deadline := time.Now().Add(5 * time.Second); len(got) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			var err error
			if got, err = ReadAccessLog(p.AccessLog); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 2 {
			t.Fatalf("%s: access log: %+v, want 2 lines", server, got)
		}
		for i, w := range []struct {
			uri    string
			status int
			body   int64
		}{{"/obj?r=1", 200, 300_000}, {"/obj?r=2", 206, 1000}} {
			// h2o logs no header bytes: its Sent is Body.
			if a := got[i]; a.URI != w.uri || a.Status != w.status || a.Body != w.body || a.Sent < a.Body || server == Nginx && a.Sent == a.Body ||
				a.End < float64(time.Now().Add(-time.Minute).Unix()) || a.End > float64(time.Now().Unix()+1) {
				t.Errorf("%s: line %d: %+v, want %s status %d, %d body bytes, (nginx) more sent, ended in the last minute", server, i, a, w.uri, w.status, w.body)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p, err := Start(ctx, Nghttpd, Options{Root: root, AccessLog: true}); err == nil {
		p.Stop()
		t.Error("nghttpd with an access log: no error")
	}
}

func FuzzParseAccessLog(f *testing.F) {
	f.Add([]byte("1764278400.123 7 206 /o/8000000?r=3 500000 500251\n1764278402.000 9 2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseAccessLog(b)
		if err != nil {
			return
		}
		if n := bytes.Count(b, []byte("\n")); len(got) != n {
			t.Errorf("%q: %d entries for %d complete lines", b, len(got), n)
		}
		for _, a := range got {
			if a.URI == "" || strings.ContainsAny(a.URI, " \t\n") {
				t.Errorf("%q: URI %q", b, a.URI)
			}
		}
	})
}
