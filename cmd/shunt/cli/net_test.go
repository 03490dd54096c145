package cli

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shunt-net/shunt/testbed"
)

// `net check NAME` runs NAME only, whatever its place in the list.
func TestNetCheckRunsOnlyTheNamedChecks(t *testing.T) {
	var ran []string
	check := func(name string) testbed.Check {
		return testbed.Check{Name: name, Run: func(context.Context) (testbed.CheckResult, error) {
			ran = append(ran, name)
			return testbed.CheckResult{Name: name, Pass: true}, nil
		}}
	}
	checks := []testbed.Check{check("a"), check("b"), check("c"), check("d")}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"b"}, []string{"b"}},
		{[]string{"a", "c"}, []string{"a", "c"}},
		{nil, []string{"a", "b", "c", "d"}},
	} {
		ran = nil
		if err := runChecks(context.Background(), tc.args, io.Discard, checks); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ran, tc.want) {
			t.Errorf("net check %v ran %v, want %v", tc.args, ran, tc.want)
		}
	}
	ran = nil
	if err := runChecks(context.Background(), []string{"b", "nope"}, io.Discard, checks); err == nil || !strings.Contains(err.Error(), `unknown check "nope"`) || len(ran) > 0 {
		t.Errorf("net check b nope: %v, ran %v; want an error before any check", err, ran)
	}
}

// `net shell --server CMD -- CMD2` returns when CMD2 does, killing CMD.
func TestNetShellStopsItsServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runNetShell(ctx, []string{"--delay", "1ms", "--server", "sleep 300", "--", "true"}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		cancel()
		<-done
		t.Fatal("net shell did not return within 30 s of its command while its server ran on")
	}
}
