package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	Node        *Node             `json:"node,omitempty"`
	Shard       string            `json:"shard,omitempty"`
	// Binary is the commit of the shunt binary that ran it (Binary()), so a
	// sweep resumed over days pools only runs of binaries known to be alike.
	Binary string `json:"binary,omitempty"`
	Error  string `json:"error,omitempty"`
}

// OK reports whether the run succeeded.
func (r *Record) OK() bool { return r.Error == "" }

// ReadRecords reads a runs file (one Record per line). A missing file is no records. A torn
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

// RecordWriter appends records to a runs file, one write (and sync) per line
// so an interrupted sweep loses at most the run in progress.
type RecordWriter struct{ f *os.File }

// OpenRecordWriter opens file for appending records, creating it if needed.
// Opening first lets a command refuse an unwritable file before it measures.
func OpenRecordWriter(file string) (*RecordWriter, error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &RecordWriter{f}, nil
}

// Write appends r as one line.
func (w *RecordWriter) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", r.ID, err)
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing run %s: %w", r.ID, err)
	}
	return w.f.Sync()
}

// Close closes the file.
func (w *RecordWriter) Close() error { return w.f.Close() }

// WriteRecords writes records as a fresh runs file (merge).
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
