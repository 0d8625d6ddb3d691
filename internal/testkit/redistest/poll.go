package redistest

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// pollEvery is how often Poll asks.
const pollEvery = 10 * time.Millisecond

// Poll calls check with a client of addr every pollEvery until it reports
// done or ctx ends; an error (also from dialling) is retried, and reported
// with ctx's if it was the last. The client (RESP3, no client-side caching,
// which a sentinel lacks) is closed before Poll returns. It is how the
// harnesses wait for a server to reach a state (a role, a replication link).
func Poll(ctx context.Context, addr string, check func(rueidis.Client) (bool, error)) error {
	var (
		c       rueidis.Client
		lastErr error
	)
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		if c == nil {
			c, lastErr = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
			if lastErr != nil {
				c = nil
			}
		}
		if c != nil {
			var done bool
			if done, lastErr = check(c); done && lastErr == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}
