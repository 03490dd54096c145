package replay

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Phase is a stretch of a waterfall row.
type Phase uint8

// Phases of a download, then the one of a computation.
const (
	Queued    Phase = iota // ready, waiting for a connection or stream
	Waiting                // requested, waiting for the first byte
	Receiving              // the body arrives
	Computing
)

// Span is one phase of a row, from From to To.
type Span struct {
	Phase    Phase
	From, To time.Duration
}

// Row is one line of a waterfall: a download or a computation.
type Row struct {
	ID, Kind    string // Kind: the MIME type, or "comp TYPE"
	Size        int64  // bytes the page says the object has; 0 for computations
	Comp        bool
	Start, Done time.Duration
	Spans       []Span // in time order
}

// Rows lists a load's downloads and computations in the order they started,
// each cut into its phases: what both the text and the graphic waterfalls draw.
func (r *Result) Rows() []Row {
	rows := make([]Row, 0, len(r.Objects)+len(r.Comps))
	for _, o := range r.Objects {
		rows = append(rows, Row{ID: o.ID, Kind: o.MIME, Size: o.Size, Start: o.Ready, Done: o.Done,
			Spans: []Span{{Queued, o.Ready, o.Request}, {Waiting, o.Request, o.FirstByte}, {Receiving, o.FirstByte, o.Done}}})
	}
	for _, c := range r.Comps {
		rows = append(rows, Row{ID: c.ID, Kind: "comp " + c.Type, Comp: true, Start: c.Start, Done: c.Done,
			Spans: []Span{{Computing, c.Start, c.Done}}})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Start < rows[j].Start })
	return rows
}

// phaseChar is how the text waterfall draws each phase.
var phaseChar = [...]byte{Queued: '.', Waiting: '-', Receiving: '=', Computing: '#'}

// WriteWaterfall draws a load as text: one row per download and per
// computation, in the order they started, on a time axis width columns wide
// from the load's start to its PLT. A download's bar shows '.' while it
// waits for a connection or stream, '-' from the request to the first byte,
// '=' while the body arrives; a computation's shows '#'.
func WriteWaterfall(out io.Writer, r *Result, width int) error {
	if width < 20 {
		width = 20
	}
	rows := r.Rows()
	idw, kindw := len("id"), len("type")
	for _, rw := range rows {
		idw, kindw = max(idw, len(rw.ID)), max(kindw, len(rw.Kind))
	}
	col := func(t time.Duration) int {
		if r.PLT <= 0 || t <= 0 {
			return 0
		}
		return min(int(int64(t)*int64(width)/int64(r.PLT)), width-1)
	}
	ms := func(t time.Duration) float64 { return float64(t) / float64(time.Millisecond) }

	b := bufio.NewWriter(out)
	compute := "off"
	if r.Compute {
		compute = "on"
	}
	fmt.Fprintf(b, "%s: PLT %.1f ms, %d objects, %d bytes, compute %s\n", r.Page, ms(r.PLT), len(r.Objects), r.Bytes, compute)
	endLabel := fmt.Sprintf("%.0f ms", ms(r.PLT))
	axis := "0 ms" + strings.Repeat(" ", max(width-len("0 ms")-len(endLabel), 1)) + endLabel
	fmt.Fprintf(b, "%-*s %-*s %9s |%s| %9s %9s\n", idw, "id", kindw, "type", "bytes", axis, "start ms", "end ms")
	bar := make([]byte, width)
	for _, rw := range rows {
		for i := range bar {
			bar[i] = ' '
		}
		// A phase runs on to the row's end; the next one overwrites it, so
		// a phase shorter than a column still shows where it starts.
		end := col(rw.Done)
		for _, s := range rw.Spans {
			fill(bar, col(s.From), end, phaseChar[s.Phase])
		}
		size := ""
		if !rw.Comp {
			size = fmt.Sprint(rw.Size)
		}
		fmt.Fprintf(b, "%-*s %-*s %9s |%s| %9.1f %9.1f\n", idw, rw.ID, kindw, rw.Kind, size, bar, ms(rw.Start), ms(rw.Done))
	}
	fmt.Fprintf(b, "%s  . queued  - waiting for first byte  = receiving  # computing\n", strings.Repeat(" ", idw+kindw+11))
	return b.Flush()
}

func fill(bar []byte, from, to int, c byte) {
	for i := from; i <= to && i < len(bar); i++ {
		bar[i] = c
	}
}
