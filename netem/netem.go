// Package netem is the user-space link emulator's logic: loss models, bottleneck
// queues, rate schedules (constant, mahimahi traces, step traces) and a delay
// line, composed into one direction of a link. It does no I/O on packets and
// reads no clock: callers pass the time in (int64 ns on their monotonic clock),
// so every behaviour is testable with a fake clock. Package testbed moves real
// packets (TUN devices in namespaces) through it.
//
// # Pipeline
//
// A packet entering a Link goes through, in order:
//
//  1. the loss model, at arrival (drop cause "loss");
//  2. the bottleneck queue: drop-tail FIFO, per-flow fair queueing (DRR) or
//     CoDel (drop cause "queue" when full; CoDel also drops at dequeue, cause
//     "codel");
//  3. the transmitter, which drains the queue at the rate schedule: unlimited,
//     a constant rate with exact per-byte service times (1500 B at 10 Mbit/s
//     take exactly 1.2 ms), a mahimahi delivery-opportunity trace, or a step
//     trace;
//  4. the delay line: the packet is delivered the one-way delay after the
//     transmitter sent its last byte; with jitter, a delay drawn per packet
//     around that mean, never before an earlier packet (JitterConfig: packets
//     keep their order).
//
// The link's time 0, from which traces are played, is the first time passed
// to Start, Enqueue or Dequeue.
//
// # Link options as text
//
// Used by `shunt net shell` flags and scenario files:
//
//	rate:  ParseRate      "10Mbit", "100kbit", "1.5Gbit", "64000bit"; units
//	                      bit, kbit, Mbit, Gbit (decimal, case-insensitive),
//	                      optionally written "Mbps" or "Mbit/s"; always bits.
//	       ParseBandwidth a rate as above, "unlimited", "trace:FILE"
//	                      (mahimahi trace), "step:FILE" (step trace), or a
//	                      path (LoadTrace: ".step" files are step traces).
//	delay: ParseDelay     time.ParseDuration syntax, >= 0: "25ms", "1.5ms", "0".
//	loss:  ParseLoss      "1.5%" or "0.015" (Bernoulli), "0" (none), or
//	                      "ge:p=0.01,r=0.3[,k=1][,h=0]" (Gilbert-Elliott; k and
//	                      h default to the simple model's 1 and 0).
//	queue: ParseQueue     "droptail", "droptail:packets=100",
//	                      "droptail:bytes=150000", "fq", "fq:packets=1000,quantum=1500",
//	                      "codel", "codel:target=5ms,interval=100ms,packets=1000".
//	                      packets and bytes apply to every kind; without
//	                      either, the limit is 1000 packets.
//	jitter: ParseJitter   "5ms" or "uniform:5ms" (+/- 5 ms around the delay),
//	                      "normal:5ms" (standard deviation), "0"; at most
//	                      the delay (normal: 3 deviations at most the delay).
//	link:  ParseLinkSpec  the above as space-separated key=value pairs:
//	                      "rate=10Mbit delay=25ms jitter=5ms loss=1.5% queue=codel";
//	                      omitted keys take their zero values (unlimited
//	                      rate, no delay, no loss, default queue).
//
// # Trace formats
//
// Mahimahi (ParseMahimahiTrace): one line per opportunity to send 1500 bytes,
// holding its time in integer ms; repeated times give several opportunities
// in the same ms; the trace wraps with the last line's time as its period.
// Bytes of an opportunity left over by a small packet serve the next queued
// packets at the same time; a packet larger than what is left uses the next
// opportunities; unused bytes are lost. Step (ParseStepTrace): lines
// "TIME_MS RATE_MBIT", first at 0, the last rate held forever.
//
// # Log format
//
// A Log holds one line per event, times in ms since the link's time 0 with
// three decimals, flows as hex flow hashes:
//
//	# shunt netem link log v1
//	# link: rate=10Mbit delay=25ms loss=0 queue=droptail:packets=1000
//	# seed: 1
//	# base timestamp: 1700000000000000000      (time 0, ns on the caller's clock)
//	12.345 + 1500 9f3a...                       arrival: bytes, flow
//	13.545 - 1500 1.200 9f3a...                 departure from the bottleneck:
//	                                            bytes, queueing delay in ms
//	                                            (arrival to last byte sent, so
//	                                            it includes serialisation, as
//	                                            in mm-link), flow
//	14.000 d 1500 queue 9f3a...                 drop: bytes, cause
//	                                            (loss, queue or codel), flow
//
// Every arrival has a "+" line followed later by exactly one "-" or "d" line.
// Delivery is the departure plus the link's fixed delay, so it is not logged
// (with jitter, plus that packet's draw, which the log does not hold).
// ReadLog turns a log into series for plots.
package netem

