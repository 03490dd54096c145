package smig

import "context"

// IdleBound returns how many pooled connections are bound to their
// client and carry no stream: the idle connections a migration can use now.
// Experiments wait for it so that "an idle connection is available" holds
// when their clock starts.
func (t *Transport) IdleBound() int {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, o := range t.origins {
		for _, c := range o.pooled {
			if c.bound && c.cc.Conn().ActiveStreams() == 0 {
				n++
			}
		}
	}
	return n
}

// WaitIdleBound waits until a pooled connection is bound to its client
// and carries no stream (IdleBound > 0), or ctx ends.
func (t *Transport) WaitIdleBound(ctx context.Context) error {
	_, err := t.awaitIdleBound(ctx, nil, nil)
	return err
}
