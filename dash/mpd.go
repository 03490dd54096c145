// Package dash is a DASH video client for MP-H2 §5.4 (issue 13): a static
// MPD's video ladder, a player with a playback buffer on an injectable clock
// (startup delay, stalls, switches, per-segment bitrate), ExoPlayer's and
// BOLA's bitrate adaptation, and segment fetchers over one or several paths.
//
// The MPD parser is written here: the Go MPD libraries the issue names
// (Eyevinn's dash-mpd, zencoder's go-dash) are refused by the module proxy
// this project reaches.
package dash

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Manifest is the video ladder of a static MPD: the first video adaptation
// set of its first period, representations sorted by bandwidth (lowest first).
type Manifest struct {
	Duration        time.Duration // mediaPresentationDuration
	SegmentDuration time.Duration
	Reps            []Rep
}

// Rep is one representation: its declared bitrate and its segments.
type Rep struct {
	ID        string
	Bandwidth int64 // bit/s, as declared
	Init      Segment
	Segments  []Segment
}

// Segment is one URL the player fetches. Size is its length in bytes when
// the manifest gives it (mediaRange "0-N" over the whole file), 0 if unknown.
type Segment struct {
	URL  string
	Size int64
}

type xmlMPD struct {
	Type     string `xml:"type,attr"`
	Duration string `xml:"mediaPresentationDuration,attr"`
	BaseURL  string `xml:"BaseURL"`
	Periods  []struct {
		BaseURL string `xml:"BaseURL"`
		Sets    []struct {
			ContentType string   `xml:"contentType,attr"`
			MimeType    string   `xml:"mimeType,attr"`
			BaseURL     string   `xml:"BaseURL"`
			List        *xmlList `xml:"SegmentList"`
			Template    *xmlTmpl `xml:"SegmentTemplate"`
			Reps        []xmlRep `xml:"Representation"`
		} `xml:"AdaptationSet"`
	} `xml:"Period"`
}

type xmlRep struct {
	ID        string   `xml:"id,attr"`
	Bandwidth string   `xml:"bandwidth,attr"`
	MimeType  string   `xml:"mimeType,attr"`
	BaseURL   string   `xml:"BaseURL"`
	List      *xmlList `xml:"SegmentList"`
	Template  *xmlTmpl `xml:"SegmentTemplate"`
}

type xmlList struct {
	Timescale string `xml:"timescale,attr"`
	Duration  string `xml:"duration,attr"`
	Init      *struct {
		Source string `xml:"sourceURL,attr"`
		Range  string `xml:"range,attr"`
	} `xml:"Initialization"`
	URLs []struct {
		Media string `xml:"media,attr"`
		Range string `xml:"mediaRange,attr"`
	} `xml:"SegmentURL"`
}

type xmlTmpl struct {
	Timescale string `xml:"timescale,attr"`
	Duration  string `xml:"duration,attr"`
	Start     string `xml:"startNumber,attr"`
	Init      string `xml:"initialization,attr"`
	Media     string `xml:"media,attr"`
}

