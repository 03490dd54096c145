package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/shunt-net/shunt/experiment"
	"github.com/shunt-net/shunt/experiment/emulated"
)

// openJSON opens a command's --json file before its run, so an unwritable
// path fails first and not after a long load; no file, no writer.
func openJSON(file string) (*experiment.RecordWriter, error) {
	if file == "" {
		return nil, nil
	}
	w, err := experiment.OpenRecordWriter(file)
	if err != nil {
		return nil, fmt.Errorf("--json: %w", err)
	}
	return w, nil
}

// emulate builds the network of a command's link options, which takes
// root; the caller closes it.
func emulate(ctx context.Context, nf *emulated.Factory, cond experiment.Condition, seed int64) (experiment.Network, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("link options need root: the link is emulated between network namespaces")
	}
	return nf.Build(ctx, cond, seed)
}

// runCommand runs a command's started session once, as shunt bench runs
// it: the repetition follows the --json file's records, the record is
// appended to w (when there is one), and a failed run is an error.
func runCommand(ctx context.Context, net experiment.Network, sess experiment.Session, run *experiment.Run, jsonFile string, w *experiment.RecordWriter, timeout time.Duration) (*experiment.Record, error) {
	if err := identify(run, jsonFile); err != nil {
		return nil, err
	}
	rec := experiment.RunOnce(ctx, net, sess, run, timeout, nil)
	if w != nil {
		if err := w.Write(rec); err != nil {
			return nil, err
		}
	}
	if !rec.OK() {
		return nil, errors.New(rec.Error)
	}
	return rec, nil
}
