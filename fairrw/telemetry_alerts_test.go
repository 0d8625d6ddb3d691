package fairrw_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// firing returns the alerts of docs/operations.md ("Alerts") that the
// metrics recorded so far would fire, as an operator would write them over
// a window that holds the whole test:
//
//   - LockWaitsSlow: acquires that waited (granted, or cancelled: a wait
//     timeout) over 1s, the threshold the docs suggest for the p99;
//   - RedisUnavailable: fairrw.redis.unreachable > 0, or acquires with
//     outcome=unavailable, or dials with an error.type;
//   - LeasesLost: fairrw.leases.lost with a cause other than closed;
//   - ForcedUnlock: fairrw.force_unlocks;
//   - AcquireErrors: acquires with outcome=error;
//   - RenewalFailures: fairrw.renewal.failures.
func firing(t *testing.T, rm metricdata.ResourceMetrics) []string {
	t.Helper()
	var alerts []string
	add := func(name string, fire bool) {
		if fire {
			alerts = append(alerts, name)
		}
	}
	outcomes := map[string]uint64{}
	for set, n := range histCounts(t, rm, mAcquire) {
		outcomes[attrValue(set, keyOutcome)] += n
	}
	add("LockWaitsSlow", slowWaits(rm, 1) > 0)
	unreachable := int64(0)
	for _, v := range sums(t, rm, mUnreachable) {
		unreachable = max(unreachable, v)
	}
	failedDials := int64(0)
	for set, v := range sums(t, rm, mDials) {
		if attrValue(set, keyErrorType) != "" {
			failedDials += v
		}
	}
	add("RedisUnavailable", unreachable > 0 || outcomes["unavailable"] > 0 || failedDials > 0)
	lost := int64(0)
	for set, v := range sums(t, rm, mLost) {
		if attrValue(set, keyLossCause) != "closed" {
			lost += v
		}
	}
	add("LeasesLost", lost > 0)
	forced := int64(0)
	for _, v := range sums(t, rm, mForced) {
		forced += v
	}
	add("ForcedUnlock", forced > 0)
	add("AcquireErrors", outcomes["error"] > 0)
	renewFailures := int64(0)
	for _, v := range sums(t, rm, mRenewErr) {
		renewFailures += v
	}
	add("RenewalFailures", renewFailures > 0)
	return alerts
}

// slowWaits counts the acquires that waited and were granted or cancelled
// after over threshold seconds (by the histogram's buckets).
func slowWaits(rm metricdata.ResourceMetrics, threshold float64) uint64 {
	m, ok := findMetric(rm, mAcquire)
	if !ok {
		return 0
	}
	n := uint64(0)
	for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		waited, _ := p.Attributes.Value(keyWaited)
		outcome, _ := p.Attributes.Value(keyOutcome)
		if !waited.AsBool() || (outcome.AsString() != "granted" && outcome.AsString() != "cancelled") {
			continue
		}
		for i, count := range p.BucketCounts {
			if i > 0 && p.Bounds[i-1] >= threshold {
				n += count
			}
		}
	}
	return n
}

// attrValue returns the value of key in an attribute set as attrs encodes
// it ("" if absent).
func attrValue(set string, key attribute.Key) string {
	for kv := range strings.SplitSeq(set, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == string(key) {
			return v
		}
	}
	return ""
}

