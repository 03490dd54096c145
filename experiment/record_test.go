package experiment

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadRecordsTornLastLine(t *testing.T) {
	good := `{"id":"a1","scenario":"s","rep":0}` + "\n" + `{"id":"a2","scenario":"s","rep":1}` + "\n"
	recs, err := readRecords("runs.jsonl", strings.NewReader(good+`{"id":"a3","sce`))
	if err != nil || len(recs) != 2 {
		t.Errorf("torn last line: %d records, %v", len(recs), err)
	}
	_, err = readRecords("runs.jsonl", strings.NewReader(`{"id":"a1"}`+"\nnot json\n"+`{"id":"a2"}`+"\n"))
	if err == nil || !strings.Contains(err.Error(), "runs.jsonl line 2") {
		t.Errorf("bad middle line: %v", err)
	}
}

func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"id":"a1","scenario":"s","rep":0,"metrics":{"time":0.5}}` + "\n"))
	f.Add([]byte("\n\n{\"id\":\"x\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := readRecords("f", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.ID == "" {
				t.Fatal("record without ID accepted")
			}
		}
	})
}
