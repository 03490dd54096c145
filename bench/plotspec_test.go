package bench

import (
	"testing"
)

func TestFigureSpecsValidated(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        []string // empty: accepted
	}{
		{"good", "plots: [{metric: time, x: rtt}, {metric: time, x: loss}]\nwaterfalls: {condition: slow, metric: time}", nil},
		{"bad x", "plots: [{metric: time, x: jitter}]", []string{"plots[0].x", "jitter", "rtt, loss, rate"}},
		{"no metric", "plots: [{x: rtt}]", []string{"plots[0].metric", "missing"}},
		{"same file twice", "plots: [{metric: time, x: rtt}, {name: time-vs-rtt, metric: plt, x: loss}]", []string{"plots[1].name", "duplicate"}},
		{"slash in name", "plots: [{name: a/b, metric: time, x: rtt}]", []string{"plots[0].name", "slashes"}},
		{"negative columns", "plots: [{metric: time, x: rtt, columns: -1}]", []string{"plots[0].columns"}},
		{"unknown condition", "waterfalls: {condition: lan, metric: time}", []string{"waterfalls.condition", "lan"}},
		{"unknown field", "plots: [{metric: time, x: rtt, panels: protocol}]", []string{"panels"}},
	} {
		_, err := Parse("x.yaml", []byte(fakeScenario+tc.extra+"\n"))
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		wantErrorMentioning(t, tc.name, err, tc.want)
	}
}
