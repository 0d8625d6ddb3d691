package fairrw_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// defaultParallel is -test.parallel when the command line does not set it:
// the tests that call t.Parallel mostly wait on timers (leases, renewals,
// backoffs) rather than compute, so far more of them than GOMAXPROCS run
// side by side without slowing each other: the behavioural suite's
// scenarios sleep through leases and renewals (8-10 s each), and at 8 at
// once the package took 142 s, at 24 74 s (75 s with -race; 2 cores,
// 2026-11-27). The tests that time Redis's answers are bounded apart
// (timedSlots), and their Clients count an answer as missing only after
// slowAnswerUnderLoad.
const defaultParallel = "24"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", defaultParallel); err != nil {
			fmt.Fprintln(os.Stderr, "test.parallel:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if code == 0 {
		// miniredis answers CLUSTER commands, so rueidis runs its cluster
		// client on it: a node closed under a Client (the quorum tests)
		// makes it schedule a topology refresh on a sleeping goroutine,
		// which runs and ends by itself, also after Close.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// timedSlots bounds how many timing-sensitive tests run at once: the
// telemetry tests check that no Redis call of theirs goes unanswered for
// the library's 100 ms (which would count as an outage), and that holds
// only with the few tests beside them that -test.parallel's default
// (GOMAXPROCS) allowed before defaultParallel raised it.
var timedSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// parallelTimed is t.Parallel for a timing-sensitive test: it also waits for
// one of timedSlots, which it gives back when the test ends.
func parallelTimed(t *testing.T) {
	t.Parallel()
	timedSlots <- struct{}{}
	t.Cleanup(func() { <-timedSlots })
}
