package fairrw

import (
	"strconv"
	"time"
)

// LeaseMargin is how much longer Redis keeps every hold than its Lease's
// Deadline: a hold's time is sent rounded up to Redis's millisecond and
// this margin is added, on every path that writes one (grant, renewal,
// further hold, downgrade, the release of another hold of the same owner).
//
// Redis counts a hold from the moment the command reaches it, the Lease
// from the moment the command was sent, so Redis's end always comes later
// than Deadline. The margin covers what that does not: Redis reads its clock
// in whole milliseconds (floored), and Done is closed by a timer that may
// fire a little after Deadline. So nobody else is granted the lock before
// the holder's Deadline, and a holder that stops when Done closes is alone
// until then, provided its timer fires within the margin.
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