// TestTelemetryRedisOutage: Redis refuses connections. Every acquire
// ends as outcome=unavailable with error.type=unavailable (an error that
// wraps ErrUnavailable beside the ctx's), never as a cancelled wait;
// fairrw.redis.unreachable is 1; the outage is one log line however many
// calls fail, and one more once Redis is back. Only the unavailable alert
// fires: nothing looks like contention.
func TestTelemetryRedisOutage(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "orders:outage"
		if err := c.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		addr := e.srv.Addr()
		e.srv.Close() // refused from now on
		// The Client learns it at its next dial: until its connection's
		// close is seen, a call can go unanswered instead (with two copies
		// of the suite side by side, one of the Locks below was cut by its
		// ctx before rueidis saw the close: "did not answer in time").
		// Pings until a dial was refused, which the gauge shows (a Ping
		// that its ctx cut short does not count).
		eventually(t, "a dial refused", func() bool {
			pctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_ = c.Ping(pctx)
			return sums(t, e.collect(t), mUnreachable)[attrs(deployed)] == 1
		})

		ctx, request := e.appSpan("request")
		const calls = 5
		for range calls {
			lctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err := c.RWMutex(name).Lock(lctx)
			cancel()
			if !errors.Is(err, fairrw.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock while Redis refuses: %v, want ErrUnavailable and the ctx's error", err)
			}
		}
		request.End()

		locks := e.ended("fairrw.Lock")
		if len(locks) != calls {
			t.Fatalf("%d fairrw.Lock spans, want %d", len(locks), calls)
		}
		for _, s := range locks {
			assertSpan(t, s, spanWant{
				kind:    trace.SpanKindInternal,
				parent:  request.SpanContext(),
				status:  codes.Error,
				events:  []string{"exception"},
				attrs:   append(acquireAttrs(name, fairrw.Write, p), keyOutcome.String("unavailable"), keyWaited.Bool(false), keyErrorType.String("unavailable")),
				present: []attribute.Key{keyAttempts, keyWait},
			})
			if got := s.Status().Description; got != fairrw.ErrUnavailable.Error() {
				t.Errorf("status %q, want %q", got, fairrw.ErrUnavailable.Error())
			}
		}
		rm := e.collect(t)
		wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{withOutcome(fairrw.Write, p, "unavailable", false, "unavailable"): calls})
		wantPoints(t, mUnreachable, sums(t, rm, mUnreachable), map[string]int64{attrs(deployed): 1})
		wantPoints(t, mWaiters, sums(t, rm, mWaiters), nil) // nobody waited for a lock
		if got, want := firing(t, rm), []string{"RedisUnavailable"}; !slices.Equal(got, want) {
			t.Errorf("alerts %q, want %q", got, want)
		}
		// At Info and above, as a production logger: what the outage left
		// behind is logged at Debug (the give-back of a Lock whose attempt
		// the broken connection left unanswered).
		recs := e.logs.atLeast(slog.LevelInfo)
		if len(recs) != 1 || recs[0].Level != slog.LevelWarn || recs[0].Message != "fairrw: Redis unreachable" {
			for _, r := range recs {
				t.Logf("log: %s %q %v", r.Level, r.Message, recordAttrs(r))
			}
			t.Fatalf("%d log records, want one: the outage's", len(recs))
		}
		if got := recordAttrs(recs[0]); got["addr"] != addr || got["error.type"] != "unavailable" || got["deployment"] != deployment {
			t.Errorf("the outage's line: %v, want its address, deployment and error.type", got)
		}

		// Redis is back: locks are granted, and the outage ends in the log
		// and the gauge.
		if err := e.srv.Restart(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "granted again", func() bool {
			lctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			l, err := c.RWMutex(name).Lock(lctx)
			if err != nil {
				return false
			}
			return l.Unlock(context.Background()) == nil
		})
		eventually(t, "the outage's end logged", func() bool { return len(e.logs.atLeast(slog.LevelInfo)) >= 2 })
		recs = e.logs.atLeast(slog.LevelInfo)
		if len(recs) != 2 || recs[1].Level != slog.LevelInfo || recs[1].Message != "fairrw: Redis reachable again" {
			t.Fatalf("log records %v, want the outage's two lines", recs)
		}
		if v := logValue(t, recs[1], "outage"); v.Kind() != slog.KindFloat64 || v.Float64() <= 0 {
			t.Errorf("outage=%v, want its length in seconds", v)
		}
		wantPoints(t, mUnreachable, sums(t, e.collect(t), mUnreachable), map[string]int64{attrs(deployed): 0})
	})
}

// TestTelemetryOutageEndsWait: a Lock waiting for a release when Redis
// goes away times out as Redis's outage (ErrUnavailable beside the ctx's
// error, outcome=unavailable), not as a lock held too long: no release
// could have reached it. Its Client learns of the outage from its
// subscription's connection.
func TestTelemetryOutageEndsWait(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "orders:stranded"
		if _, err := e.plainClient(t, p).RWMutex(name).Lock(context.Background()); err != nil {
			t.Fatal(err) // held until Redis goes away
		}
		got := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err := c.RWMutex(name).Lock(ctx)
			got <- err
		}()
		eventually(t, "waiting", func() bool {
			return sums(t, e.collect(t), mWaiters)[modePolicy(fairrw.Write, p)] == 1
		})
		e.srv.Close()
		if err := <-got; !errors.Is(err, fairrw.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a wait that Redis's outage ended: %v, want ErrUnavailable and the ctx's error", err)
		}
		rm := e.collect(t)
		wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{withOutcome(fairrw.Write, p, "unavailable", true, "unavailable"): 1})
		if got, want := firing(t, rm), []string{"RedisUnavailable"}; !slices.Equal(got, want) {
			t.Errorf("alerts %q, want %q", got, want)
		}
	})
}

