package bench

import (
	"fmt"
	"slices"

	"github.com/shunt-net/shunt/experiment"
)

// Drivers maps the driver names scenarios use (protocols[].driver) to
// experiments; package bench/drivers holds the shipped table.
type Drivers map[string]experiment.Driver

// Lookup returns the driver registered under name.
func (ds Drivers) Lookup(name string) (experiment.Driver, error) {
	d, ok := ds[name]
	if !ok {
		names := make([]string, 0, len(ds))
		for n := range ds {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("unknown driver %q (have %v)", name, names)
	}
	return d, nil
}
