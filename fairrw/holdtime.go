package fairrw

import "github.com/fairrw/rwlock/internal/hidden"

// leaseMargin is how much longer Redis keeps every hold than its Lease's
// Deadline. So nobody else is granted the lock before that Deadline, and a
// holder that stops when Done closes is alone until then (if Done's timer
// fires within the margin). The scripts are sent hold times with it added
// (wire.HoldMillis).
const leaseMargin = hidden.LeaseMargin
