// Package ctxtime waits on the wall clock for as long as a context lets it.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends (its error then); d <= 0 only checks ctx.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