import (
	"fmt"
	"math"
	"time"
)

// Packet is one IP packet crossing the emulated link.
type Packet struct {
	Data    []byte
	Arrival int64  // ns on the caller's clock; Enqueue sets it to its now
	Flow    uint64 // flow hash (FlowHash) for fair queueing and the log
}

// maxRateBps bounds rates (1 Tbit/s) so that rate arithmetic cannot overflow.
const maxRateBps = 1e12

// LinkConfig describes one direction of a link. Zero values: no delay, unlimited
// rate, no loss, drop-tail queue with the default limit.
type LinkConfig struct {
	Delay  time.Duration // one-way propagation delay (the mean, with jitter)
	Jitter JitterConfig
	// Exactly one of RateBps (constant) or Trace (variable) may be set.
	RateBps float64
	Trace   *Schedule
	Loss    LossConfig
	Queue   QueueConfig
}

// String is the configuration in ParseLinkSpec syntax.
func (c LinkConfig) String() string {
	rate := "unlimited"
	switch {
	case c.Trace != nil:
		rate = c.Trace.String()
	case c.RateBps > 0:
		rate = FormatRate(c.RateBps)
	}
	s := "rate=" + rate + " delay=" + c.Delay.String()
	if c.Jitter.Spread != 0 { // links without jitter keep the text they always had (log headers)
		s += " jitter=" + c.Jitter.String()
	}
	return s + " loss=" + c.Loss.String() + " queue=" + c.Queue.String()
}

func (c LinkConfig) validate() (rateBps int64, err error) {
	if c.Delay < 0 {
		return 0, fmt.Errorf("link: negative delay %v", c.Delay)
	}
	if c.RateBps != 0 && c.Trace != nil {
		return 0, fmt.Errorf("link: both a rate (%v bit/s) and a trace (%s) given", c.RateBps, c.Trace)
	}
	if math.IsNaN(c.RateBps) || c.RateBps < 0 || c.RateBps > maxRateBps {
		return 0, fmt.Errorf("link: rate %v bit/s out of range (0, %g]", c.RateBps, maxRateBps)
	}
	rateBps = int64(math.Round(c.RateBps))
	if c.RateBps > 0 && rateBps == 0 {
		return 0, fmt.Errorf("link: rate %v bit/s rounds to 0", c.RateBps)
	}
	if c.Trace != nil && c.Trace.opps == nil && c.Trace.steps == nil {
		return 0, fmt.Errorf("link: empty trace schedule")
	}
	if err := c.Jitter.Validate(c.Delay); err != nil {
		return 0, err
	}
	return rateBps, c.Loss.validate()
}

// Stats counts a link's packets.
type Stats struct {
	Arrivals, Departures        uint64 // entered; left the bottleneck
	Lost, Overflow, AQM         uint64 // drops by cause: loss, queue, codel
	Queued                      int    // packets waiting in the queue now
	InFlight                    int    // packets sent, waiting out the delay
	ArrivedBytes, DepartedBytes uint64
}

// Link is one direction of an emulated link. Not safe for concurrent use.
type Link struct {
	delay    int64
	jitter   *jitterModel
	loss     *lossModel
	q        Queue
	srv      server
	log      *Log
	desc     string
	seed     int64
	dropHook func(*Packet)

	started bool
	base    int64 // time 0 of the schedules
	now     int64 // latest time seen
	cursor  int64 // the transmitter's time: it is idle or busy up to here
	tx      *Packet
	txEnd   int64
	line    ring[delivery] // in delivery order: at never decreases
	lastAt  int64          // the latest delivery time given out
	drops   []*Packet
	stats   Stats
}

type delivery struct {
	p  *Packet
	at int64
}

// NewLink builds a link; seed drives the loss model so runs are repeatable.
// log may be nil.
func NewLink(cfg LinkConfig, seed int64, log *Log) (*Link, error) {
	rateBps, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	q, err := cfg.Queue.New()
	if err != nil {
		return nil, err
	}
	return &Link{
		delay:  int64(cfg.Delay),
		jitter: newJitterModel(cfg.Jitter, seed),
		loss:   newLossModel(cfg.Loss, seed),
		q:      q,
		srv:    newServer(rateBps, cfg.Trace),
		log:    log,
		desc:   cfg.String(),
		seed:   seed,
	}, nil
}

