package netem

import (
	"io"
	"testing"
	"time"
)

// benchLink measures Enqueue plus Dequeue per packet in steady state: 1500 B
// packets offered at 110% of a 100 Mbit/s link (so the queue stays full and
// drops), from 16 flows, one Dequeue per arrival, as the testbed calls it.
func benchLink(b *testing.B, cfg LinkConfig, log *Log) {
	l, err := NewLink(cfg, 1, log)
	if err != nil {
		b.Fatal(err)
	}
	// The caller recycles delivered and dropped packets, as the testbed does.
	var pool []*Packet
	l.SetDropHook(func(p *Packet) { pool = append(pool, p) })
	get := func() *Packet {
		if n := len(pool); n > 0 {
			p := pool[n-1]
			pool = pool[:n-1]
			return p
		}
		return pkt(1500, 0)
	}
	const gap = 1500 * 8 * 1000 / 110 // ns between arrivals at 110 Mbit/s
	var out []*Packet
	now := int64(0)
	step := func(i int) {
		p := get()
		p.Flow = uint64(i % 16)
		l.Enqueue(p, now)
		out = l.Dequeue(now, out[:0])
		pool = append(pool, out...)
		now += gap
	}
	for i := range 20000 { // reach steady state: queue full, pools warm
		step(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		step(i)
	}
}

func BenchmarkLinkDropTail(b *testing.B) {
	benchLink(b, LinkConfig{RateBps: 100e6, Delay: 10 * time.Millisecond}, nil)
}

func BenchmarkLinkFQ(b *testing.B) {
	benchLink(b, LinkConfig{RateBps: 100e6, Delay: 10 * time.Millisecond, Queue: QueueConfig{Kind: QueueFQ}}, nil)
}

func BenchmarkLinkCoDel(b *testing.B) {
	benchLink(b, LinkConfig{RateBps: 100e6, Delay: 10 * time.Millisecond, Queue: QueueConfig{Kind: QueueCoDel}}, nil)
}

func BenchmarkLinkLossLogged(b *testing.B) {
	benchLink(b, LinkConfig{RateBps: 100e6, Delay: 10 * time.Millisecond, Loss: Bernoulli(0.015)}, NewLog(io.Discard))
}

func BenchmarkLinkTrace(b *testing.B) {
	s, err := LoadTrace(sharedTraces + "/TMobile-LTE-short.down")
	if err != nil {
		b.Skipf("shared traces not available: %v", err)
	}
	benchLink(b, LinkConfig{Trace: s, Delay: 10 * time.Millisecond}, nil)
}

func BenchmarkFlowHash(b *testing.B) {
	p := ipv4("10.0.0.1", "10.0.0.2", protoTCP, 40000, 443)
	b.ReportAllocs()
	for b.Loop() {
		FlowHash(p)
	}
}
