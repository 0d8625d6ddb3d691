package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// env is the Redis of one top-level benchmark, shared by all its variants.
type env struct {
	r   *redistest.Redis
	raw rueidis.Client // no tracking: INFO, PUBSUB NUMSUB, SCAN
	run string         // random, in every key name of this process
}

// newEnv starts (or, with FAIRRW_REDIS_ADDR, connects to) a Redis for the
// top-level benchmark b; it is stopped by b's cleanup.
func newEnv(b *testing.B) *env {
	b.Helper()
	r := redistest.Start(b)
	raw := r.Client(b, func(o *rueidis.ClientOption) { o.DisableCache = true })
	var id [6]byte
	_, _ = rand.Read(id[:])
	return &env{r: r, raw: raw, run: hex.EncodeToString(id[:])}
}

// option is the ClientOption every side of a comparison is built from.
func (e *env) option(flushDelay time.Duration, disableCache bool) rueidis.ClientOption {
	opt := e.r.ClientOption()
	opt.MaxFlushDelay = flushDelay
	opt.DisableCache = disableCache
	return opt
}

// name returns a lock (or key) name unique to this process and parts.
func (e *env) name(parts ...any) string {
	var sb strings.Builder
	sb.WriteString("fairrw-bench:")
	sb.WriteString(e.run)
	for _, p := range parts {
		sb.WriteByte(':')
		fmt.Fprint(&sb, p)
	}
	return sb.String()
}

// checkLeftovers registers a cleanup that logs the keys of this process
// still in Redis, then resets the server. Register it before creating
// Clients: cleanups run last in first out, so it runs after every Client
// closed.
func (e *env) checkLeftovers(b *testing.B) {
	b.Helper()
	b.Cleanup(func() {
		keys, err := e.keys()
		if err != nil {
			b.Errorf("scan for leftover keys: %v", err)
			return
		}
		if len(keys) > 0 {
			b.Logf("%d keys left in Redis after every Client closed, e.g. %q", len(keys), keys[:min(len(keys), 5)])
		}
		e.reset(b, keys)
	})
}

// reset leaves a clean server to the next variant. On a redis-server of our
// own it runs FLUSHALL, which also empties the server's client-tracking
// table: a tracking variant can leave dead entries there (up to
// tracking-table-max-keys, a million by default), which would make
// tracked-keys/op of later variants read 0 and their eviction cost show up
// in later variants. On FAIRRW_REDIS_ADDR only this process's keys are
// deleted.
func (e *env) reset(b *testing.B, keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e.r.Kind == redistest.KindProcess {
		if err := e.raw.Do(ctx, e.raw.B().Flushall().Sync().Build()).Error(); err != nil {
			b.Errorf("FLUSHALL: %v", err)
		}
		return
	}
	for chunk := range slices.Chunk(keys, 500) {
		_ = e.raw.Do(ctx, e.raw.B().Del().Key(chunk...).Build()).Error()
	}
}

// keys lists the keys of this process (the run id is in every one).
func (e *env) keys() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	cursor := uint64(0)
	for {
		entry, err := e.raw.Do(ctx, e.raw.B().Scan().Cursor(cursor).Match("*"+e.run+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return nil, err
		}
		keys = append(keys, entry.Elements...)
		if cursor = entry.Cursor; cursor == 0 {
			return keys, nil
		}
	}
}

