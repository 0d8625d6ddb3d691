package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
)

// Miniredis starts an in-process miniredis, closed at cleanup, with
// ClockTTL(true) so that TTLs run in real time, and returns it with a
// rueidis.ClientOption that works with it (DisableCache, AlwaysRESP2: miniredis
// supports neither client-side caching nor RESP3 tracking).
//
// Clients built from the option must be closed before the miniredis is; a
// client created after this call and closed with Cleanup is (cleanups run last
// registered first).
//
// Its port comes from redisnet.FreePort and is held (redisnet.Hold) while
// the test runs and retired at cleanup, so that no server started meanwhile
// in any process gets it: a test may close its miniredis while a Client of
// its still sends to that address (a release retried in the background),
// and a server picked by the kernel on the same port once got another
// test's unlock latch (TestQuorumNodeLostWhileHeld, two suites side by
// side).
func Miniredis(tb testing.TB) (*miniredis.Miniredis, rueidis.ClientOption) {
	tb.Helper()
	var m *miniredis.Miniredis
	for attempt := 1; ; attempt++ {
		port, err := redisnet.FreePort()
		if err != nil {
			tb.Fatalf("redistest: pick a port for miniredis: %v", err)
		}
		redisnet.Hold(port, heldFor)
		m = miniredis.NewMiniRedis()
		m.ClockTTL(true)
		err = m.StartAddr("127.0.0.1:" + strconv.Itoa(port))
		if err == nil {
			tb.Cleanup(func() {
				m.Close()
				redisnet.Retire(port)
			})
			break
		}
		redisnet.Retire(port)
		// Another process may have bound the port since FreePort.
		if attempt == portAttempts || !strings.Contains(err.Error(), "address already in use") {
			tb.Fatalf("redistest: start miniredis: %v", err)
		}
	}
	return m, rueidis.ClientOption{
		InitAddress:  []string{m.Addr()},
		DisableCache: true,
		AlwaysRESP2:  true,
	}
}

// heldFor is how long a miniredis's port is held at most: longer than any
// test of the repository runs (go test's default timeout is 10 minutes).
const heldFor = 15 * time.Minute
