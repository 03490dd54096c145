package mph2

import "github.com/shunt-net/shunt/multipath"

// A path's Budget is the Client's, not one download's: a proxy told
// lte=20MB must not receive 20 MB on lte per response. A download holds
// the whole of what is left of each budget while it runs (its scheduler
// sizes every request on the path to fit that), so downloads running
// beside it find that path's budget spent and do without the path; when
// it ends it keeps what its scheduler reserved (every byte the path
// received or may still receive for it: multipath.Scheduler.Reserved) and
// gives back the rest. So no order of downloads can overshoot a budget,
// at the price of a budgeted path serving one download at a time.

// holdBudgets gives cfg each path's budget and, as spent before the
// download, everything other downloads used or hold; the download then
// holds the rest.
func (c *Client) holdBudgets(cfg *multipath.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.Paths {
		if p.Budget <= 0 {
			continue
		}
		if cfg.Budget == nil {
			cfg.Budget, cfg.Spent = make([]int64, len(c.Paths)), make([]int64, len(c.Paths))
		}
		if len(c.spent) < len(c.Paths) {
			c.spent = append(c.spent, make([]int64, len(c.Paths)-len(c.spent))...)
		}
		// A budget lowered below what was spent counts as spent.
		cfg.Budget[i], cfg.Spent[i] = p.Budget, min(c.spent[i], p.Budget)
		c.spent[i] = cfg.Budget[i] + c.spent[i] - cfg.Spent[i]
	}
}

// settleBudgets ends holdBudgets' hold: the download keeps what sched
// reserved on each path (nothing if sched is nil: it never started).
func (c *Client) settleBudgets(cfg multipath.Config, sched *multipath.Scheduler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, b := range cfg.Budget {
		if b <= 0 {
			continue
		}
		kept := int64(0)
		if sched != nil {
			kept = sched.Reserved(multipath.PathID(i)) - cfg.Spent[i]
		}
		c.spent[i] -= b - cfg.Spent[i] - kept
	}
}
