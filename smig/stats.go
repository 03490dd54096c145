package smig

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
