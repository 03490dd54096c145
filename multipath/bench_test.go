package multipath

import (
	"testing"
	"time"
)

// BenchmarkOnData is the per-event cost in a download's steady state: two
// paths receiving 16 KiB DATA frames, Algorithm 1 evaluated every time.
func BenchmarkOnData(b *testing.B) {
	s := mustNew(b, Config{Paths: 2, Size: 1 << 40})
	s.OnStart(ms(0))
	for id := StreamID(1); id <= 2; id++ {
		if _, err := s.OnHeaders(ms(30), id, 206, 1<<40); err != nil {
			b.Fatal(err)
		}
	}
	s.OnRTT(ms(30), 0, 28*time.Millisecond)
	s.OnRTT(ms(30), 1, 65*time.Millisecond)
	now := 30 * time.Millisecond
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += 13 * time.Microsecond
		s.OnData(epoch.Add(now), StreamID(1+i%2), 16<<10)
	}
}

// BenchmarkSimDownload is a whole 4 MB download on Figure 8's (5,10) Mbit/s
// paths through the simulated network, scheduler and simulator together.
func BenchmarkSimDownload(b *testing.B) {
	c := simConfig{Size: 4 << 20, Paths: fig8Paths(5, 10, 64<<10), Sched: Config{Size: -1}}
	events := 0
	for i := 0; i < b.N; i++ {
		r, err := runSim(c, false)
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
