package replay

import (
	"time"
)

// Result is one page load, ready to be one JSON line. Times are durations
// since the load started (the root request was asked for).
type Result struct {
	Page    string         `json:"page"`
	Compute bool           `json:"compute"`
	PLT     time.Duration  `json:"plt_ns"`
	Bytes   int64          `json:"bytes"` // body bytes received
	Objects []ObjectTiming `json:"objects"`
	Comps   []CompTiming   `json:"comps"`
}

// ObjectTiming is one object's download, for waterfalls.
type ObjectTiming struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	MIME string `json:"mime"`
	Size int64  `json:"size"`  // bytes the page says it has
	Got  int64  `json:"bytes"` // body bytes received
	// Ready: its dependencies were met and the walker asked for it.
	Ready time.Duration `json:"ready_ns"`
	// Request: the transport sent the request (after waiting for a free
	// connection or stream).
	Request   time.Duration `json:"request_ns"`
	FirstByte time.Duration `json:"first_byte_ns"`
	Done      time.Duration `json:"done_ns"`
	Conn      int           `json:"conn"` // which connection carried it, from the Fetcher
}

// CompTiming is one computation.
type CompTiming struct {
	ID     string        `json:"id"`
	Object string        `json:"object"`
	Type   string        `json:"type,omitempty"`
	Start  time.Duration `json:"start_ns"`
	Done   time.Duration `json:"done_ns"`
}

// Result reports the load so far. Download details the walker does not see
// (request, first byte, bytes, connection) are zero: drivers fill them in.
func (w *Walker) Result() *Result {
	r := &Result{Page: w.p.Name, Compute: w.opts.Compute, PLT: w.plt,
		Objects: make([]ObjectTiming, len(w.p.Objects)), Comps: []CompTiming{}}
	for i, o := range w.p.Objects {
		r.Objects[i] = ObjectTiming{ID: o.ID, Path: o.Path, MIME: o.MIME, Size: o.Size,
			Ready: w.ready[o.Download], Done: w.end[o.Download]}
		for _, c := range o.Comps {
			a := w.p.Activities[c]
			r.Comps = append(r.Comps, CompTiming{ID: a.ID, Object: o.ID, Type: a.CompType,
				Start: w.ready[c], Done: w.end[c]})
		}
	}
	return r
}
