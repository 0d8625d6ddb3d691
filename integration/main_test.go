// Package integration tests fairrw against real Redis servers: a
// redis-server started from PATH (or FAIRRW_REDIS_ADDR), and a testcontainers
// container where a Docker engine answers. FAIRRW_REQUIRE_REDIS=1 turns a
// missing Redis into a failure instead of a skip.
package integration

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/internal/holder"
)

func TestMain(m *testing.M) {
	holder.RunIfChild() // a holder child process of the fault tests
	goleak.VerifyTestMain(m,
		// After a cluster topology change rueidis closes the replaced
		// connections 5 s later from a goroutine of its own; it ends by itself.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		// A redirect or a dead node makes the cluster client schedule a
		// topology refresh after a short delay (lazyRefresh); the sleeping
		// goroutine runs it and ends, also after Close.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
	)
}
