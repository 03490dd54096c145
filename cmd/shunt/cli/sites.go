package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/shunt-net/shunt/bench"
	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/page"
	"github.com/shunt-net/shunt/replay/browser"
)

// siteHandler serves the pages' generated sites and names their roots.
func siteHandler(pages []*page.Page, compute bool, stderr io.Writer) (http.Handler, error) {
	var sites []*browser.Site
	for _, p := range pages {
		s, err := browser.Build(p, compute)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "site %s: root %s\n", p.Source, s.Root)
		sites = append(sites, s)
	}
	return browser.NewHandler(sites...)
}

// flagError names a configuration's field errors (params.KEY) by the
// command-line flag that sets them (--key).
func flagError(err error) error {
	var fe *experiment.FieldError
	if errors.As(err, &fe) && strings.HasPrefix(fe.Field, "params.") {
		named := *fe
		named.Field = "--" + experiment.FlagName(strings.TrimPrefix(fe.Field, "params."))
		return &named
	}
	return err
}

// identify gives a command's run its repetition and ID: the repetition is
// the count of runs of the same condition, protocol and object the --json
// file already holds (0 without one), so repeated commands appending to one
// file are repetitions of one cell, as a sweep's are.
func identify(run *experiment.Run, jsonFile string) error {
	if jsonFile != "" {
		recs, err := experiment.ReadRecords(jsonFile)
		if err != nil {
			return fmt.Errorf("--json: %w", err)
		}
		for _, r := range recs {
			if bench.RunID(run.Seed, r.Condition, r.Protocol, r.Object, 0) == bench.RunID(run.Seed, run.Condition, run.Protocol, run.Object, 0) {
				run.Rep++
			}
		}
	}
	run.ID = bench.RunID(run.Seed, run.Condition, run.Protocol, run.Object, run.Rep)
	return nil
}
