package page

import (
	"encoding/json"
	"time"
)

// The pReplay graph format as MarshalGraph writes it.
type (
	wireGraph struct {
		Name          string    `json:"name"`
		StartActivity string    `json:"start_activity"`
		LoadActivity  any       `json:"load_activity"` // an activity ID, or -1
		Objs          []wireObj `json:"objs"`
		Deps          []wireDep `json:"deps"`
	}
	wireObj struct {
		ID       string       `json:"id"`
		URL      string       `json:"url,omitempty"`
		Host     string       `json:"host,omitempty"`
		Path     string       `json:"path"`
		Size     *int64       `json:"size,omitempty"`
		Download wireDownload `json:"download"`
		Comps    []wireComp   `json:"comps"`
	}
	wireDownload struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	wireComp struct {
		ID   string  `json:"id"`
		Type *string `json:"type"` // null when unrecorded
		Time float64 `json:"time"` // ms
	}
	wireDep struct {
		ID   string  `json:"id,omitempty"`
		A1   string  `json:"a1"`
		A2   string  `json:"a2"`
		Time float64 `json:"time"`
	}
)

// MarshalGraph writes the page as a pReplay graph that ReadGraph reads back
// to the same page, with each object's size (if assigned) as objs[].size, so
// a HAR import can be saved and replayed like any graph.
func (p *Page) MarshalGraph() ([]byte, error) {
	g := wireGraph{Name: p.Name, StartActivity: p.Activities[p.Start].ID, LoadActivity: -1}
	if p.Load >= 0 {
		g.LoadActivity = p.Activities[p.Load].ID
	}
	for _, o := range p.Objects {
		w := wireObj{ID: o.ID, URL: o.URL, Host: o.Host, Path: o.Path, Comps: []wireComp{},
			Download: wireDownload{ID: p.Activities[o.Download].ID, Type: o.MIME}}
		if o.SizeFrom != "" {
			size := o.Size
			w.Size = &size
		}
		for _, c := range o.Comps {
			a := p.Activities[c]
			wc := wireComp{ID: a.ID, Time: float64(a.Time) / float64(time.Millisecond)}
			if a.CompType != "" {
				t := a.CompType
				wc.Type = &t
			}
			w.Comps = append(w.Comps, wc)
		}
		g.Objs = append(g.Objs, w)
	}
	g.Deps = []wireDep{}
	for _, d := range p.Deps {
		if d.Implicit {
			continue
		}
		g.Deps = append(g.Deps, wireDep{ID: d.ID, A1: p.Activities[d.From].ID, A2: p.Activities[d.To].ID, Time: d.Time})
	}
	return json.MarshalIndent(g, "", "  ")
}
