package experiment

import (
	"strings"
	"testing"
	"time"
)

func TestPathSpecRTT(t *testing.T) {
	p := PathSpec{Name: "cheap", Up: LinkSpec{Delay: "40ms"}, Down: LinkSpec{Delay: "1.5ms", Rate: "10Mbit"}}
	if rtt, err := p.RTT(); err != nil || rtt != 41500*time.Microsecond {
		t.Errorf("RTT = %v, %v; want 41.5ms", rtt, err)
	}
	if rtt, err := (PathSpec{}).RTT(); err != nil || rtt != 0 {
		t.Errorf("no delays: RTT = %v, %v; want 0", rtt, err)
	}
	p.Down.Delay = "-1ms"
	if _, err := p.RTT(); err == nil || !strings.Contains(err.Error(), `path cheap: delay "-1ms": negative`) {
		t.Errorf("negative delay: error %v", err)
	}
}
