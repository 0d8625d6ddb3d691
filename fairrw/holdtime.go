package fairrw

import (
	"strconv"
	"time"
)

// LeaseMargin is how much longer Redis keeps every hold than its Lease's
// Deadline. So nobody else is granted the lock before that Deadline, and a
// holder that stops when Done closes is alone until then (if Done's timer
// fires within the margin).
const LeaseMargin = 5 * time.Millisecond

// holdMillis renders the time a hold must last in Redis: d plus
// LeaseMargin, rounded up to whole milliseconds.
func holdMillis(d time.Duration) string {
	return strconv.FormatInt(ceilMillis(d+LeaseMargin), 10)
}

// ceilMillis is d in whole milliseconds, rounded up, at least 1.
func ceilMillis(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}