// TestTelemetryContentionIsNoOutage: the other side of
// TestTelemetryRedisOutage: a lock held too long makes a wait time out
// after over a second, which fires the slow-waits alert and no other, and
// logs nothing.
func TestTelemetryContentionIsNoOutage(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "orders:contended"
		e.holdElsewhere(t, p, name)
		ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
		defer cancel()
		if _, err := c.RWMutex(name).Lock(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fairrw.ErrUnavailable) {
			t.Fatalf("Lock of a lock held elsewhere: %v, want the ctx's deadline and not ErrUnavailable", err)
		}
		rm := e.collect(t)
		wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{withOutcome(fairrw.Write, p, "cancelled", true, "deadline_exceeded"): 1})
		if got, want := firing(t, rm), []string{"LockWaitsSlow"}; !slices.Equal(got, want) {
			t.Errorf("alerts %q, want %q", got, want)
		}
		// Nothing is logged for a wait timeout, but for the give-back of
		// its queue entry when Redis did not confirm it within the clean-up
		// grace (a loaded machine: two suites side by side), which goes on
		// in the background and is logged as such until done.
		recs := e.logs.atLeast(slog.LevelInfo)
		recs = slices.DeleteFunc(recs, backgroundGiveBack)
		if len(recs) != 0 {
			t.Errorf("logged %d records for a wait timeout, want none", len(recs))
			for _, r := range recs {
				t.Logf("logged: %s %q %v", r.Level, r.Message, recordAttrs(r))
			}
		}
		e.awaitBackgroundDone(t)
	})
}

// TestTelemetryShutdownIsNoDeploy: a deploy, Shutdown of a Client with
// many holds and a waiting Lock, fires none of the documented alerts: no
// lease counts as lost, no lease.lost span, no Error status; one
// fairrw.Shutdown span and one log line say what it released; the waiting
// Lock ends as outcome=closed. (Close of live holds stays a loss of cause
// closed: TestTelemetryLeaseClosed.)
func TestTelemetryShutdownIsNoDeploy(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const holds = 40
		for i := range holds {
			m := c.RWMutex(fmt.Sprintf("deploy:%d", i))
			take := m.Lock
			if i%2 == 1 {
				take = m.RLock
			}
			if _, err := take(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		e.holdElsewhere(t, p, "deploy:busy")
		waited := make(chan error, 1)
		go func() {
			_, err := c.RWMutex("deploy:busy").Lock(context.Background())
			waited <- err
		}()
		eventually(t, "waiting", func() bool {
			return sums(t, e.collect(t), mWaiters)[modePolicy(fairrw.Write, p)] == 1
		})

		ctx, deploy := e.appSpan("deploy")
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := c.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		deploy.End()
		if err := <-waited; !errors.Is(err, fairrw.ErrClosed) {
			t.Fatalf("the waiting Lock: %v, want ErrClosed", err)
		}

		if lost := e.ended("fairrw.lease.lost"); len(lost) != 0 {
			t.Errorf("%d fairrw.lease.lost spans, want none", len(lost))
		}
		retried := 0
		for _, s := range e.spans.Ended() {
			if s.Status().Code != codes.Error {
				continue
			}
			// A round trip's own span (EVALSHA) that its try's window ended
			// is one try of a release that was tried again (on a loaded
			// machine's miniredis, in CI): the release's outcome is on
			// fairrw's spans and metrics, checked here and below.
			if !strings.HasPrefix(s.Name(), "fairrw.") && s.Status().Description == context.DeadlineExceeded.Error() {
				retried++
				continue
			}
			t.Errorf("span %s has an Error status (%q)", s.Name(), s.Status().Description)
		}
		if retried > 0 {
			t.Logf("%d round trips ended by their try's window, tried again", retried)
		}
		assertSpan(t, e.only(t, "fairrw.Shutdown"), spanWant{
			kind:   trace.SpanKindInternal,
			parent: deploy.SpanContext(),
			attrs: []attribute.KeyValue{deployed, keyClientID.String(hidden.ClientID(c)),
				keyShutLeases.Int(holds), keyShutReleased.Int(holds), keyShutLeft.Int(0)},
		})
		lock := e.ended("fairrw.Lock")
		assertSpan(t, lock[len(lock)-1], spanWant{
			kind:    trace.SpanKindInternal,
			attrs:   append(acquireAttrs("deploy:busy", fairrw.Write, p), keyOutcome.String("closed"), keyWaited.Bool(true), keyErrorType.String("closed")),
			present: []attribute.Key{keyAttempts, keyWait},
		})

		rm := e.collect(t)
		if got := firing(t, rm); len(got) != 0 {
			t.Errorf("a deploy fires %q, want no alert", got)
		}
		wantPoints(t, mLost, sums(t, rm, mLost), nil)
		wantPoints(t, mHolds, sums(t, rm, mHolds), map[string]int64{modePolicy(fairrw.Write, p): 0, modePolicy(fairrw.Read, p): 0})
		if n := histCounts(t, rm, mHold); n[modePolicy(fairrw.Write, p)]+n[modePolicy(fairrw.Read, p)] != holds {
			t.Errorf("hold.duration %v, want the %d holds' ends", n, holds)
		}
		if got := histCounts(t, rm, mAcquire)[withOutcome(fairrw.Write, p, "closed", true, "closed")]; got != 1 {
			t.Errorf("the waiting Lock counted %d times as closed, want once", got)
		}
		// One line, beside those of the waiting Lock's give-back, should
		// Redis not confirm it within the clean-up grace on a loaded
		// machine (see TestTelemetryLockCancelled).
		var lines []slog.Record
		for _, r := range e.logs.records() {
			if !strings.Contains(r.Message, "in the background") {
				lines = append(lines, r)
			}
		}
		if len(lines) != 1 || lines[0].Level != slog.LevelInfo || lines[0].Message != "fairrw: shut down" {
			t.Fatalf("log records %v, want one: fairrw: shut down", lines)
		}
		got := recordAttrs(lines[0])
		if got["leases"] != "40" || got["owners_released"] != "40" || got["owners_left"] != "0" {
			t.Errorf("shut down %v, want 40 leases ended, 40 owners released, none left", got)
		}
		if v := logValue(t, lines[0], "took"); v.Kind() != slog.KindFloat64 {
			t.Errorf("took=%v, want seconds", v)
		}
	})
}