// SetDropHook makes the link hand every packet it drops to f, e.g. to recycle
// its buffer.
func (l *Link) SetDropHook(f func(*Packet)) { l.dropHook = f }

// Start sets the link's time 0 (where traces begin) to now, if no earlier call
// to Start, Enqueue or Dequeue has set it.
func (l *Link) Start(now int64) {
	if l.started {
		return
	}
	l.started = true
	l.base, l.cursor, l.now = now, now, now
	l.log.begin(now, l.desc, l.seed)
}

// Enqueue accepts a packet arriving at time now (ns).
func (l *Link) Enqueue(p *Packet, now int64) {
	now = l.tick(now)
	l.advance(now)
	p.Arrival = now
	n := len(p.Data)
	l.stats.Arrivals++
	l.stats.ArrivedBytes += uint64(n)
	l.log.arrival(now, n, p.Flow)
	if l.loss.lose() {
		l.stats.Lost++
		l.dropped(p, now, CauseLoss)
		return
	}
	if l.tx == nil && l.q.Len() == 0 {
		l.cursor = now // the transmitter idled until now
	}
	l.drops = l.q.Enqueue(p, now, l.drops[:0])
	for _, d := range l.drops {
		l.stats.Overflow++
		l.dropped(d, now, CauseQueue)
	}
	l.advance(now)
}

func (l *Link) dropped(p *Packet, now int64, cause string) {
	l.log.drop(now, len(p.Data), cause, p.Flow)
	if l.dropHook != nil {
		l.dropHook(p)
	}
}

// Dequeue appends to out the packets whose delivery time is <= now and returns it.
func (l *Link) Dequeue(now int64, out []*Packet) []*Packet {
	now = l.tick(now)
	l.advance(now)
	for l.line.len() > 0 && l.line.peek().at <= now {
		out = append(out, l.line.pop().p)
	}
	return out
}

// tick starts the link if needed and returns now, or the latest time seen if
// now is earlier: callers reading the clock on two threads may hand in times
// slightly out of order, and the link's time must not run backwards.
func (l *Link) tick(now int64) int64 {
	l.Start(now)
	if now < l.now {
		return l.now
	}
	l.now = now
	return now
}

// advance runs the transmitter up to now: it finishes the packet in
// transmission and starts the next ones, in time order.
func (l *Link) advance(now int64) {
	for {
		if l.tx != nil {
			if l.txEnd > now {
				return
			}
			p := l.tx
			l.tx = nil
			l.cursor = l.txEnd
			l.stats.Departures++
			l.stats.DepartedBytes += uint64(len(p.Data))
			l.log.departure(l.txEnd, len(p.Data), l.txEnd-p.Arrival, p.Flow)
			// Not before the packet ahead: jitter never reorders.
			at := max(l.txEnd+l.delay+l.jitter.draw(), l.lastAt)
			l.lastAt = at
			l.line.push(delivery{p, at})
		}
		if l.q.Len() == 0 {
			return
		}
		start := l.nextStart()
		if start > now {
			return
		}
		var p *Packet
		p, l.drops = l.q.Dequeue(start, l.drops[:0])
		for _, d := range l.drops { // only CoDel drops at dequeue
			l.stats.AQM++
			l.dropped(d, start, CauseCoDel)
		}
		l.cursor = start
		if p == nil {
			return
		}
		l.tx = p
		if l.txEnd = l.srv.transmit(start-l.base, len(p.Data)); l.txEnd != never {
			l.txEnd += l.base
		}
	}
}

// nextStart is when the transmitter can begin its next packet.
func (l *Link) nextStart() int64 {
	t := l.srv.next(l.cursor - l.base)
	if t == never {
		return never
	}
	return t + l.base
}

// NextEvent is the earliest time (ns) at which Dequeue may return a packet or
// the link's state may change, or -1 if nothing is pending. It is exact: the
// caller can sleep until then. A time at or before the last call's now means
// packets are ready at once.
func (l *Link) NextEvent() int64 {
	ev := int64(never)
	if l.line.len() > 0 {
		ev = l.line.peek().at
	}
	if l.tx != nil {
		ev = min(ev, l.txEnd)
	} else if l.q.Len() > 0 {
		ev = min(ev, l.nextStart())
	}
	if ev == never {
		return -1
	}
	return ev
}

// Stats returns the link's counters.
func (l *Link) Stats() Stats {
	s := l.stats
	s.Queued = l.q.Len()
	s.InFlight = l.line.len()
	return s
}
