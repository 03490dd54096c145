package netem

import "strconv"

// FQ is per-flow fair queueing: one FIFO per Packet.Flow, served by deficit
// round robin (each flow may send Quantum bytes per round), with a limit
// shared by all flows. When it is exceeded, the packet at the head of the
// flow with the most bytes queued is dropped, as Linux fq_codel does: the
// heaviest flow pays for the overflow and learns of it soonest.
type FQ struct {
	lim     limit
	quantum int
	flows   map[uint64]*flowQueue
	active  ring[*flowQueue] // round-robin order; may hold flows emptied by drops
	free    []*flowQueue
	n       int
	bytes   int
}

type flowQueue struct {
	id      uint64
	q       fifo
	deficit int
	active  bool
}

// NewFQ returns a fair queue limited to packets packets and bytes bytes in
// total (0: no limit in that dimension), serving quantum bytes per flow and
// round.
func NewFQ(packets, bytes, quantum int) *FQ {
	return &FQ{lim: limit{packets, bytes}, quantum: max(quantum, 1), flows: make(map[uint64]*flowQueue)}
}

func (q *FQ) Enqueue(p *Packet, now int64, drops []*Packet) []*Packet {
	f := q.flows[p.Flow]
	if f == nil {
		if n := len(q.free); n > 0 {
			f = q.free[n-1]
			q.free = q.free[:n-1]
		} else {
			f = new(flowQueue)
		}
		f.id = p.Flow
		q.flows[p.Flow] = f
	}
	f.q.push(p)
	q.n++
	q.bytes += len(p.Data)
	if !f.active {
		f.active = true
		f.deficit = q.quantum
		q.active.push(f)
	}
	for q.n > 0 && !q.lim.holds(q.n, q.bytes) {
		fat := q.longest()
		d := fat.q.pop()
		q.n--
		q.bytes -= len(d.Data)
		drops = append(drops, d)
	}
	return drops
}

// longest is the active flow with the most bytes queued.
func (q *FQ) longest() *flowQueue {
	var fat *flowQueue
	for i := range q.active.len() {
		if f := q.active.at(i); fat == nil || f.q.bytes > fat.q.bytes {
			fat = f
		}
	}
	return fat
}

func (q *FQ) Dequeue(now int64, drops []*Packet) (*Packet, []*Packet) {
	for q.active.len() > 0 {
		f := q.active.peek()
		if f.q.r.len() == 0 {
			q.active.pop()
			f.active = false
			delete(q.flows, f.id)
			q.free = append(q.free, f)
			continue
		}
		size := len(f.q.r.peek().Data)
		if f.deficit < size {
			f.deficit += q.quantum
			q.active.push(q.active.pop())
			continue
		}
		f.deficit -= size
		p := f.q.pop()
		q.n--
		q.bytes -= size
		return p, drops
	}
	return nil, drops
}

func (q *FQ) Len() int   { return q.n }
func (q *FQ) Bytes() int { return q.bytes }
func (q *FQ) String() string {
	return withArgs(QueueFQ, q.lim.String(), "quantum="+strconv.Itoa(q.quantum))
}