// ParseMPD reads a static MPD fetched from base (segment URLs resolve
// against it and the BaseURLs). It supports what a DASH packager writes for
// on-demand video with fixed-duration segments: SegmentList (sizes from
// whole-file mediaRange) and SegmentTemplate with $Number$ and a duration.
// Errors name the element or attribute at fault.
func ParseMPD(data []byte, base *url.URL) (*Manifest, error) {
	var x xmlMPD
	if err := xml.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("dash: MPD: %w", err)
	}
	if x.Type == "dynamic" {
		return nil, fmt.Errorf("dash: MPD@type=dynamic: only static (on-demand) MPDs are played")
	}
	total, err := parseISODuration(x.Duration)
	if err != nil {
		return nil, fmt.Errorf("dash: MPD@mediaPresentationDuration=%q: %w", x.Duration, err)
	}
	if len(x.Periods) == 0 {
		return nil, fmt.Errorf("dash: MPD has no Period")
	}
	base, err = resolve(base, x.BaseURL, "MPD/BaseURL")
	if err != nil {
		return nil, err
	}
	p := x.Periods[0]
	if base, err = resolve(base, p.BaseURL, "Period/BaseURL"); err != nil {
		return nil, err
	}
	for i, as := range p.Sets {
		if as.ContentType != "video" && !strings.HasPrefix(as.MimeType, "video/") &&
			!(len(as.Reps) > 0 && strings.HasPrefix(as.Reps[0].MimeType, "video/")) {
			continue
		}
		where := fmt.Sprintf("AdaptationSet[%d]", i)
		abase, err := resolve(base, as.BaseURL, where+"/BaseURL")
		if err != nil {
			return nil, err
		}
		m := &Manifest{Duration: total}
		budget := maxSegments
		for j, xr := range as.Reps {
			r, segDur, err := parseRep(xr, as.List, as.Template, abase, total, fmt.Sprintf("%s/Representation[%d]", where, j), &budget)
			if err != nil {
				return nil, err
			}
			if m.SegmentDuration == 0 {
				m.SegmentDuration = segDur
			} else if segDur != m.SegmentDuration || len(r.Segments) != len(m.Reps[0].Segments) {
				return nil, fmt.Errorf("dash: %s: %d segments of %v, representation 0 has %d of %v: the player needs aligned segments",
					fmt.Sprintf("%s/Representation[%d]", where, j), len(r.Segments), segDur, len(m.Reps[0].Segments), m.SegmentDuration)
			}
			m.Reps = append(m.Reps, r)
		}
		if len(m.Reps) == 0 {
			return nil, fmt.Errorf("dash: %s has no Representation", where)
		}
		sort.SliceStable(m.Reps, func(a, b int) bool { return m.Reps[a].Bandwidth < m.Reps[b].Bandwidth })
		return m, nil
	}
	return nil, fmt.Errorf("dash: Period[0] has no video AdaptationSet")
}

func parseRep(xr xmlRep, setList *xmlList, setTmpl *xmlTmpl, base *url.URL, total time.Duration, where string, budget *int) (Rep, time.Duration, error) {
	r := Rep{ID: xr.ID}
	bw, err := strconv.ParseInt(xr.Bandwidth, 10, 64)
	if err != nil || bw <= 0 {
		return r, 0, fmt.Errorf("dash: %s@bandwidth=%q: want a positive integer (bit/s)", where, xr.Bandwidth)
	}
	r.Bandwidth = bw
	base, err = resolve(base, xr.BaseURL, where+"/BaseURL")
	if err != nil {
		return r, 0, err
	}
	list, tmpl := xr.List, xr.Template
	if list == nil && tmpl == nil {
		list, tmpl = setList, setTmpl
	}
	switch {
	case list != nil:
		d, err := segDuration(list.Timescale, list.Duration, where+"/SegmentList")
		if err != nil {
			return r, 0, err
		}
		if list.Init != nil {
			if r.Init, err = segment(base, list.Init.Source, list.Init.Range, where+"/SegmentList/Initialization"); err != nil {
				return r, 0, err
			}
		}
		if len(list.URLs) == 0 {
			return r, 0, fmt.Errorf("dash: %s/SegmentList has no SegmentURL", where)
		}
		for k, su := range list.URLs {
			s, err := segment(base, su.Media, su.Range, fmt.Sprintf("%s/SegmentList/SegmentURL[%d]", where, k))
			if err != nil {
				return r, 0, err
			}
			r.Segments = append(r.Segments, s)
		}
		return r, d, nil
	case tmpl != nil:
		d, err := segDuration(tmpl.Timescale, tmpl.Duration, where+"/SegmentTemplate")
		if err != nil {
			return r, 0, err
		}
		start := int64(1)
		if tmpl.Start != "" {
			if start, err = strconv.ParseInt(tmpl.Start, 10, 64); err != nil || start < 0 {
				return r, 0, fmt.Errorf("dash: %s/SegmentTemplate@startNumber=%q: want a number", where, tmpl.Start)
			}
		}
		if tmpl.Init != "" {
			if r.Init, err = segment(base, expand(tmpl.Init, xr, 0), "", where+"/SegmentTemplate@initialization"); err != nil {
				return r, 0, err
			}
		}
		if !strings.Contains(tmpl.Media, "$Number") {
			return r, 0, fmt.Errorf("dash: %s/SegmentTemplate@media=%q: want a $Number$ template", where, tmpl.Media)
		}
		n := int64((total + d - 1) / d)
		if n > int64(*budget) {
			return r, 0, fmt.Errorf("dash: %s: %d segments: more than %d in all", where, n, maxSegments)
		}
		*budget -= int(n)
		for k := range n {
			s, err := segment(base, expand(tmpl.Media, xr, start+k), "", where+"/SegmentTemplate@media")
			if err != nil {
				return r, 0, err
			}
			r.Segments = append(r.Segments, s)
		}
		return r, d, nil
	}
	return r, 0, fmt.Errorf("dash: %s has neither SegmentList nor SegmentTemplate (SegmentBase is not supported)", where)
}

