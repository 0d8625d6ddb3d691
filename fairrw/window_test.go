package fairrw_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestClockSkew: Redis refuses an attempt older than the accept window
// (twice the unlock timeout), and its sender retries for one unlock timeout,
// which assumes the two clocks differ by less than that. A Redis clock that
// is further ahead must fail acquires with ErrClockSkew and change nothing,
// never grant or queue; a skew within the margin is harmless.
func TestClockSkew(t *testing.T) {
	const unlockTimeout = time.Second
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			for _, tc := range []struct {
				ahead time.Duration
				want  error
			}{
				{ahead: time.Hour, want: fairrw.ErrClockSkew},
				{ahead: 3 * unlockTimeout, want: fairrw.ErrClockSkew},
				{ahead: unlockTimeout / 2, want: nil},
				{ahead: -time.Hour, want: nil},
			} {
				mr, opt := redistest.Miniredis(t)
				mr.SetTime(time.Now().Add(tc.ahead))
				c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(unlockTimeout))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				m := c.RWMutex("skew")
				acquire := map[string]func() (*fairrw.Lease, error){
					"TryLock":       func() (*fairrw.Lease, error) { return m.TryLock(ctx) },
					"TryRLock":      func() (*fairrw.Lease, error) { return m.TryRLock(ctx) },
					"Mutex.TryLock": func() (*fairrw.Lease, error) { return c.Mutex("skew-mutex").TryLock(ctx) },
				}
				for mode, try := range acquire {
					l, err := try()
					if !errors.Is(err, tc.want) || (tc.want == nil) != (l != nil) {
						t.Errorf("Redis %v ahead, %s: lease %v, error %v; want error %v", tc.ahead, mode, l != nil, err, tc.want)
					}
					if l != nil {
						if err := l.Unlock(ctx); err != nil {
							t.Errorf("Redis %v ahead, unlock %s: %v", tc.ahead, mode, err)
						}
					}
				}
				if tc.want != nil {
					if keys := mr.Keys(); len(keys) != 0 {
						t.Errorf("Redis %v ahead: a refused attempt left keys %v", tc.ahead, keys)
					}
				}
				cancel()
				c.Close()
			}
		})
	}
}
