package netem

import (
	"io"
	"strconv"
)

// Drop causes, as written in the log and counted in Stats.
const (
	CauseLoss  = "loss"  // the loss model, at arrival
	CauseQueue = "queue" // the queue was full (fq: dropped from the longest flow)
	CauseCoDel = "codel" // CoDel, at dequeue
)

// Log records one direction's link events, mm-link style, in the format
// documented in the package comment and docs/link-log.md. It buffers in
// memory and writes to w in large chunks; call Flush when done. A Log belongs
// to one Link and, like it, is not safe for concurrent use. A nil *Log logs
// nothing.
type Log struct {
	w    io.Writer
	buf  []byte
	err  error
	base int64
}

// logFlushSize is how much the log buffers before writing.
const logFlushSize = 64 << 10

// NewLog returns a log writing to w.
func NewLog(w io.Writer) *Log {
	return &Log{w: w, buf: make([]byte, 0, logFlushSize+256)}
}

// begin writes the header; base is the link's time 0 (ns, caller's clock).
func (l *Log) begin(base int64, link string, seed int64) {
	if l == nil {
		return
	}
	l.base = base
	l.buf = append(l.buf, "# shunt netem link log v1\n# link: "...)
	l.buf = append(l.buf, link...)
	l.buf = append(l.buf, "\n# seed: "...)
	l.buf = strconv.AppendInt(l.buf, seed, 10)
	l.buf = append(l.buf, "\n# base timestamp: "...)
	l.buf = strconv.AppendInt(l.buf, base, 10)
	l.buf = append(l.buf, '\n')
}

func (l *Log) arrival(t int64, n int, flow uint64) {
	if l == nil {
		return
	}
	l.event(t, " + ", n)
	l.flow(flow)
}

func (l *Log) departure(t int64, n int, qdelay int64, flow uint64) {
	if l == nil {
		return
	}
	l.event(t, " - ", n)
	l.buf = append(l.buf, ' ')
	l.buf = appendMs(l.buf, qdelay)
	l.flow(flow)
}

func (l *Log) drop(t int64, n int, cause string, flow uint64) {
	if l == nil {
		return
	}
	l.event(t, " d ", n)
	l.buf = append(l.buf, ' ')
	l.buf = append(l.buf, cause...)
	l.flow(flow)
}

func (l *Log) event(t int64, kind string, n int) {
	l.buf = appendMs(l.buf, t-l.base)
	l.buf = append(l.buf, kind...)
	l.buf = strconv.AppendInt(l.buf, int64(n), 10)
}

// flow ends a line with the flow hash in hex.
func (l *Log) flow(flow uint64) {
	l.buf = append(l.buf, ' ')
	l.buf = strconv.AppendUint(l.buf, flow, 16)
	l.buf = append(l.buf, '\n')
	if len(l.buf) >= logFlushSize {
		l.Flush()
	}
}

// appendMs writes ns as milliseconds with three decimals (µs resolution).
func appendMs(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	us := ns / 1000
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// Flush writes what is buffered and returns the first write error, if any.
// After an error the log discards further events.
func (l *Log) Flush() error {
	if l == nil {
		return nil
	}
	if l.err == nil && len(l.buf) > 0 {
		_, l.err = l.w.Write(l.buf)
	}
	l.buf = l.buf[:0]
	return l.err
}
