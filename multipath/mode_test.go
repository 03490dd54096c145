package multipath

import (
	"testing"
	"time"

	"github.com/shunt-net/shunt/estimate"
)

// outage is a path at bps whose link sends nothing in [from, to).
func outage(bps float64, from, to time.Duration) []rateStep {
	return []rateStep{{0, bps}, {from, 0}, {to, bps}}
}

// switchesOf lists the mode's changes of path as (from, to, why).
func switchesOf(s *Scheduler) []Switch { return s.Switches() }

// Handover: the primary carries everything while it works; when it stalls
// the standby takes its outstanding range within HandoverAfter (+ a round
// trip), and the work goes back once the primary answers a PING again.
// Every byte is delivered once (the sim checks), and no byte comes on the
// standby before the stall.
func TestHandoverStallAndBack(t *testing.T) {
	const size = 8 << 20
	var firstOnStandby time.Duration
	trace := func(now time.Duration, s *Scheduler, acts []Action) {
		for _, a := range acts {
			if a.Kind == Deliver && a.Path == 1 && firstOnStandby == 0 {
				firstOnStandby = now
			}
		}
	}
	paths := []simPath{
		{Rate: outage(mbit(10), 2*time.Second, 5*time.Second), RTT: 28 * time.Millisecond, SendBuf: 64 << 10},
		{Rate: steady(mbit(5)), RTT: 65 * time.Millisecond, SendBuf: 64 << 10},
	}
	var sched *Scheduler
	r, err := runSimWith(simConfig{Size: size, Paths: paths, Sched: Config{Size: size, Mode: Handover}, Trace: trace}, true, func(s *Scheduler) { sched = s })
	if err != nil {
		t.Fatal(err)
	}
	sw := switchesOf(sched)
	t.Logf("done %v, delivered %v, tail %v, first byte on the standby %v, switches %+v", r.Done, r.Delivered, r.Wasted, firstOnStandby, sw)
	if len(sw) != 3 || sw[0].To != 0 || sw[0].Why != "start" || sw[1].From != 0 || sw[1].To != 1 || sw[1].Why != "stall" || sw[2].To != 0 || sw[2].Why != "back" {
		t.Fatalf("switches %+v, want start on 0, stall to 1, back to 0", sw)
	}
	// The primary's last byte before the outage left the link before 2 s
	// and arrived 14 ms later; the stall is declared HandoverAfter after it,
	// at the next event (the standby's PING answers, every 100 ms).
	stall := sw[1].At.Sub(epoch)
	if stall < 2*time.Second+DefaultHandoverAfter || stall > 2*time.Second+DefaultHandoverAfter+150*time.Millisecond {
		t.Errorf("stall declared at %v, want about 2 s + %v", stall, DefaultHandoverAfter)
	}
	if firstOnStandby < stall || firstOnStandby > stall+200*time.Millisecond {
		t.Errorf("first byte on the standby at %v, want within a response delay of the handover at %v", firstOnStandby, stall)
	}
	back := sw[2].At.Sub(epoch)
	if back < 5*time.Second || back > 5*time.Second+500*time.Millisecond {
		t.Errorf("back to the primary at %v, want soon after its outage ends at 5 s", back)
	}
	if r.Delivered[1] == 0 || r.Delivered[0] <= r.Delivered[1] {
		t.Errorf("delivered %v: want the standby to carry only the outage's share", r.Delivered)
	}
	// Going back cuts the standby where its credited bytes end: at most a
	// credit's worth arrives past the cut.
	if r.Wasted[1] > 256<<10 {
		t.Errorf("standby tail bytes %d: going back should cut at the committed offset", r.Wasted[1])
	}
}

// Handover without a stall is the primary alone.
func TestHandoverPrimaryOnly(t *testing.T) {
	for _, size := range []int64{-1, 3 << 20} {
		r, err := runSim(simConfig{Size: 3 << 20, Paths: fig8Paths(5, 10, 64<<10), Sched: Config{Size: size, Mode: Handover}}, true)
		if err != nil {
			t.Fatal(err)
		}
		if r.Delivered[1] != 0 || r.Requests[1] != 0 {
			t.Errorf("size %d: delivered %v requests %v, want everything on the primary", size, r.Delivered, r.Requests)
		}
	}
}

// Interactive: the whole object on the path expected to finish first, by
// the estimates, and no splitting.
func TestInteractivePicksFastest(t *testing.T) {
	prior := []estimate.Path{{Bandwidth: mbit(5), RTT: 28 * time.Millisecond}, {Bandwidth: mbit(10), RTT: 65 * time.Millisecond}}
	for _, v := range []struct {
		name string
		size int64
		want PathID
	}{
		// 10 KB: 28 ms + 16 ms beats 65 ms + 8 ms.
		{"small", 10_000, 0},
		// 1 MB: 1.7 s at 5 Mbit/s, 0.9 s at 10.
		{"large", 1 << 20, 1},
	} {
		s := mustNew(t, Config{Paths: 2, Size: v.size, Mode: Interactive, Prior: prior})
		req := kinds(s.OnStart(ms(0)), Request)
		if len(req) != 1 || req[0].Path != v.want || req[0].Start != 0 || req[0].End != v.size {
			t.Errorf("%s: requests %v, want the whole object on path %d", v.name, req, v.want)
		}
	}
	// Through a whole download on Figure 8's paths: one request, no others.
	paths := fig8Paths(5, 10, 64<<10)
	r, err := runSim(simConfig{Size: 2 << 20, Paths: paths, Sched: Config{Size: 2 << 20, Mode: Interactive, Prior: exactPrior(paths)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests[0] != 0 || r.Requests[1] != 1 || r.Delivered[1] != 2<<20 {
		t.Errorf("requests %v delivered %v, want one request on the 10 Mbit/s path", r.Requests, r.Delivered)
	}
	// Without estimates: the path with the least RTT seen, then the first.
	s := mustNew(t, Config{Paths: 2, Size: -1, Mode: Interactive, Prior: []estimate.Path{{RTT: 80 * time.Millisecond}, {RTT: 20 * time.Millisecond}}})
	if req := kinds(s.OnStart(ms(0)), Request); len(req) != 1 || req[0].Path != 1 || req[0].End != -1 {
		t.Errorf("no bandwidths: requests %v, want the whole object on path 1 (least RTT)", req)
	}
}

// Interactive moves the rest of the object when its path dies, and only
// then.
func TestInteractiveFailover(t *testing.T) {
	paths := fig8Paths(5, 10, 64<<10)
	paths[1].DownAt = 500 * time.Millisecond
	var sched *Scheduler
	r, err := runSimWith(simConfig{Size: 2 << 20, Paths: paths, Sched: Config{Size: 2 << 20, Mode: Interactive, Prior: exactPrior(paths)}}, true, func(s *Scheduler) { sched = s })
	if err != nil {
		t.Fatal(err)
	}
	sw := switchesOf(sched)
	if len(sw) != 2 || sw[1].From != 1 || sw[1].To != 0 || sw[1].Why != "down" || r.Requests[0] != 1 {
		t.Errorf("switches %+v, requests %v: want 1 then 0 once 1 is down, one request each", sw, r.Requests)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Aggregate, Handover, Interactive} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMode("fast"); err == nil {
		t.Error("ParseMode(fast): no error")
	}
}
