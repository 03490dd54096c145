package mph2

// Counts is a download's result as a run record's counts (shunt get's
// record and the experiments'): bytes and tail_bytes; per path P bytes_P,
// requests_P, received_P, last_data_s_P, suspensions_P, suspended_s_P,
// stalls_P, first_stall_s_P (0: none), redials_P, retaken_P, and with a budget budget_P and budget_full_s_P (0:
// never full); switches (the changes of path in use after the first
// choice) and, for the first of them, switch_s and switch_first_byte_s
// (since the start).
func Counts(r *Result) map[string]float64 {
	c := map[string]float64{"bytes": float64(r.Size), "tail_bytes": float64(r.TailBytes)}
	for _, p := range r.Paths {
		c["bytes_"+p.Name] = float64(p.Delivered)
		c["requests_"+p.Name] = float64(p.Requests)
		c["received_"+p.Name] = float64(p.Received)
		// When each path finished tells a path that holds the download back
		// (MP-H2 §5.8) from one that was merely slow.
		c["last_data_s_"+p.Name] = p.LastData.Seconds()
		// A path that went silent or down is not a failed run: how often
		// and how long are what the run measured.
		c["suspensions_"+p.Name] = float64(p.Suspensions)
		c["suspended_s_"+p.Name] = p.Suspended.Seconds()
		c["stalls_"+p.Name] = float64(p.Stalls)
		c["first_stall_s_"+p.Name] = p.FirstStall.Seconds()
		c["redials_"+p.Name] = float64(p.Redials)
		c["retaken_"+p.Name] = float64(p.Retaken)
		if p.Budget > 0 {
			c["budget_"+p.Name] = float64(p.Budget)
			c["budget_full_s_"+p.Name] = p.BudgetFull.Seconds()
		}
	}
	if len(r.Switches) > 0 {
		n := 0
		for _, s := range r.Switches {
			if s.From != "" {
				if n == 0 {
					c["switch_s"] = s.At.Seconds()
					c["switch_first_byte_s"] = s.FirstByte.Seconds()
				}
				n++
			}
		}
		c["switches"] = float64(n)
	}
	return c
}
