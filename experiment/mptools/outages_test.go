package mptools

import (
	"reflect"
	"testing"
	"time"
)

func TestParseOutages(t *testing.T) {
	got, err := ParseOutages("wifi@2s,lte@500ms+8s")
	want := []Outage{{Path: "wifi", Start: 2 * time.Second}, {Path: "lte", Start: 500 * time.Millisecond, Len: 8 * time.Second}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseOutages = %+v, %v; want %+v", got, err, want)
	}
	if s := FormatOutages(got); s != "wifi@2s,lte@500ms+8s" {
		t.Errorf("FormatOutages = %q", s)
	}
	for _, bad := range []string{"wifi", "@2s", "wifi@", "wifi@-1s", "wifi@1s+0s", "wifi@1s+x", "a@1s,", "a+b@1s"} {
		if _, err := ParseOutages(bad); err == nil {
			t.Errorf("ParseOutages(%q): no error", bad)
		}
	}
}

// FuzzParseOutages: whatever parses, formats to text that parses to the
// same outages.
func FuzzParseOutages(f *testing.F) {
	for _, s := range []string{"wifi@2s", "lte@500ms+8s,wifi@1m", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		os, err := ParseOutages(s)
		if err != nil {
			return
		}
		again, err := ParseOutages(FormatOutages(os))
		if err != nil || !reflect.DeepEqual(os, again) {
			t.Fatalf("%q -> %q -> %+v, %v; want %+v", s, FormatOutages(os), again, err, os)
		}
	})
}
