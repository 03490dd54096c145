package emulated

import (
	"strings"
	"testing"

	"github.com/shunt-net/shunt/experiment"
)

func TestCheckNamesTheField(t *testing.T) {
	c := experiment.Condition{Name: "c", Topology: "single", Paths: []experiment.PathSpec{{
		Name: "p",
		Up:   experiment.LinkSpec{Rate: "10Mbit", Delay: "10ms", Jitter: "normal:3ms", Queue: "droptail:bytes=64000"},
		Down: experiment.LinkSpec{Rate: "10 potatoes", Delay: "10ms", Jitter: "11ms", Loss: "2%", Queue: "red"},
	}}}
	err := (&Factory{}).Check(c)
	for _, want := range []string{`paths[0].down.rate "10 potatoes"`, `paths[0].down.queue "red"`, `paths[0].down.jitter "11ms"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check error %v lacks %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "paths[0].up") {
		t.Errorf("valid up link reported: %v", err)
	}
	cfg, err := (&Factory{}).LinkConfig(experiment.LinkSpec{Delay: "25ms", Rate: "10Mbit", Loss: "1.5%", Queue: "droptail:bytes=64000"}, "x")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Delay.Milliseconds() != 25 || cfg.RateBps != 10e6 || cfg.Queue.Bytes != 64000 {
		t.Errorf("LinkConfig = %+v", cfg)
	}
}
