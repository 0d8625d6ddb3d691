package fairrw_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"
)

// exampleRedis is an in-process Redis for the Examples, so that they run on
// any machine. A service would use its Redis address instead:
// rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}.
var exampleRedis *miniredis.Miniredis

func redisOption() rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress: []string{exampleRedis.Addr()},
		// miniredis speaks RESP2 only and has no client tracking.
		DisableCache: true,
		AlwaysRESP2:  true,
	}
}

func TestMain(m *testing.M) {
	exampleRedis = miniredis.NewMiniRedis()
	exampleRedis.ClockTTL(true)
	if err := exampleRedis.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	exampleRedis.Close()
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
