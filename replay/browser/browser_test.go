package browser

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/internal/testpages"
	"github.com/shunt-net/shunt/replay/site"
)

var refRE = regexp.MustCompile(`(?:src=|href=|url\(|ins\("\w+",)"([^"]+)"`)

// TestBuildReferencesEveryObject checks the generated site of every shared
// page: each distinct path is served once, at the graph's size unless its
// markup does not fit, and every object but the root is referenced by
// exactly one other object, by the parent Build chose.
func TestBuildReferencesEveryObject(t *testing.T) {
	for _, name := range []string{"test1.json", "test2.json", "test3.json", "test4.json", "www.google.com.hk_.json", "www.mediafire.com_.json", "www.amazon.co.jp_.json"} {
		t.Run(name, func(t *testing.T) {
			p := testpages.Load(t, name)
			s, err := Build(p, true)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(s.Objects), len(p.Resources()); got != want {
				t.Fatalf("%d objects, want one per distinct path: %d", got, want)
			}
			refs := map[string]int{}
			for _, o := range s.Objects {
				if int64(len(o.Body)) < o.Size {
					t.Errorf("%s: %d bytes, want at least %d", o.URL, len(o.Body), o.Size)
				}
				if int64(len(o.Body)) > o.Size && o.MIME == roleMIME[roleImage] {
					t.Errorf("%s: image of %d bytes, want %d", o.URL, len(o.Body), o.Size)
				}
				if o.MIME == roleMIME[roleImage] {
					continue
				}
				for _, m := range refRE.FindAllStringSubmatch(string(o.Body), -1) {
					refs[strings.NewReplacer("&amp;", "&", `\5c `, `\`, `\22 `, `"`).Replace(m[1])]++
				}
			}
			for _, o := range s.Objects {
				want := 1
				if o.URL == s.Root {
					want = 0
				}
				if refs[o.URL] != want {
					t.Errorf("%s referenced %d times, want %d", o.URL, refs[o.URL], want)
				}
			}
		})
	}
}

func TestBuildBusyLoops(t *testing.T) {
	p := testpages.Load(t, "test1.json")
	for _, compute := range []bool{false, true} {
		s, err := Build(p, compute)
		if err != nil {
			t.Fatal(err)
		}
		var loops []string
		for _, o := range s.Objects {
			loops = append(loops, regexp.MustCompile(`performance\.now\(\)\+([0-9.]+)`).FindAllString(string(o.Body), -1)...)
		}
		// test1: the root's evalhtml of 500 ms, r2's evaljs of 1000 ms.
		want := 0
		if compute {
			want = 2
		}
		if len(loops) != want {
			t.Errorf("compute=%v: busy loops %q, want %d", compute, loops, want)
		}
		if compute && !strings.Contains(strings.Join(loops, " "), "+500.000") {
			t.Errorf("busy loops %q: none of 500 ms", loops)
		}
		// r2's download depends on the start of the root's computation
		// (time >= 0), so its tag comes before that computation's loop.
		root := string(s.Objects[0].Body)
		r2 := strings.Index(root, site.URLPath(p.Name, p.Objects[1].Path))
		if loop := strings.Index(root, "+500.000"); r2 < 0 || (compute && loop < r2) {
			t.Errorf("compute=%v: r2 referenced at %d, the 500 ms loop at %d:\n%.300s", compute, r2, loop, root)
		}
	}
}

func TestHandlerServesEscapedTargets(t *testing.T) {
	p := testpages.Load(t, "test3.json")
	s, err := Build(p, false)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range s.Objects {
		for _, target := range []string{o.URL, strings.ReplaceAll(o.URL, "_", "%5F")} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "http://x"+target, nil)
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), o.Body) || rec.Header().Get("Content-Type") != o.MIME {
				t.Errorf("%s: status %d, %d bytes, type %q", target, rec.Code, rec.Body.Len(), rec.Header().Get("Content-Type"))
			}
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://x/page/nope", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("unknown path: status %d", rec.Code)
	}
}