// newClient returns a fairrw Client built from opt, closed by b's cleanup.
// Its policy is Redisson's unless extra sets another: the core benchmarks
// (Uncontended, Handoff, Contended, TryLock, Renewal) measure the
// Redisson-compatible policy; PolicyThroughput and the fairness benchmarks
// compare the policies.
func newClient(b *testing.B, opt rueidis.ClientOption, extra ...fairrw.Option) *fairrw.Client {
	b.Helper()
	c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt), fairrw.WithPolicy(fairrw.Redisson())}, extra...)...)
	if err != nil {
		b.Fatalf("fairrw.New: %v", err)
	}
	b.Cleanup(func() {
		if err := c.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	return c
}

// transport is how a fairrw Client's connection is set up.
type transport struct {
	name         string
	disableCache bool
}

var transports = []transport{
	{name: "tracking"},                        // fairrw's default: CLIENT TRACKING OPTOUT
	{name: "no-tracking", disableCache: true}, // DisableCache: pub/sub and the PTTL only
}

// acquire takes m in mode, waiting.
func acquire(ctx context.Context, m *fairrw.RWMutex, mode fairrw.Mode, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	if mode == fairrw.Read {
		return m.RLock(ctx, opts...)
	}
	return m.Lock(ctx, opts...)
}

// warmUp takes and releases m once for writing and once for reading, so
// that the Client's connections are open and Redis has every acquire and
// release script cached before anything is measured (a first EVALSHA answers
// NOSCRIPT and is followed by an EVAL: two extra script calls).
func warmUp(b *testing.B, m *fairrw.RWMutex) {
	b.Helper()
	ctx := context.Background()
	for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
		l, err := acquire(ctx, m, mode)
		if err != nil {
			b.Fatalf("warm-up %s: %v", mode, err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatalf("warm-up %s unlock: %v", mode, err)
		}
	}
}

// spread runs b.N iterations of work over the given number of goroutines:
// each goroutine calls next before every iteration and stops when it returns
// false. The timer runs from the start of the first goroutine to the end of
// the last. The first error of any goroutine fails b.
func spread(b *testing.B, goroutines int, work func(g int, next func() bool) error) {
	b.Helper()
	var n atomic.Int64
	next := func() bool { return n.Add(1) <= int64(b.N) }
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range goroutines {
		wg.Go(func() { errs[g] = work(g, next) })
	}
	wg.Wait()
	b.StopTimer()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}

// reportRate reports b.N per second of measured time in unit.
func reportRate(b *testing.B, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, unit)
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// wakePaths counts acquires per Lease.WokenBy value.
type wakePaths map[string]int

// wakePathNames are the values of Lease.WokenBy, "" (granted without
// waiting) reported as "none".
var wakePathNames = []string{"pubsub", "invalidation", "timer", "handover", "resubscribe", "grant", "reply", "cohort", "share", ""}

// report adds the share of every wake-up path as <path>-share, all of them
// every time (benchstat wants the same units in every run). A value that
// Lease.WokenBy is not known to return fails b.
func (w wakePaths) report(b *testing.B) {
	total := 0
	for p, n := range w {
		if !slices.Contains(wakePathNames, p) {
			b.Errorf("Lease.WokenBy returned %q, which this package does not know (%v)", p, w)
		}
		total += n
	}
	if total == 0 {
		return
	}
	for _, p := range wakePathNames {
		unit := p
		if unit == "" {
			unit = "none"
		}
		b.ReportMetric(float64(w[p])/float64(total), unit+"-share")
	}
}

// String lists the counts, for logs.
func (w wakePaths) String() string {
	paths := make([]string, 0, len(w))
	for p := range w {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var sb strings.Builder
	for i, p := range paths {
		if i > 0 {
			sb.WriteString(" ")
		}
		label := p
		if label == "" {
			label = `""`
		}
		fmt.Fprintf(&sb, "%s=%d", label, w[p])
	}
	return sb.String()
}

// commandStats reads INFO commandstats.
func commandStats(ctx context.Context, rdb rueidis.Client) (redisinfo.Stats, error) {
	return redisinfo.Read(ctx, rdb)
}

// serverSample is what Redis reports about its own work so far.
type serverSample struct {
	cpu     time.Duration // used_cpu_user + used_cpu_sys of the redis-server process
	scripts int64         // EVALSHA + EVAL calls
	usec    int64         // time inside them (commandstats), µs
	tracked int64         // tracking_total_keys: keys in the server's client-tracking table
}

// sampleServer reads INFO cpu and commandstats in one call.
func (e *env) sampleServer(b *testing.B) serverSample {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := e.raw.Do(ctx, e.raw.B().Info().Section("cpu", "stats", "commandstats").Build()).ToString()
	if err != nil {
		b.Fatalf("INFO: %v", err)
	}
	tracked, _ := strconv.ParseInt(redisinfo.Field(info, "tracking_total_keys"), 10, 64)
	stats := redisinfo.ParseCommandStats(info)
	return serverSample{cpu: redisinfo.CPU(info), scripts: stats.Scripts(), usec: stats.ScriptUsec(), tracked: tracked}
}

// reportServer reports, since before, the Redis CPU time per op
// (redis-cpu-µs/op), the share of the measured wall time Redis was on a CPU
// (redis-busy: near 1 means its single thread was the bottleneck), the
// script calls per op (scripts/op), the time Redis spent inside them per
// op (script-µs/op: commandstats, their inner commands included, reading
// and replying not: the scripts' own cost, less sensitive than
// redis-cpu-µs/op to how many calls one read of a socket brings), and the
// growth of the server's
// client-tracking table per op (tracked-keys/op: keys some client was
// tracking and that were never invalidated since). Call it right after the
// measured loop.
// With FAIRRW_REDIS_ADDR, anything else using that server is counted too.
func (e *env) reportServer(b *testing.B, before serverSample) {
	b.Helper()
	after := e.sampleServer(b)
	cpu := after.cpu - before.cpu
	b.ReportMetric(micros(cpu)/float64(b.N), "redis-cpu-µs/op")
	if el := b.Elapsed(); el > 0 {
		b.ReportMetric(float64(cpu)/float64(el), "redis-busy")
	}
	b.ReportMetric(float64(after.scripts-before.scripts)/float64(b.N), "scripts/op")
	b.ReportMetric(float64(after.usec-before.usec)/float64(b.N), "script-µs/op")
	b.ReportMetric(float64(after.tracked-before.tracked)/float64(b.N), "tracked-keys/op")
}
