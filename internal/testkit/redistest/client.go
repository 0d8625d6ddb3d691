package redistest

import (
	"testing"

	"github.com/redis/rueidis"
)

// ClientOption returns a base ClientOption for r.
func (r *Redis) ClientOption() rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{r.Addr}}
}

// Client returns a rueidis.Client connected to r, built from ClientOption with
// mutate (may be nil) applied, and closed at cleanup.
func (r *Redis) Client(tb testing.TB, mutate func(*rueidis.ClientOption)) rueidis.Client {
	tb.Helper()
	opt := r.ClientOption()
	if mutate != nil {
		mutate(&opt)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("redistest: rueidis client for %s (%s): %v", r.Addr, r.Kind, err)
	}
	tb.Cleanup(c.Close)
	return c
}
