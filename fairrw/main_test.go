package fairrw_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
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
