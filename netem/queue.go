package netem

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Queue is a bottleneck queue discipline. Packets it drops, including possibly
// the one being enqueued, are appended to drops so the link can log them; the
// drops slice is the caller's scratch space and is reused across calls.
type Queue interface {
	// Enqueue adds p, which arrived at now (ns).
	Enqueue(p *Packet, now int64, drops []*Packet) []*Packet
	// Dequeue removes the packet to transmit at now, or returns nil if none is
	// left. An AQM discipline may drop packets on the way (CoDel does).
	Dequeue(now int64, drops []*Packet) (*Packet, []*Packet)
	Len() int   // packets queued
	Bytes() int // bytes queued
	// String is the discipline in ParseQueue syntax.
	String() string
}

// Queue kinds, as named in QueueConfig.Kind and ParseQueue.
const (
	QueueDropTail = "droptail"
	QueueFQ       = "fq"
	QueueCoDel    = "codel"
)

// DefaultQueuePackets is the queue limit when none is given: counted in packets,
// like Linux's pfifo and txqueuelen (whose default is also 1000), so results
// compare with real routers and hosts; a byte limit is available for
// experiments that need the buffer in BDP terms.
const DefaultQueuePackets = 1000

// DefaultQuantum is the fair queue's DRR quantum: one full-size packet at MTU
// 1500 per flow and round.
const DefaultQuantum = 1500

// CoDel defaults from RFC 8289.
const (
	DefaultCoDelTarget   = 5 * time.Millisecond
	DefaultCoDelInterval = 100 * time.Millisecond
)

// QueueConfig chooses the bottleneck queue discipline and its limit. The zero
// value is a drop-tail FIFO of DefaultQueuePackets packets.
type QueueConfig struct {
	Kind string // QueueDropTail (default when empty), QueueFQ or QueueCoDel
	// Limits; a packet is admitted only if both hold. Both zero means
	// Packets = DefaultQueuePackets.
	Packets int
	Bytes   int
	Quantum int // fq: bytes a flow may send per round (default DefaultQuantum)
	// codel: sojourn target and interval (defaults DefaultCoDelTarget and
	// DefaultCoDelInterval).
	Target   time.Duration
	Interval time.Duration
}

// New builds the queue the configuration describes.
func (c QueueConfig) New() (Queue, error) {
	c, err := c.normalize()
	if err != nil {
		return nil, err
	}
	lim := limit{packets: c.Packets, bytes: c.Bytes}
	switch c.Kind {
	case QueueDropTail:
		return NewDropTail(lim.packets, lim.bytes), nil
	case QueueFQ:
		return NewFQ(lim.packets, lim.bytes, c.Quantum), nil
	default:
		return NewCoDel(lim.packets, lim.bytes, c.Target, c.Interval), nil
	}
}

// normalize fills in defaults and rejects what no queue can honour.
func (c QueueConfig) normalize() (QueueConfig, error) {
	if c.Kind == "" {
		c.Kind = QueueDropTail
	}
	if c.Kind != QueueDropTail && c.Kind != QueueFQ && c.Kind != QueueCoDel {
		return c, fmt.Errorf("queue %q: unknown kind (want droptail, fq or codel)", c.Kind)
	}
	if c.Packets < 0 || c.Bytes < 0 {
		return c, fmt.Errorf("queue %s: negative limit (packets=%d bytes=%d)", c.Kind, c.Packets, c.Bytes)
	}
	if c.Packets == 0 && c.Bytes == 0 {
		c.Packets = DefaultQueuePackets
	}
	if c.Kind != QueueFQ && c.Quantum != 0 {
		return c, fmt.Errorf("queue %s: quantum applies to fq only", c.Kind)
	}
	if c.Kind != QueueCoDel && (c.Target != 0 || c.Interval != 0) {
		return c, fmt.Errorf("queue %s: target and interval apply to codel only", c.Kind)
	}
	if c.Kind == QueueFQ {
		if c.Quantum == 0 {
			c.Quantum = DefaultQuantum
		}
		// A tiny quantum makes DRR loop many rounds per packet.
		if c.Quantum < 64 || c.Quantum > 1<<20 {
			return c, fmt.Errorf("queue fq: quantum %d out of range [64, 1048576]", c.Quantum)
		}
	}
	if c.Kind == QueueCoDel {
		if c.Target == 0 {
			c.Target = DefaultCoDelTarget
		}
		if c.Interval == 0 {
			c.Interval = DefaultCoDelInterval
		}
		if c.Target < 0 || c.Interval <= 0 || c.Target > c.Interval {
			return c, fmt.Errorf("queue codel: need 0 <= target <= interval, got target=%v interval=%v", c.Target, c.Interval)
		}
	}
	return c, nil
}

