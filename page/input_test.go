package page

import (
	"strings"
	"testing"
)

// Bad input is refused with the field that is wrong, never loaded half:
// two objects with one id, a HAR entry without a request URL or a response.
func TestBadInputNamesTheField(t *testing.T) {
	graph := `{"objs": [
	  {"id": "r1", "url": "http://a.test/", "download": {"id": "d1", "type": "text/html"}},
	  {"id": "r1", "url": "http://a.test/x.js", "download": {"id": "d2", "type": "application/javascript"}}],
	 "deps": [], "start_activity": "d1"}`
	if _, err := ReadGraph("g.json", []byte(graph)); err == nil || !strings.Contains(err.Error(), `objs[1].id: object "r1" already defined at objs[0]`) {
		t.Errorf("duplicate object id: %v", err)
	}
	entry := func(req, resp string) string {
		return `{"log": {"entries": [
		  {"startedDateTime": "2026-01-01T00:00:00Z", "time": 10, "request": {"url": "http://a.test/"}, "response": {"status": 200, "bodySize": 100, "content": {"size": 100, "mimeType": "text/html"}}},
		  {"startedDateTime": "2026-01-01T00:00:01Z", "time": 10` + req + resp + `}]}}`
	}
	for _, tc := range []struct{ har, want string }{
		{entry(``, `, "response": {"status": 200}`), "log.entries[1].request: missing"},
		{entry(`, "request": {}`, `, "response": {"status": 200}`), "log.entries[1].request.url: missing"},
		{entry(`, "request": {"url": "http://a.test/x"}`, ``), "log.entries[1].response: missing"},
	} {
		if _, err := ReadHAR("p.har", []byte(tc.har)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("HAR: %v, want %q", err, tc.want)
		}
	}
	// An aborted request (status 0) is left out, and said so.
	p, err := ReadHAR("p.har", []byte(entry(`, "request": {"url": "http://a.test/x"}`, `, "response": {"status": 0}`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Objects) != 1 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "log.entries[1]: http://a.test/x left out") {
		t.Errorf("%d objects, warnings %q", len(p.Objects), p.Warnings)
	}
}
