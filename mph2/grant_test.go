package mph2

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shunt-net/shunt/multipath"
)

// A server held by flow control (nginx) writes what each WINDOW_UPDATE
// allows as a short DATA frame in a TLS record of its own: credit given
// per DATA frame read put 0.15 % more bytes on the wire than one stream
// whose window never binds ((5,5) 32 MB from nginx, 27 Nov: 2941 updates,
// 3494 TLS records against curl's 2435). On a fake clock, two 5 Mbit/s
// paths (RTT 28 and 65 ms) each deliver their streams in 8 KiB DATA frames
// while their credit lasts: credit short of a stream's end moves in whole
// 16 KiB units and steps of a quarter of the path's lead at least, yet
// never falls below what the path delivers in a round trip (the server
// never waits for credit), and every stream's credit reaches its end.
func TestGrantSteps(t *testing.T) {
	const size, frame = 32_000_000, 8192
	rtts := []time.Duration{28 * time.Millisecond, 65 * time.Millisecond}
	const rate = 5e6 / 8 // bytes per second
	s, err := multipath.New(multipath.Config{Paths: 2, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	d := newDownload(context.Background(), &Client{Paths: []Path{{Name: "wifi"}, {Name: "lte"}}}, nil, nil, Options{}, s, now)
	var order []*stream // by request
	var exec func(acts []multipath.Action)
	exec = func(acts []multipath.Action) {
		for _, a := range slices.Clone(acts) {
			switch a.Kind {
			case multipath.Request:
				st := &stream{id: a.Stream, path: int(a.Path), start: a.Start, end: a.End, first: a.Start, limit: -1, manual: true}
				w := max(min(s.FirstCredit(now, a.Stream), a.End-a.Start), flowInitialWindow)
				st.granted = w
				s.OnGrant(st.id, a.Start+w)
				d.streams[st.id] = st
				order = append(order, st)
				acts, err := s.OnHeaders(now, st.id, 206, size)
				if err != nil {
					t.Fatal(err)
				}
				exec(acts)
			case multipath.SetEnd:
				if st := d.streams[a.Stream]; st != nil {
					st.limit = a.End - a.Start
				}
			case multipath.Reset:
				delete(d.streams, a.Stream)
			}
		}
	}
	exec(s.OnStart(now))
	var updates, short int
	next := []time.Time{now, now} // when each path delivers its next frame
	ping := []time.Time{now, now} // its next RTT sample
	for step := 0; !s.Finished(); step++ {
		if step > 1e6 {
			t.Fatal("no end")
		}
		p := 0
		if next[1].Before(next[0]) {
			p = 1
		}
		now = next[p]
		if !now.Before(ping[p]) {
			exec(s.OnRTT(now, multipath.PathID(p), rtts[p]))
			ping[p] = now.Add(100 * time.Millisecond)
		}
		var st *stream
		for _, x := range order {
			if d.streams[x.id] == x && x.path == p && x.recv < x.bodyEnd() {
				st = x
				break
			}
		}
		if st == nil {
			next[p] = now.Add(time.Millisecond)
			continue
		}
		n := min(frame, st.bodyEnd()-st.recv)
		if st.granted-st.recv < n {
			t.Fatalf("path %d at %v: stream %d [%d,%d) waits for credit at %d (granted %d)", p, now.Sub(time.Unix(1000, 0)), st.id, st.start, st.start+st.bodyEnd(), st.start+st.recv, st.start+st.granted)
		}
		st.recv += n
		exec(s.OnData(now, st.id, n))
		// What the server may send beyond what arrived must cover a round
		// trip of the path, or the link idles.
		if lead, bdp := st.granted-st.recv, int64(rate*rtts[p].Seconds()); st.recv < st.bodyEnd() && st.limit < 0 && lead < bdp {
			t.Errorf("path %d: stream %d's lead %d under a round trip's %d bytes", p, st.id, lead, bdp)
		}
		for _, x := range order {
			if d.streams[x.id] != x || x.path != p {
				continue
			}
			target := d.grantTarget(now, x)
			if target <= x.granted {
				continue
			}
			inc := target - x.granted
			updates++
			if target != x.limit && (inc%grantUnit != 0 || inc < s.Ahead(now, multipath.PathID(p))/4/grantUnit*grantUnit) {
				short++
				if short <= 3 {
					t.Errorf("path %d stream %d: WINDOW_UPDATE of %d bytes short of its end (lead %d)", p, x.id, inc, s.Ahead(now, multipath.PathID(p)))
				}
			}
			x.granted = target
			s.OnGrant(x.id, x.first+x.granted)
		}
		next[p] = now.Add(time.Duration(float64(n) / rate * float64(time.Second)))
	}
	if short > 0 {
		t.Errorf("%d of %d WINDOW_UPDATEs short of a stream's end were under a step", short, updates)
	}
	// Steps of a quarter of the lead (some 150-220 KB here) rounded down to
	// whole units, 32 and 48 KiB: about 32e6 / 40e3 updates, where one per
	// frame read was 3900.
	if updates > size/(32<<10) {
		t.Errorf("%d WINDOW_UPDATEs for %d bytes", updates, size)
	}
	t.Logf("%d WINDOW_UPDATEs for %d bytes in %d streams", updates, size, len(order))
}

// bodyEnd is the stream's last byte, past its first, once known: SetEnd's
// limit, else its requested end.
func (st *stream) bodyEnd() int64 {
	if st.limit >= 0 {
		return st.limit
	}
	return st.end - st.start
}
