package bench

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/shunt-net/shunt/experiment"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress is told about a sweep as it goes.
type Progress interface {
	Start(total, skipped int)    // runs to do, and runs resume skipped
	Step(rec *experiment.Record) // one run done (or failed)
	Finish()
}

type nopProgress struct{}

func (nopProgress) Start(int, int)          {}
func (nopProgress) Step(*experiment.Record) {}
func (nopProgress) Finish()                 {}

// NewProgress returns a progress bar with ETA when w is a terminal, and one
// plain line per run otherwise (logs and CI keep every run's outcome).
func NewProgress(w *os.File) Progress {
	if term.IsTerminal(int(w.Fd())) {
		return &barProgress{w: w}
	}
	return &LineProgress{W: w, Now: time.Now}
}

type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (p *barProgress) Start(total, skipped int) {
	if skipped > 0 {
		fmt.Fprintf(p.w, "resuming: %d runs already done\n", skipped)
	}
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("runs"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionFullWidth(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	)
}

func (p *barProgress) Step(rec *experiment.Record) {
	if !rec.OK() {
		// Errors are printed above the bar, never hidden.
		p.bar.Clear()
		fmt.Fprintf(p.w, "run %s %s: error: %s\n", rec.ID, cellName(rec), rec.Error)
	}
	p.bar.Describe(cellName(rec))
	p.bar.Add(1)
}

func (p *barProgress) Finish() { p.bar.Finish() }

// LineProgress prints one line per run with the ETA.
type LineProgress struct {
	W     io.Writer
	Now   func() time.Time
	total int
	done  int
	start time.Time
}

func (p *LineProgress) Start(total, skipped int) {
	p.total, p.start = total, p.Now()
	fmt.Fprintf(p.W, "%d runs to do (%d already done)\n", total, skipped)
}

func (p *LineProgress) Step(rec *experiment.Record) {
	p.done++
	status := formatMetrics(rec.Metrics)
	if !rec.OK() {
		status = "error: " + rec.Error
	}
	fmt.Fprintf(p.W, "[%d/%d eta %s] %s: %s\n", p.done, p.total, ETA(p.Now().Sub(p.start), p.done, p.total), cellName(rec), status)
}

func (p *LineProgress) Finish() {}

// ETA extrapolates the time left from the mean time per run so far.
func ETA(elapsed time.Duration, done, total int) time.Duration {
	if done <= 0 || done >= total {
		return 0
	}
	return (elapsed / time.Duration(done) * time.Duration(total-done)).Round(time.Second)
}

func cellName(r *experiment.Record) string {
	return fmt.Sprintf("%s/%s/%s#%d", r.Condition.Name, r.Protocol.Name, r.Object.Name, r.Rep)
}

func formatMetrics(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		// Each metric in its own unit: a bitrate or a count is not seconds.
		switch u := UnitOf(k); u {
		case "s":
			fmt.Fprintf(&b, "%s=%.3fs", k, m[k])
		case "count":
			fmt.Fprintf(&b, "%s=%g", k, m[k])
		default:
			fmt.Fprintf(&b, "%s=%.3f %s", k, m[k], u)
		}
	}
	return b.String()
}
