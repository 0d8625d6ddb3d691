package redistest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// Miniredis starts an in-process miniredis, closed at cleanup, with
// ClockTTL(true) so that TTLs run in real time, and returns it with a
// rueidis.ClientOption that works with it (DisableCache, AlwaysRESP2: miniredis
// supports neither client-side caching nor RESP3 tracking).
//
// Clients built from the option must be closed before the miniredis is; a
// client created after this call and closed with Cleanup is (cleanups run last
// registered first).
func Miniredis(tb testing.TB) (*miniredis.Miniredis, rueidis.ClientOption) {
	tb.Helper()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		tb.Fatalf("redistest: start miniredis: %v", err)
	}
	tb.Cleanup(m.Close)
	return m, rueidis.ClientOption{
		InitAddress:  []string{m.Addr()},
		DisableCache: true,
		AlwaysRESP2:  true,
	}
}
