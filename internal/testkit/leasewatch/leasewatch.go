// Package leasewatch observes a Client's watchdog from outside, through the
// public Lease.Deadline: the benchmarks and fairbench use it to time renewal
// rounds without a hook into the renewer.
package leasewatch

import (
	"fmt"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// NextRound polls l until its deadline moves past prev (a renewal round
// confirmed it) and returns the new deadline. It gives up after ten lease
// times, or when l ends.
func NextRound(l *fairrw.Lease, prev time.Time, lease time.Duration) (time.Time, error) {
	limit := time.Now().Add(10 * lease)
	for time.Now().Before(limit) {
		if d := l.Deadline(); d.After(prev) {
			return d, nil
		}
		select {
		case <-l.Done():
			return time.Time{}, fmt.Errorf("lease %q ended while waiting for a renewal: %w", hidden.Name(l), l.Err())
		default:
		}
		time.Sleep(50 * time.Microsecond)
	}
	return time.Time{}, fmt.Errorf("lease %q: no renewal within %v", hidden.Name(l), 10*lease)
}