// TestChromiumLoadsPage loads a small page in headless Chromium from a
// local TLS server, over h2, HTTP/1.1 and HTTP/3, and checks the load saw every
// object with the protocol asked for and took at least the page's busy loops.
func TestChromiumLoadsPage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	if err := Available(""); err != nil {
		t.Skipf("needs Chromium at %s: %v", DefaultBinary, err)
	}
	p := testpages.Load(t, "test1.json")
	s, err := Build(p, true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(s)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := site.Serve(site.ServeConfig{Handler: h, Addr: "127.0.0.1:0", TLS: true, H3: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct{ proto, want string }{{"h2", "h2"}, {"h1", "http/1.1"}, {"h3", "h3"}} {
		t.Run(tc.proto, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var log bytes.Buffer
			cfg := Config{Proto: tc.proto, H3Origin: srv.Addr, Cert: srv.Cert.Certificates[0].Leaf, Stderr: &log}
			l, err := LoadPage(ctx, cfg, fmt.Sprintf("https://%s%s", srv.Addr, s.Root))
			if err != nil {
				t.Fatalf("%v\nchromium log:\n%s", err, tail(&log))
			}
			t.Logf("%+v", l)
			if l.Protocol != tc.want {
				t.Errorf("protocol %q, want %q", l.Protocol, tc.want)
			}
			if l.Resources != len(s.Objects)-1 {
				t.Errorf("%d resources, want %d", l.Resources, len(s.Objects)-1)
			}
			// The load event waits for r2's script, which runs after the
			// root's 500 ms loop and busy-loops 1000 ms itself.
			if l.PLT < 1500*time.Millisecond || l.PLT > 30*time.Second || l.LastResponse > l.PLT {
				t.Errorf("PLT %v, last response %v: want 1.5 s <= PLT < 30 s, last response before it", l.PLT, l.LastResponse)
			}
		})
	}
}

func tail(b *bytes.Buffer) string {
	s, _ := io.ReadAll(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return string(s)
}

// Chromium may resolve the page's host and the proxy's, nothing else: a
// proxy left out of the rule is unreachable (ERR_PROXY_CONNECTION_FAILED).
func TestResolverRules(t *testing.T) {
	for _, tc := range []struct{ url, proxy, want string }{
		{"http://10.99.0.1:8004/player.html", "127.0.0.1:40000", "MAP * ~NOTFOUND, EXCLUDE 10.99.0.1, EXCLUDE 127.0.0.1"},
		{"https://[fd00::1]:443/", "", "MAP * ~NOTFOUND, EXCLUDE fd00::1"},
		{"about:blank", "", "MAP * ~NOTFOUND"},
	} {
		if got := resolverRules(tc.url, tc.proxy); got != tc.want {
			t.Errorf("resolverRules(%q, %q) = %q, want %q", tc.url, tc.proxy, got, tc.want)
		}
	}
}

// Trusted keys replace "any certificate": with TrustSPKI Chromium is not
// told to ignore certificate errors, and every key is in its list.
func TestArgsTrustSPKI(t *testing.T) {
	args, err := Config{Proto: "h2"}.Args("/p")
	if err != nil || !slices.Contains(args, "--ignore-certificate-errors") {
		t.Fatalf("no keys: %q, %v: want --ignore-certificate-errors", args, err)
	}
	args, err = Config{Proto: "h2", TrustSPKI: []string{"a=", "b="}}.Args("/p")
	if err != nil || slices.Contains(args, "--ignore-certificate-errors") || !slices.Contains(args, "--ignore-certificate-errors-spki-list=a=,b=") {
		t.Fatalf("keys: %q, %v: want only the keys trusted", args, err)
	}
}

// The report's timings come back in the page's clock, the frames' documents
// and the long animation frames with them; an event a frame has not reached
// stays 0.
func TestParseTimingsFrames(t *testing.T) {
	v := `{"plt":900.5,"last":880,"dcl":560,"interactive":555.25,"lcp":300,"conn":48,"sent":49,"ttfb":74,"protocol":"h2",` +
		`"objects":[{"t":"/","s":0,"b":74,"e":116,"n":27393},{"t":"/f.html","s":400,"b":430,"e":500,"n":27393}],` +
		`"frames":[{"t":"/f.html","s":400,"e":500,"i":520,"d":521,"l":0}],` +
		`"long":[{"s":510,"d":60,"b":10,"sc":[{"u":"/f.js","w":"descendant","i":"classic-script","d":42.5}]}]}`
	l, err := parseTimings("https://x/", v)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	if l.Interactive != ms(555.25) || l.DOMContentLoaded != ms(560) || l.Resources != 1 {
		t.Errorf("interactive %v, DCL %v, %d resources: want 555.25ms, 560ms, 1", l.Interactive, l.DOMContentLoaded, l.Resources)
	}
	want := []Frame{{Target: "/f.html", Start: ms(400), Done: ms(500), Interactive: ms(520), DOMContentLoaded: ms(521)}}
	if !slices.Equal(l.Frames, want) {
		t.Errorf("frames %+v, want %+v", l.Frames, want)
	}
	wantLong := LongFrame{Start: ms(510), Duration: ms(60), Blocking: ms(10), Scripts: []LongScript{{Source: "/f.js", Window: "descendant", Invoker: "classic-script", Duration: ms(42.5)}}}
	if len(l.LongFrames) != 1 || !reflect.DeepEqual(l.LongFrames[0], wantLong) {
		t.Errorf("long frames %+v, want [%+v]", l.LongFrames, wantLong)
	}
}
