package cli

import (
	"flag"
	"fmt"

	"github.com/shunt-net/shunt/mph2"
)

// budgetFlag adds --budget PATH=SIZE (repeatable) to fs; each goes into
// *budgets by path label. what says whose bytes the budget bounds.
func budgetFlag(fs *flag.FlagSet, budgets *map[string]int64, what string) {
	fs.Func("budget", "receive at most SIZE bytes on path PATH "+what+" (repeatable), `PATH=SIZE`, e.g. lte=20MB", func(v string) error {
		name, n, err := mph2.ParseBudget(v)
		if err != nil {
			return err
		}
		if *budgets == nil {
			*budgets = map[string]int64{}
		}
		(*budgets)[name] = n
		return nil
	})
}

// setBudgets gives each path its budget; a budget naming no path is an
// error.
func setBudgets(paths []mph2.Path, budgets map[string]int64) error {
	found := map[string]bool{}
	for i := range paths {
		name := paths[i].Label(i)
		if n, ok := budgets[name]; ok {
			paths[i].Budget, found[name] = n, true
		}
	}
	for name := range budgets {
		if !found[name] {
			return fmt.Errorf("--budget %s: no --path %s", name, name)
		}
	}
	return nil
}
