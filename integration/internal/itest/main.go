// Package itest is the harness that fairrw's integration test packages
// share: the Redis deployments they run on (a redis-server process, a
// container, a cluster, Sentinel), the Clients and Envs of the behavioural
// suite, wire and key inspection helpers, the lateness control of
// wall-clock bounds, and Main, each package's TestMain.
package itest

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/internal/testkit/holder"
)

// defaultParallel is -test.parallel when the command line does not set it:
// the tests that call t.Parallel (the behavioural suites' policies,
// transports and long scenarios) mostly wait on timers and on Redis rather
// than compute, so far more of them than GOMAXPROCS run side by side
// without slowing each other; the other tests run one at a time, as ever.
const defaultParallel = "8"

// Main runs an integration test package: as a holder child process when
// started as one (the fault tests start their holders that way), otherwise
// the package's tests (up to defaultParallel parallel ones at once unless
// -test.parallel is given), and then fails the run if a goroutine is left
// behind.
func Main(m *testing.M) {
	holder.RunIfChild() // a holder child process of the fault tests
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", defaultParallel); err != nil {
			fmt.Fprintln(os.Stderr, "test.parallel:", err)
			os.Exit(2)
		}
	}
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
