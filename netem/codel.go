package netem

import (
	"math"
	"time"
)

// CoDel is a FIFO managed by CoDel (RFC 8289): when packets have waited more
// than Target for at least Interval, it drops at dequeue, at intervals
// shrinking with the square root of the drop count, until the sojourn time
// falls below Target. A short burst is let through; a standing queue is not.
// Arrivals beyond the limit are dropped at the tail.
type CoDel struct {
	q        fifo
	lim      limit
	target   int64
	interval int64

	firstAbove int64 // when the sojourn time will have been above target for interval; 0: it is not above
	dropNext   int64
	count      int
	lastCount  int
	dropping   bool
}

// NewCoDel returns a CoDel queue limited to packets packets and bytes bytes (0:
// no limit in that dimension).
func NewCoDel(packets, bytes int, target, interval time.Duration) *CoDel {
	return &CoDel{lim: limit{packets, bytes}, target: int64(target), interval: int64(interval)}
}

func (c *CoDel) Enqueue(p *Packet, now int64, drops []*Packet) []*Packet {
	if !c.lim.holds(c.q.r.len()+1, c.q.bytes+len(p.Data)) {
		return append(drops, p)
	}
	c.q.push(p)
	return drops
}

// doDequeue pops the head and tells whether CoDel may drop it.
func (c *CoDel) doDequeue(now int64) (p *Packet, okToDrop bool) {
	if c.q.r.len() == 0 {
		c.firstAbove = 0
		return nil, false
	}
	p = c.q.pop()
	// One MTU or less queued cannot be a standing queue worth dropping from.
	if now-p.Arrival < c.target || c.q.bytes <= MTU {
		c.firstAbove = 0
		return p, false
	}
	if c.firstAbove == 0 {
		c.firstAbove = now + c.interval
		return p, false
	}
	return p, now >= c.firstAbove
}

func (c *CoDel) controlLaw(t int64) int64 {
	return t + int64(float64(c.interval)/math.Sqrt(float64(c.count)))
}

func (c *CoDel) Dequeue(now int64, drops []*Packet) (*Packet, []*Packet) {
	p, ok := c.doDequeue(now)
	if p == nil {
		c.dropping = false
		return nil, drops
	}
	if c.dropping {
		if !ok {
			c.dropping = false
		}
		for c.dropping && now >= c.dropNext {
			drops = append(drops, p)
			c.count++
			p, ok = c.doDequeue(now)
			if !ok {
				c.dropping = false
			} else {
				c.dropNext = c.controlLaw(c.dropNext)
			}
		}
	} else if ok {
		drops = append(drops, p)
		p, _ = c.doDequeue(now)
		c.dropping = true
		// Resume near the previous drop rate if we were dropping recently.
		delta := c.count - c.lastCount
		if delta > 1 && now-c.dropNext < 16*c.interval {
			c.count = delta
		} else {
			c.count = 1
		}
		c.dropNext = c.controlLaw(now)
		c.lastCount = c.count
	}
	return p, drops
}

func (c *CoDel) Len() int   { return c.q.r.len() }
func (c *CoDel) Bytes() int { return c.q.bytes }
func (c *CoDel) String() string {
	return withArgs(QueueCoDel, c.lim.String(), "target="+time.Duration(c.target).String(), "interval="+time.Duration(c.interval).String())
}