// TestTelemetryForceUnlock: a ForceUnlock that ends another process's hold
// is a span under the caller's (with the holder it ended, and its two
// round trips: the look at the holders, and the force), a count, and a
// Warn line naming the lock, this Client and the holder, joined to the
// trace. One that finds the lock free is an answer: no count, no line.
func TestTelemetryForceUnlock(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		traced := &traceLogs{}
		c := e.client(t, p, fairrw.WithLogger(slog.New(traced)))
		const name = "orders:forced"
		held, err := e.plainClient(t, p).RWMutex(name).Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}

		ctx, operator := e.appSpan("operator")
		if err := c.RWMutex(name).ForceUnlock(ctx, fairrw.Write); err != nil {
			t.Fatal(err)
		}
		if err := c.RWMutex(name).ForceUnlock(ctx, fairrw.Write); !errors.Is(err, fairrw.ErrNotHeld) {
			t.Fatalf("ForceUnlock of a free lock: %v, want ErrNotHeld", err)
		}
		operator.End()

		spans := e.ended("fairrw.ForceUnlock")
		if len(spans) != 2 {
			t.Fatalf("%d fairrw.ForceUnlock spans, want 2", len(spans))
		}
		base := []attribute.KeyValue{keyLockName.String(name), keyLockMode.String("write"), keyPolicy.String(p.String()), deployed,
			keyClientID.String(hidden.ClientID(c))}
		assertSpan(t, spans[0], spanWant{
			kind:   trace.SpanKindInternal,
			parent: operator.SpanContext(),
			attrs:  append(base, keyForced.StringSlice([]string{held.Owner()})),
		})
		calls := e.calls(spans[0].SpanContext())
		if len(calls) != 2 {
			t.Fatalf("%d round trips under the ForceUnlock, want 2", len(calls))
		}
		assertRedisCall(t, calls[0], spans[0].SpanContext(), "fairrw.inspect")
		assertRedisCall(t, calls[1], spans[0].SpanContext(), "fairrw.force_unlock")
		assertSpan(t, spans[1], spanWant{ // not held: no failure
			kind:   trace.SpanKindInternal,
			parent: operator.SpanContext(),
			attrs:  append(base, keyForced.StringSlice([]string{}), keyErrorType.String("not_held")),
		})

		rm := e.collect(t)
		wantPoints(t, mForced, sums(t, rm, mForced), map[string]int64{modePolicy(fairrw.Write, p): 1})
		if got, want := firing(t, rm), []string{"ForcedUnlock"}; !slices.Equal(got, want) {
			t.Errorf("alerts %q, want %q", got, want)
		}
		recs := traced.records()
		if len(recs) != 1 {
			t.Fatalf("%d log records, want 1: %v", len(recs), recs)
		}
		r := recs[0]
		if r.level != slog.LevelWarn || r.msg != "fairrw: lock force-unlocked" {
			t.Errorf("log %s %q", r.level, r.msg)
		}
		want := map[string]string{"lock": name, "mode": "write", "policy": p.String(), "by": hidden.ClientID(c), "holders": held.Owner()}
		for k, v := range want {
			if r.attrs[k] != v {
				t.Errorf("log %s=%q, want %q", k, r.attrs[k], v)
			}
		}
		if !sameSpan(r.span, spans[0].SpanContext()) {
			t.Errorf("the line is logged in span %v, want the ForceUnlock's %v", r.span.SpanID(), spans[0].SpanContext().SpanID())
		}
	})
}

