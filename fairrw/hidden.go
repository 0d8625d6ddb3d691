package fairrw

import (
	"fmt"
	"time"

	"github.com/fairrw/rwlock/internal/hidden"
)

// init installs the accessors of internal/hidden, through which the
// repository's tests, benchmarks and integration tests read what fairrw does
// not export.
func init() {
	hidden.WokenBy = func(l any) string { return l.(*Lease).wokenBy() }
	hidden.ClientID = func(c any) string { return c.(*Client).settings().id }
	hidden.Majority = func(q any) int { return q.(*Quorum).majority }
	hidden.QuorumNodes = func(q any) int { return len(q.(*Quorum).clients) }
	hidden.LeaseNodes = func(l any) int {
		if q := l.(*Lease).q; q != nil {
			return q.nodes()
		}
		return 1
	}
	hidden.WithPublish = func(cmd string) any { return withPublishCommand(publishCommand(cmd)) }
	hidden.WithClientTracking = func(on bool) any { return withClientTracking(on) }
	hidden.WithProtocol = func(v int) any { return withProtocol(v) }
	hidden.WithSlowAnswer = func(d time.Duration) any { return withSlowAnswer(d) }
	hidden.WithCleanupGrace = func(d time.Duration) any { return withCleanupGrace(d) }
	hidden.Name = func(x any) string {
		switch v := x.(type) {
		case *Lease:
			return v.lockName()
		case *RWMutex:
			return v.lockName()
		case *Mutex:
			return v.lockName()
		case *QuorumRWMutex:
			return v.name
		}
		panic(fmt.Sprintf("hidden.Name of a %T", x))
	}
	hidden.Mode = func(l any) any { return l.(*Lease).mode }
}
