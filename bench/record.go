package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// Record is one line of runs.jsonl: a run with everything that defines it and
// everything it measured.
type Record struct {
	Run
	Start    time.Time          `json:"start"`
	Duration float64            `json:"duration_s"` // wall time of the whole run, set-up included
	Metrics  map[string]float64 `json:"metrics,omitempty"`
	Counts   map[string]float64 `json:"counts,omitempty"`
	// EmulatorCPU is the link emulator's CPU time during the run.
	EmulatorCPU float64           `json:"emulator_cpu_s"`
	Sock        SockOpts          `json:"sock"`
	Info        map[string]string `json:"info,omitempty"`
	Network     map[string]string `json:"network,omitempty"`
	NetSeed     int64             `json:"net_seed"` // seed of the condition's loss models
	Shard       string            `json:"shard,omitempty"`
	Error       string            `json:"error,omitempty"`
}

// OK reports whether the run succeeded.
func (r *Record) OK() bool { return r.Error == "" }

// RunsFile is the name of the run log in an output directory.
const RunsFile = "runs.jsonl"

// ReadRecords reads a runs.jsonl file. A missing file is no records. A torn
// last line (the process was killed while writing it) is skipped; a bad line
// elsewhere is an error naming the file and line.
func ReadRecords(file string) ([]*Record, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readRecords(file, f)
}

func readRecords(file string, r io.Reader) ([]*Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var recs []*Record
	var pending error // error of the previous line, fatal unless it was the last
	for line := 1; sc.Scan(); line++ {
		if pending != nil {
			return nil, pending
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			pending = fmt.Errorf("%s line %d: %w", file, line, err)
			continue
		}
		if rec.ID == "" {
			pending = fmt.Errorf("%s line %d: record without id", file, line)
			continue
		}
		recs = append(recs, &rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return recs, nil
}

// Latest keeps one record per run ID: a success over an error (a resumed run
// retries failures), and among equals the latest start. The result is sorted
// by start time then ID, so it does not depend on file order.
func Latest(recs []*Record) []*Record {
	best := map[string]*Record{}
	for _, r := range recs {
		b, ok := best[r.ID]
		if !ok || better(r, b) {
			best[r.ID] = r
		}
	}
	out := make([]*Record, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func better(a, b *Record) bool {
	if a.OK() != b.OK() {
		return a.OK()
	}
	return a.Start.After(b.Start)
}

// recordWriter appends records to runs.jsonl, one write (and sync) per line
// so an interrupted sweep loses at most the run in progress.
type recordWriter struct{ f *os.File }

func openRecordWriter(file string) (*recordWriter, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recordWriter{f}, nil
}

func (w *recordWriter) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", r.ID, err)
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing run %s: %w", r.ID, err)
	}
	return w.f.Sync()
}

func (w *recordWriter) Close() error { return w.f.Close() }

// WriteRecords writes records as a fresh runs.jsonl (used by merge).
func WriteRecords(file string, recs []*Record) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", file, err)
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return f.Close()
}