// TestTelemetryCohortPasses: Locks of one Client on one name pass the
// write among themselves (WithCohorts): each pass is counted, and the
// Locks that waited (passed the write, or granted by Redis after the
// cohort's run) count as waits, not uncontended grants. On miniredis, which
// has no client tracking, a Client cannot know whether another Client's
// reader or writer waits: WriterPreferring passes at most twice per Redis
// grant, PhaseFair not at all (WithCohorts), so the count is checked
// against the Leases that a pass made.
func TestTelemetryCohortPasses(t *testing.T) {
	t.Parallel()
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()} {
		t.Run(p.String(), func(t *testing.T) {
			parallelTimed(t)
			e := newOtelEnv(t)
			c := e.client(t, p)
			const name, waiters = "cohort:passes", 3
			first, err := c.RWMutex(name).Lock(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *fairrw.Lease, waiters)
			for range waiters {
				go func() {
					l, err := c.RWMutex(name).Lock(context.Background())
					if err != nil {
						t.Error(err)
					}
					got <- l
				}()
			}
			eventually(t, "waiting", func() bool {
				return sums(t, e.collect(t), mWaiters)[modePolicy(fairrw.Write, p)] == waiters
			})
			l := first
			passes := int64(0)
			for range waiters {
				if err := l.Unlock(context.Background()); err != nil {
					t.Fatal(err)
				}
				l = <-got
				if hidden.WokenBy(l) == "cohort" {
					passes++
				}
			}
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
			if p.String() == fairrw.WriterPreferring().String() && passes == 0 {
				t.Errorf("no Lock was passed the write (WriterPreferring passes up to twice per grant without tracking)")
			}
			rm := e.collect(t)
			wantPasses := map[string]int64{}
			if passes > 0 {
				wantPasses[policyOnly(p)] = passes
			}
			wantPoints(t, mPasses, sums(t, rm, mPasses), wantPasses)
			wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{
				withOutcome(fairrw.Write, p, "granted", false): 1,
				withOutcome(fairrw.Write, p, "granted", true):  waiters,
			})
		})
	}
}

// traceLogs is a slog.Handler keeping every record but New's slow-connect
// warning (slowNew) with the span of the ctx it was logged with, as a
// handler that adds trace ids would read it.
type traceLogs struct {
	mu   sync.Mutex
	recs []tracedRecord
}

type tracedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
	span  trace.SpanContext
}

func (h *traceLogs) Enabled(context.Context, slog.Level) bool { return true }

func (h *traceLogs) Handle(ctx context.Context, r slog.Record) error {
	if slowNew(r.Message) { // the machine's load, not a lock event
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, tracedRecord{level: r.Level, msg: r.Message, attrs: recordAttrs(r), span: trace.SpanContextFromContext(ctx)})
	return nil
}

func (h *traceLogs) WithAttrs([]slog.Attr) slog.Handler { panic("traceLogs.WithAttrs") }
func (h *traceLogs) WithGroup(string) slog.Handler      { panic("traceLogs.WithGroup") }

func (h *traceLogs) records() []tracedRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}