// maxSegments bounds the segments of all representations together (a
// 10-minute video of 9 rungs has 900; a day of 6 s segments 14,400), so a
// template cannot make parsing slow.
const maxSegments = 20000

var numberRe = regexp.MustCompile(`\$Number(%0(\d)d)?\$`)

// expand fills a SegmentTemplate's $RepresentationID$, $Bandwidth$ and
// $Number$ (with an optional %0Nd width).
func expand(t string, xr xmlRep, n int64) string {
	t = strings.ReplaceAll(t, "$RepresentationID$", xr.ID)
	t = strings.ReplaceAll(t, "$Bandwidth$", xr.Bandwidth)
	t = numberRe.ReplaceAllStringFunc(t, func(m string) string {
		w := numberRe.FindStringSubmatch(m)[2]
		if w == "" {
			return strconv.FormatInt(n, 10)
		}
		return fmt.Sprintf("%0*d", int(w[0]-'0'), n)
	})
	return strings.ReplaceAll(t, "$$", "$")
}

func segDuration(timescale, duration, where string) (time.Duration, error) {
	ts := int64(1)
	if timescale != "" {
		v, err := strconv.ParseInt(timescale, 10, 64)
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("dash: %s@timescale=%q: want a positive integer", where, timescale)
		}
		ts = v
	}
	d, err := strconv.ParseInt(duration, 10, 64)
	if err != nil || d <= 0 || d/ts > int64(time.Hour/time.Second) {
		return 0, fmt.Errorf("dash: %s@duration=%q: want a positive integer of at most an hour", where, duration)
	}
	return time.Duration(float64(d) / float64(ts) * float64(time.Second)), nil
}

// segment resolves a media URL; a mediaRange must cover the whole file from
// byte 0 (it is the size, not a cut of a larger file: the fetchers ask for
// the URL, not a range of it).
func segment(base *url.URL, ref, rng, where string) (Segment, error) {
	if ref == "" {
		return Segment{}, fmt.Errorf("dash: %s: empty URL", where)
	}
	u, err := resolve(base, ref, where)
	if err != nil {
		return Segment{}, err
	}
	s := Segment{URL: u.String()}
	if rng != "" {
		a, b, ok := strings.Cut(rng, "-")
		first, err1 := strconv.ParseInt(a, 10, 64)
		last, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || first != 0 || last < 0 {
			return Segment{}, fmt.Errorf("dash: %s range %q: want \"0-LAST\" over the whole file", where, rng)
		}
		s.Size = last + 1
	}
	return s, nil
}

func resolve(base *url.URL, ref, where string) (*url.URL, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return base, nil
	}
	u, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("dash: %s %q: %w", where, ref, err)
	}
	if base == nil {
		return u, nil
	}
	return base.ResolveReference(u), nil
}

var isoRe = regexp.MustCompile(`^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?$`)

// parseISODuration reads the xs:duration forms MPDs use (PT#H#M#.#S).
func parseISODuration(s string) (time.Duration, error) {
	m := isoRe.FindStringSubmatch(s)
	if m == nil || s == "PT" {
		return 0, fmt.Errorf("want PT[nH][nM][n.nS]")
	}
	var d float64
	for i, unit := range []float64{3600, 60, 1} {
		if m[i+1] != "" {
			v, _ := strconv.ParseFloat(m[i+1], 64)
			d += v * unit
		}
	}
	if d <= 0 || d > 7*24*3600 {
		return 0, fmt.Errorf("want a positive duration of at most a week")
	}
	return time.Duration(d * float64(time.Second)), nil
}
