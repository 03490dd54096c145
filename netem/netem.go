// Package netem is the user-space link emulator's logic: loss models, bottleneck
// queues, rate schedules (constant, mahimahi traces, step traces) and a delay
// line, composed into one direction of a link. It does no I/O and reads no clock:
// callers pass the time in, so every behaviour is testable with a fake clock.
// Package testbed moves real packets (TUN devices in namespaces) through it.
//
// CONTRACT NOTE (remove when implemented): Packet, LinkConfig, NewLink and the
// Link methods below are what package testbed relies on.
package netem

import "time"

// Packet is one IP packet crossing the emulated link.
type Packet struct {
	Data    []byte
	Arrival int64  // ns on the caller's monotonic clock, set by Enqueue's caller
	Flow    uint64 // flow hash (addresses, protocol, ports) for fair queueing
}

// LinkConfig describes one direction of a link. Zero values: no delay, unlimited
// rate, no loss, drop-tail queue with the default limit.
type LinkConfig struct {
	Delay time.Duration // one-way propagation delay
	// Exactly one of RateBps (constant) or Trace (variable) may be set.
	RateBps float64
	Trace   *Schedule
	Loss    LossConfig
	Queue   QueueConfig
}

// LossConfig is the random loss model applied to packets entering the link.
type LossConfig struct{}

// QueueConfig chooses the bottleneck queue discipline and its limit.
type QueueConfig struct{}

// Schedule is a bandwidth schedule: delivery opportunities over time.
type Schedule struct{}

// Link is one direction of an emulated link. Not safe for concurrent use.
type Link struct{}

// NewLink builds a link; seed drives the loss model so runs are repeatable.
func NewLink(cfg LinkConfig, seed int64, log *Log) (*Link, error) { return &Link{}, nil }

// Enqueue accepts a packet arriving at time now (ns).
func (l *Link) Enqueue(p *Packet, now int64) {}

// Dequeue appends to out the packets whose delivery time is <= now and returns it.
func (l *Link) Dequeue(now int64, out []*Packet) []*Packet { return out }

// NextEvent is the earliest time (ns) at which Dequeue may return a packet or
// the link's state may change, or -1 if nothing is pending.
func (l *Link) NextEvent() int64 { return -1 }

// Log records link events, mm-link style; nil disables logging.
type Log struct{}
