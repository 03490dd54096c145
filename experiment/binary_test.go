package experiment

import (
	"runtime/debug"
	"testing"
)

func TestBinaryOf(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "f8b59908c621456378df82e6d5a000cee4285358"}
	for _, c := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, ""},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, ""},
		{[]debug.BuildSetting{rev, {Key: "vcs.modified", Value: "false"}}, rev.Value},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, rev}, rev.Value + "+modified"},
	} {
		if got := binaryOf(c.settings); got != c.want {
			t.Errorf("binaryOf(%v) = %q, want %q", c.settings, got, c.want)
		}
	}
}
