package replay

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// WriteWaterfall draws a load as text: one row per download and per
// computation, in the order they started, on a time axis width columns wide
// from the load's start to its PLT. A download's bar shows '.' while it
// waits for a connection or stream, '-' from the request to the first byte,
// '=' while the body arrives; a computation's shows '#'.
func WriteWaterfall(out io.Writer, r *Result, width int) error {
	if width < 20 {
		width = 20
	}
	type row struct {
		id, kind, size string
		start, done    time.Duration
		phases         [3]time.Duration // '.', '-', '=' start; computations use '#' from start
		comp           bool
	}
	rows := make([]row, 0, len(r.Objects)+len(r.Comps))
	for _, o := range r.Objects {
		rows = append(rows, row{id: o.ID, kind: o.MIME, size: fmt.Sprint(o.Size), start: o.Ready, done: o.Done,
			phases: [3]time.Duration{o.Ready, o.Request, o.FirstByte}})
	}
	for _, c := range r.Comps {
		rows = append(rows, row{id: c.ID, kind: "comp " + c.Type, size: "", start: c.Start, done: c.Done, comp: true})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].start < rows[j].start })

	idw, kindw := len("id"), len("type")
	for _, rw := range rows {
		idw, kindw = max(idw, len(rw.id)), max(kindw, len(rw.kind))
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
		end := col(rw.done)
		if rw.comp {
			fill(bar, col(rw.start), end, '#')
		} else {
			for i, c := range []byte{'.', '-', '='} {
				fill(bar, col(rw.phases[i]), end, c)
			}
		}
		fmt.Fprintf(b, "%-*s %-*s %9s |%s| %9.1f %9.1f\n", idw, rw.id, kindw, rw.kind, rw.size, bar, ms(rw.start), ms(rw.done))
	}
	fmt.Fprintf(b, "%s  . queued  - waiting for first byte  = receiving  # computing\n", strings.Repeat(" ", idw+kindw+11))
	return b.Flush()
}

func fill(bar []byte, from, to int, c byte) {
	for i := from; i <= to && i < len(bar); i++ {
		bar[i] = c
	}
}
