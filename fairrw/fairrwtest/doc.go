// Package fairrwtest provides Redis servers and ready fairrw Clients for the
// tests of code that uses fairrw, as net/http/httptest does for HTTP.
//
// A unit test takes a Client on an in-process Redis (miniredis), closed when
// the test ends:
//
//	func TestCheckout(t *testing.T) {
//		c := fairrwtest.NewClient(t)
//		l, err := c.RWMutex("cart:7").Lock(t.Context())
//		...
//	}
//
// Two Clients on one Server are two processes sharing a lock:
//
//	srv := fairrwtest.NewServer(t)
//	a, b := srv.NewClient(t), srv.NewClient(t)
//
// An integration test takes a real redis-server the same way, with
// NewRedisServer: it starts redis-server from PATH on a free loopback port,
// without persistence, and kills it when the test ends. Without
// redis-server on PATH the test is skipped, or fails when the environment
// sets FAIRRW_REQUIRE_REDIS=1 (as CI should). Code outside a test (an
// Example, a TestMain) uses Start or StartRedisServer and Close instead.
//
// # The in-process server
//
// miniredis has no client tracking (CLIENT TRACKING, whose invalidations
// are RESP3 push messages), which rueidis turns on by default: a rueidis
// client built with its defaults fails to connect to it, and fairrw.New
// with it. Server.ClientOption therefore sets DisableCache and AlwaysRESP2
// (the transport fairrw's own unit tests run on miniredis), with which
// fairrw wakes waiters by pub/sub and by the TTL their failed attempt
// returned, and ForceSingleClient, since miniredis is one node (it answers
// CLUSTER SLOTS, which would make rueidis run its cluster client on it).
//
// The server runs with ClockTTL(true): TTLs, and so leases, run out in real
// time as on Redis, in step with the TIME that fairrw's scripts read. A test
// of a holder that dies gives it a short lease (fairrw.WithLeaseTime on its
// Client, or fairrw.WithLease) and closes its Client: the lock is free once
// that lease has run out, and a waiter on another Client gets it then.
// miniredis's FastForward and SetTime do not end leases (see
// Server.Miniredis).
//
// miniredis does not model, and a test of them needs NewRedisServer (or,
// for a cluster or replicas, a deployment of its own):
//   - client-side caching: the invalidation wake-up path (and RESP3 push
//     messages);
//   - sharded pub/sub (SPUBLISH, used on a Redis 7+ cluster), Redis Cluster, and
//     replicas (fairrw.WithSyncReplicas waits for replicas it has none of);
//   - Redis's own timing: a miniredis command runs in the test process, so
//     latency and pauses are not those of a server.
//
// Nothing in this package is safe to use in production code: it starts
// servers and fails tests.
package fairrwtest
