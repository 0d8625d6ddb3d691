// Package bench holds fairrw's Go benchmarks against a real Redis. It has no
// exported API: everything lives in _test.go files.
//
// Every top-level benchmark starts its own redis-server from PATH (through
// internal/testkit/redistest), or uses FAIRRW_REDIS_ADDR when it is set, and
// runs all of its variants, baselines included, against that one server, so
// that ratios are taken within one run. Run them with, for example:
//
//	go test -run '^$' -bench . -benchtime 3s -count 5 ./bench/ | tee new.txt
//	benchstat new.txt
//
// Names are key=value paths, stable across runs, so benchstat can pair and
// project them:
//
//	BenchmarkUncontended/flushdelay=<0|20us>/baseline=<evalsha-pair|lua-pair>
//	BenchmarkUncontended/flushdelay=<0|20us>/lock=<write|read>/transport=<tracking|no-tracking>
//	BenchmarkUncontended/flushdelay=<0|20us>/policy=writer-preferring/lock=<write|read>/transport=<tracking|no-tracking>
//	BenchmarkHandoff/transport=<tracking|no-tracking>/holder=<write|read>/waiter=<write|read>
//	BenchmarkContended/transport=<tracking|no-tracking>/clients=4/goroutines=8
//	BenchmarkTryLock/transport=<tracking|no-tracking>/op=<trylock|tryrlock>/goroutines=<1|64>
//	BenchmarkRenewal/leases=<1000|10000>/transport=<tracking|no-tracking>
//	BenchmarkReaderFlood/policy=<redisson|writer-preferring|phase-fair>
//	BenchmarkWriterStream/policy=<redisson|writer-preferring|phase-fair>
//	BenchmarkPolicyThroughput/policy=<redisson|writer-preferring|phase-fair>/<mix=write|mix=read90|contention=none>
//	BenchmarkIdleWaiter/policy=<...>/transport=<tracking|no-tracking>/waiter=<write|read>
//	BenchmarkScaleOut/topology=<single|single-replica|cluster-1|cluster-3-noreplica|cluster-3>/policy=<...>
//	BenchmarkPeers/op=<lockunlock-uncontended|contended|trylock>/contender=<redisson|writer-preferring|phase-fair|rueidislock|redislock|redsync|mutex>
//	BenchmarkPeers/op=lockunlock-uncontended/baseline=<lua-pair|evalsha-pair>
//	BenchmarkServerCost/call=<evalsha-return1|lua-pair|evalsha-pair|setnx-del|fair-prelude|fair-inlined-pair>
//	BenchmarkServerCost/[contended/]policy=<writer-preferring|phase-fair>
//	BenchmarkTelemetry/provider=<noop|sdk>/goroutines=<1|64>
//	BenchmarkReadShare/policy=<writer-preferring|phase-fair>/shared=<true|false>
//
// Uncontended: 64 goroutines, each on its own lock name, loop lock+unlock on
// one shared Client; one op is one cycle (two script calls). The baselines do
// the same number of goroutines with two EVALSHA calls of trivial scripts per
// cycle (bench/internal/baseline) through a rueidis client built from the
// same ClientOption: evalsha-pair runs a SET, then a DEL; lua-pair runs
// HGET/HSET/PEXPIRE, then HEXISTS/DEL/PUBLISH (the shape of Redisson's lock).
// The target is fairrw cycles/s >= 60% of evalsha-pair's cycles/s of the
// same flushdelay in the same run. transport=tracking is fairrw's default
// (rueidis's OPTIN client tracking, armed only by waiting attempts);
// transport=no-tracking sets DisableCache. The names without a policy key
// are the Redisson policy's (as before there was a choice);
// policy=writer-preferring is the default policy, which the target is for.
//
// Handoff: a holder Client and a waiter Client (separate connections, like
// separate processes) on one name. Each op makes the waiter block in Lock
// (checked exactly: its channel has a subscriber and Redis has run both of
// its failed attempts), then the holder unlocks. The sample is the time from
// the holder's Unlock returning to the waiter's Lock returning. Reported as
// p50-µs, p99-µs and max-µs, and the share of handoffs per wake-up path
// (hidden.WokenBy, traced as fairrw.acquire.woken_by): pubsub-share, invalidation-share, timer-share,
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
// ReaderFlood and WriterStream are the fairness evidence of
// shared/docs/measuring.md, per policy (each on its own lock name, all on one
// redis-server). Closed-loop workers, each its own handle, loop acquire,
// hold (time.Sleep), Unlock, think. ReaderFlood: 6 readers on 2 Clients
// (hold 20ms, think 0-2ms, so reads overlap all the time) and 1 writer on
// its own Client (hold 5ms, think 20ms). WriterStream: 3 writers on one
// Client (hold 10ms, think 0-1ms) and 4 readers on 2 Clients (hold 5ms,
// think 10ms). One op is one run of a window D (3s, or
// FAIRRW_BENCH_FLOOD_SECONDS), so run them with -benchtime 1x:
//
//	go test -run '^$' -bench 'ReaderFlood|WriterStream' -benchtime 1x -count 3 ./bench/
//
// A request asked within the window is a sample: its wait is the time from
// calling Lock/RLock to its return, bounded by a context of D; one still
// waiting then counts at D and as a timeout (never dropped). The workers keep
// the same load past the window, unrecorded, until every sample has ended, so
// ns/op is between D and 2D. Per class (reader-, writer-): p50-ms, p90-ms,
// p99-ms, max-ms of the waits; grants and timeouts (samples per run);
// grants/s (grants that happened within the window, per second of window);
// jain (Jain's index of those grants over the class's workers, when it has
// more than one); and grants/s of both classes. scripts/grant is the script
// calls Redis ran during the runs per grant, unrecorded ones included. Each
// sub-benchmark logs per class the grants per worker (flagged when max > 2 x
// min) and the wake-up paths of its grants. Every hold is checked in process
// as in sync's HammerRWMutex (a write overlapping any other hold), and
// fencing tokens are checked to grow with writes; either failure fails the
// benchmark.
//
// PolicyThroughput: lock+unlock cycles/s without hold time, per policy, to be
// compared with policy=redisson of the same run. mix=write and mix=read90:
// 16 goroutines (each its own handle, on 2 Clients) on 4 lock names, every
// cycle a write, or a read with probability 90%. contention=none: 64
// goroutines on 64 names, writes. scripts/grant is EVALSHA+EVAL calls per
// cycle from INFO commandstats: a grant without waiting costs 2 (acquire and
// unlock), a grant after a wait 4 (a failed attempt, a second one once the
// waiter's subscription is confirmed, the granted one, the unlock), and every
// wake-up that does not lead to a grant adds one. redis-cpu-µs/grant is the
// redis-server's CPU time per cycle. Also reports the wake-up shares as
// Contended does (none-share: granted without waiting). Holds are checked as
// above.
//
// IdleWaiter: one Client holds the write of a lock for 500ms (one op) while
// one waiter on another Client waits for a write or a read. Nothing changes
// the lock meanwhile, so scripts/s (script calls per second of the hold,
// after the waiter's first attempt) should be 0: anything else is a waiter
// retrying for nothing.
//
// Peers: the three policies and fairrw's Mutex next to the Go lock libraries
// people use today (rueidislock, bsm/redislock, go-redsync/redsync: exclusive
// locks, each with its default or documented settings, see
// bench/internal/contender), on the same redis-server: lock+unlock
// uncontended (beside the baseline pairs), contended on one name, and
// try-lock. See BenchmarkPeers. The client's cost per lock+unlock is
// op=lockunlock-uncontended's allocs/op, B/op (run with -benchmem or not:
// they are always reported) and client-cpu-µs/op (this test process's CPU
// time over the measured loop per op, from /proc/self/stat: the lock
// library, its Redis client's connections, the GC and the loop itself,
// nothing subtracted; Uncontended reports it too). For example:
//
//	go test -run '^$' -bench 'BenchmarkPeers/op=lockunlock-uncontended' -benchmem -benchtime 2s -count 3 ./bench/
//
// The fuller comparison, with fairness, handoff, renewal and the server's
// cost per cycle and per grant, is the command bench/cmd/fairbench.
//
// Benchmarks never assert speed. They fail only on errors (and a handoff
// benchmark on a waiter that is not granted within 10s). Keys left behind
// in Redis after every Client closed are reported with b.Log.
package bench
