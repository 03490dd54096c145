package dash

import (
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

func mustURL(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// testdata/video.mpd is scripts/dash-content's output for 30 s.
func TestParseFFmpegMPD(t *testing.T) {
	data, err := os.ReadFile("testdata/video.mpd")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMPD(data, mustURL(t, "http://h/v/video.mpd"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Duration != 30*time.Second || m.SegmentDuration != 6*time.Second {
		t.Fatalf("duration %v, segments of %v", m.Duration, m.SegmentDuration)
	}
	want := []int64{253000, 401000, 634000, 1004000, 1589000, 2516000, 3983000, 6305000, 10000000}
	if len(m.Reps) != len(want) {
		t.Fatalf("%d representations, want %d", len(m.Reps), len(want))
	}
	for i, r := range m.Reps {
		if r.Bandwidth != want[i] || len(r.Segments) != 5 {
			t.Fatalf("rep %d: %d bit/s, %d segments", i, r.Bandwidth, len(r.Segments))
		}
	}
	r := m.Reps[0]
	if r.Init.URL != "http://h/v/init-0.m4s" || r.Segments[0].URL != "http://h/v/chunk-0-00001.m4s" || r.Segments[0].Size != 219319 {
		t.Fatalf("rep 0: init %+v, first segment %+v", r.Init, r.Segments[0])
	}
}

func TestParseTemplate(t *testing.T) {
	mpd := `<MPD type="static" mediaPresentationDuration="PT13S"><BaseURL>media/</BaseURL><Period>
<AdaptationSet mimeType="video/mp4">
 <SegmentTemplate timescale="1000" duration="4000" startNumber="0" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number%03d$.m4s"/>
 <Representation id="hi" bandwidth="2000000"/><Representation id="lo" bandwidth="500000"/>
</AdaptationSet></Period></MPD>`
	m, err := ParseMPD([]byte(mpd), mustURL(t, "http://h/a/b.mpd"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Reps[0].ID != "lo" || len(m.Reps[0].Segments) != 4 || m.Reps[0].Segments[3].URL != "http://h/a/media/lo/003.m4s" ||
		m.Reps[1].Init.URL != "http://h/a/media/hi/init.mp4" || m.Reps[0].Segments[0].Size != 0 {
		t.Fatalf("%+v", m)
	}
}

// Bad manifests fail with an error naming what is wrong.
func TestParseMPDErrors(t *testing.T) {
	rep := func(inner string) string {
		return `<MPD mediaPresentationDuration="PT12S"><Period><AdaptationSet contentType="video">` + inner + `</AdaptationSet></Period></MPD>`
	}
	list := `<SegmentList timescale="1" duration="6"><SegmentURL media="a" mediaRange="%s"/></SegmentList>`
	for _, tc := range []struct{ mpd, want string }{
		{"not xml <", "MPD: XML syntax error"},
		{`<MPD type="dynamic" mediaPresentationDuration="PT1S"/>`, "MPD@type=dynamic"},
		{`<MPD mediaPresentationDuration="1 hour"/>`, "mediaPresentationDuration"},
		{`<MPD mediaPresentationDuration="PT1S"/>`, "no Period"},
		{`<MPD mediaPresentationDuration="PT1S"><Period><AdaptationSet contentType="audio"/></Period></MPD>`, "no video AdaptationSet"},
		{rep(`<Representation id="0" bandwidth="x"/>`), "Representation[0]@bandwidth"},
		{rep(`<Representation id="0" bandwidth="1"/>`), "neither SegmentList nor SegmentTemplate"},
		{rep(`<Representation id="0" bandwidth="1">` + strings.Replace(list, "%s", "5-9", 1) + `</Representation>`), `SegmentURL[0] range "5-9"`},
		{rep(`<Representation id="0" bandwidth="1"><SegmentList duration="0"/></Representation>`), "SegmentList@duration"},
		{rep(`<Representation id="0" bandwidth="1"><SegmentList duration="6"/></Representation>`), "no SegmentURL"},
		{rep(`<Representation id="0" bandwidth="1"><SegmentTemplate duration="6" media="x"/></Representation>`), "$Number$"},
		{rep(`<Representation id="0" bandwidth="1">` + strings.Replace(list, "%s", "0-9", 1) + `</Representation>` +
			`<Representation id="1" bandwidth="2"><SegmentList timescale="1" duration="3"><SegmentURL media="a"/></SegmentList></Representation>`), "aligned segments"},
	} {
		_, err := ParseMPD([]byte(tc.mpd), mustURL(t, "http://h/"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s...: error %v, want one containing %q", tc.mpd, err, tc.want)
		}
	}
}

func FuzzParseMPD(f *testing.F) {
	data, err := os.ReadFile("testdata/video.mpd")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`<MPD mediaPresentationDuration="PT13S"><Period><AdaptationSet mimeType="video/mp4"><SegmentTemplate duration="4" media="$Number%05d$"/><Representation id="a" bandwidth="1"/></AdaptationSet></Period></MPD>`))
	base := mustURL(f, "http://h/x/")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMPD(b, base)
		if err != nil {
			return
		}
		// What parses is playable: a ladder in order, aligned segments.
		if len(m.Reps) == 0 || m.SegmentDuration <= 0 {
			t.Fatalf("parsed an unplayable manifest: %+v", m)
		}
		for i, r := range m.Reps {
			if len(r.Segments) != len(m.Reps[0].Segments) || r.Bandwidth <= 0 || i > 0 && r.Bandwidth < m.Reps[i-1].Bandwidth {
				t.Fatalf("representation %d: %+v", i, r)
			}
		}
	})
}
