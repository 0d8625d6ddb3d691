// Package bench holds fairrw's Go benchmarks against a real Redis. It has no
// exported API: everything lives in _test.go files.
//
// Every top-level benchmark starts its own redis-server from PATH (through
// internal/redistest), or uses FAIRRW_REDIS_ADDR when it is set, and runs all
// of its variants, baselines included, against that one server, so that
// ratios are taken within one run. Run them with, for example:
//
//	go test -run '^$' -bench . -benchtime 3s -count 5 ./bench/ | tee new.txt
//	benchstat new.txt
//
// Names are key=value paths, stable across runs, so benchstat can pair and
// project them:
//
//	BenchmarkUncontended/flushdelay=<0|20us>/baseline=evalsha-pair
//	BenchmarkUncontended/flushdelay=<0|20us>/lock=<write|read>/transport=<tracking|no-tracking>
//	BenchmarkHandoff/transport=<tracking|no-tracking>/holder=<write|read>/waiter=<write|read>
//	BenchmarkContended/transport=<tracking|no-tracking>/clients=4/goroutines=8
//	BenchmarkTryLock/transport=<tracking|no-tracking>/op=<trylock|tryrlock>/goroutines=<1|64>
//	BenchmarkRenewal/leases=<1000|10000>/transport=<tracking|no-tracking>
//
// Uncontended: 64 goroutines, each on its own lock name, loop lock+unlock on
// one shared Client; one op is one cycle (two script calls). The baseline does
// the same number of goroutines with two EVALSHA calls of trivial scripts per
// cycle through a rueidis client built from the same ClientOption. The
// issue's target is fairrw cycles/s >= 60% of the baseline's cycles/s of the
// same flushdelay in the same run. transport=tracking is fairrw's default
// (rueidis's OPTIN client tracking, armed only by waiting attempts);
// transport=no-tracking sets DisableCache.
//
// Handoff: a holder Client and a waiter Client (separate connections, like
// separate processes) on one name. Each op makes the waiter block in Lock
// (checked exactly: its channel has a subscriber and Redis has run both of
// its failed attempts), then the holder unlocks. The sample is the time from
// the holder's Unlock returning to the waiter's Lock returning. Reported as
// p50-µs, p99-µs and max-µs, and the share of handoffs per wake-up path
// (Lease.WokenBy): pubsub-share, invalidation-share, timer-share,
// handover-share, resubscribe-share and none-share (granted without being
// woken: must be 0 here, since the waiter is blocked first). ns/op and
// allocs/op are the whole set-up-and-handoff cycle, polling included, and
// mean little. The target is p50 under 300 µs on loopback.
//
// Contended: 4 Clients x 8 goroutines, each goroutine its own handle, all on
// one name, loop Lock+Unlock. Reports cycles/s, mean-cycle-µs (Lock call to
// Unlock return, averaged over cycles), max-cycle-ms, and the same wake-up
// shares over all acquires (none-share: granted without waiting).
//
// TryLock: failed attempts on a lock another Client holds for writing; ns/op
// with goroutines=1 is the cost (latency) of one failed attempt.
//
// Renewal: one Client holds N watchdog leases on distinct names with
// WithLeaseTime(1s), so its watchdog renews them every 333ms. One op is
// one renewal round, observed through Lease.Deadline, so ns/op is about the
// renewal interval. Reports round-µs (from the round's send time to the
// moment the first lease's new deadline was seen), server-µs/round (Redis
// CPU time in EVALSHA per round, from INFO commandstats), lost-leases
// (leases that ended before the unlock at the end: must be 0), and
// allocs/op (allocations of a whole round, in the whole process).
//
// Uncontended, Contended and TryLock also report what Redis did, from INFO
// taken around the measured loop: redis-cpu-µs/op (CPU time of the
// redis-server process per op), redis-busy (that CPU time over the measured
// wall time: near 1 means Redis's single thread was the bottleneck) and
// scripts/op (EVALSHA and EVAL calls per op; in Contended, above 2 means
// failed attempts) and tracked-keys/op (growth of the server's client
// tracking table, tracking_total_keys: keys read under CLIENT TRACKING that
// were never written since; they stay in the table, even after the client
// disconnects, until written or evicted at tracking-table-max-keys). With
// FAIRRW_REDIS_ADDR, other users of that server are counted too.
//
// Benchmarks never assert speed. They fail only on errors (and a handoff
// benchmark on a waiter that is not granted within 10s). Keys left behind
// in Redis after every Client closed are reported with b.Log.
package bench