// String is the configuration in ParseQueue syntax, with defaults filled in.
func (c QueueConfig) String() string {
	n, err := c.normalize()
	if err != nil {
		return "invalid(" + err.Error() + ")"
	}
	var b strings.Builder
	b.WriteString(n.Kind)
	sep := byte(':')
	add := func(k, v string) {
		b.WriteByte(sep)
		sep = ','
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	if n.Packets != 0 {
		add("packets", strconv.Itoa(n.Packets))
	}
	if n.Bytes != 0 {
		add("bytes", strconv.Itoa(n.Bytes))
	}
	if n.Kind == QueueFQ {
		add("quantum", strconv.Itoa(n.Quantum))
	}
	if n.Kind == QueueCoDel {
		add("target", n.Target.String())
		add("interval", n.Interval.String())
	}
	return b.String()
}

// limit bounds a queue; zero in a dimension means unbounded in it.
type limit struct {
	packets, bytes int
}

func (l limit) holds(packets, bytes int) bool {
	return (l.packets == 0 || packets <= l.packets) && (l.bytes == 0 || bytes <= l.bytes)
}

func (l limit) String() string {
	var s []string
	if l.packets != 0 {
		s = append(s, "packets="+strconv.Itoa(l.packets))
	}
	if l.bytes != 0 {
		s = append(s, "bytes="+strconv.Itoa(l.bytes))
	}
	return strings.Join(s, ",")
}

// fifo is a packet FIFO that counts its bytes.
type fifo struct {
	r     ring[*Packet]
	bytes int
}

func (f *fifo) push(p *Packet) {
	f.r.push(p)
	f.bytes += len(p.Data)
}

func (f *fifo) pop() *Packet {
	p := f.r.pop()
	f.bytes -= len(p.Data)
	return p
}

// DropTail is a FIFO that drops arriving packets when full.
type DropTail struct {
	q   fifo
	lim limit
}

// NewDropTail returns a FIFO limited to packets packets and bytes bytes (0:
// no limit in that dimension).
func NewDropTail(packets, bytes int) *DropTail {
	return &DropTail{lim: limit{packets, bytes}}
}

func (d *DropTail) Enqueue(p *Packet, now int64, drops []*Packet) []*Packet {
	if !d.lim.holds(d.q.r.len()+1, d.q.bytes+len(p.Data)) {
		return append(drops, p)
	}
	d.q.push(p)
	return drops
}

func (d *DropTail) Dequeue(now int64, drops []*Packet) (*Packet, []*Packet) {
	if d.q.r.len() == 0 {
		return nil, drops
	}
	return d.q.pop(), drops
}

func (d *DropTail) Len() int       { return d.q.r.len() }
func (d *DropTail) Bytes() int     { return d.q.bytes }
func (d *DropTail) String() string { return withArgs(QueueDropTail, d.lim.String()) }

// withArgs joins a queue kind and its comma-separated arguments.
func withArgs(kind string, args ...string) string {
	var nonEmpty []string
	for _, a := range args {
		if a != "" {
			nonEmpty = append(nonEmpty, a)
		}
	}
	if len(nonEmpty) == 0 {
		return kind
	}
	return kind + ":" + strings.Join(nonEmpty, ",")
}
