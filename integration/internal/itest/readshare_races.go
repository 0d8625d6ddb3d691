package itest

import (
	"context"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// rsaRedisDeadline returns the Redis deadline of owner's read hold, as
// Inspect shows it (zero: none).
func RsaRedisDeadline(t *testing.T, ctx context.Context, c *fairrw.Client, name, owner string) time.Time {
	t.Helper()
	info, err := c.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range info.Holders {
		if h.Owner == owner && h.Mode == fairrw.Read {
			return info.Time.Add(h.Remaining)
		}
	}
	return time.Time{}
}
