package fairrw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names fairrw's tracer and meter.
const instrumentationName = "github.com/fairrw/rwlock/fairrw"

// Span and metric attributes: db.system.name from the OpenTelemetry
// semantic conventions, the rest under the "fairrw." prefix. Durations are
// in seconds, as the conventions measure them.
const (
	attrLockName      = attribute.Key("fairrw.lock.name")
	attrLockMode      = attribute.Key("fairrw.lock.mode")        // "read" or "write"
	attrPolicy        = attribute.Key("fairrw.policy")           // Policy.String()
	attrOutcome       = attribute.Key("fairrw.acquire.outcome")  // outcome* below
	attrAttempts      = attribute.Key("fairrw.acquire.attempts") // acquire attempts sent
	attrWait          = attribute.Key("fairrw.acquire.wait")     // seconds from the call to its return
	attrWokenBy       = attribute.Key("fairrw.acquire.woken_by") // Lease.wokenBy, when it waited
	attrToken         = attribute.Key("fairrw.lease.token")      // the fencing token
	attrHeld          = attribute.Key("fairrw.lease.held")       // seconds from grant to end
	attrLossCause     = attribute.Key("fairrw.lease.loss_cause") // lossCause.String()
	attrRenewLeases   = attribute.Key("fairrw.renew.leases")     // leases a round renewed
	attrRenewBatches  = attribute.Key("fairrw.renew.batches")    // script calls of a round
	attrRenewFailures = attribute.Key("fairrw.renew.failed_batches")
)

// Acquire outcomes.
const (
	outcomeGranted     = "granted"
	outcomeNotAcquired = "not_acquired" // TryLock or TryRLock found it held
	outcomeCancelled   = "cancelled"    // ctx ended first
	outcomeError       = "error"
)

var outcomes = [...]string{outcomeGranted, outcomeNotAcquired, outcomeCancelled, outcomeError}

// lossCause says why a lease ended other than by its Unlock.
type lossCause uint8

const (
	lossNone         lossCause = iota // unlocked
	lossDeadline                      // a watchdog lease not confirmed before its local deadline
	lossExpired                       // a WithLease lease ran out
	lossGone                          // Redis no longer had the hold (renewal or unlock found it gone)
	lossUnlockFailed                  // Unlock could not reach a definite outcome
	lossClosed                        // Close ended it
	lossCauses
)

// String returns the cause as the fairrw.lease.loss_cause attribute
// reports it.
func (c lossCause) String() string {
	switch c {
	case lossDeadline:
		return "deadline"
	case lossExpired:
		return "expired"
	case lossGone:
		return "gone"
	case lossUnlockFailed:
		return "unlock_failed"
	case lossClosed:
		return "closed"
	default:
		return "none"
	}
}

// telemetry is a Client's instrumentation: its tracer, instruments and
// logger. Every attribute set a metric records is built once here, so that
// recording allocates nothing; spans set attributes only when recording.
type telemetry struct {
	tracer trace.Tracer
	log    *slog.Logger
	policy string

	acquireDuration metric.Float64Histogram
	holdDuration    metric.Float64Histogram
	holds           metric.Int64UpDownCounter
	waiters         metric.Int64UpDownCounter
	renewals        metric.Int64Counter
	renewalFailures metric.Int64Counter
	leasesLost      metric.Int64Counter
	pending         metric.Int64UpDownCounter

	clientSpan []trace.SpanStartOption
	rootSpan   []trace.SpanStartOption
	// Measurement options by mode index (0 read, 1 write), outcome and
	// loss cause.
	byMode    [2]measure
	byOutcome [2][len(outcomes)]measure
	byLoss    [2][lossCauses]measure
	byPolicy  measure
}

// measure is one attribute set as the options of Record and of Add. They
// are slices built once: passing one option to the variadic Record or Add
// would allocate a slice on every call.
type measure struct {
	record []metric.RecordOption
	add    []metric.AddOption
}

func newMeasure(kvs ...attribute.KeyValue) measure {
	o := metric.WithAttributeSet(attribute.NewSet(kvs...))
	return measure{record: []metric.RecordOption{o}, add: []metric.AddOption{o}}
}

// durationBuckets suit lock waits and holds: from 100 µs (an uncontended
// grant on loopback) to a minute.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, log *slog.Logger, policy string) (*telemetry, error) {
	t := &telemetry{
		tracer:     tp.Tracer(instrumentationName),
		log:        log,
		policy:     policy,
		clientSpan: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
		rootSpan:   []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal)},
	}
	m := mp.Meter(instrumentationName)
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	t.acquireDuration, err = m.Float64Histogram("fairrw.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an acquire call to its return, by mode, policy and outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	t.holdDuration, err = m.Float64Histogram("fairrw.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a grant to the end of its lease (unlocked or lost), by mode and policy."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	t.holds, err = m.Int64UpDownCounter("fairrw.holds.active", metric.WithUnit("{hold}"),
		metric.WithDescription("Leases held by this process, by mode and policy."))
	add(err)
	t.waiters, err = m.Int64UpDownCounter("fairrw.waiters", metric.WithUnit("{waiter}"),
		metric.WithDescription("Acquire calls of this process waiting for a release, by mode and policy."))
	add(err)
	t.renewals, err = m.Int64Counter("fairrw.renewals", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases the watchdog renewed, by policy."))
	add(err)
	t.renewalFailures, err = m.Int64Counter("fairrw.renewal.failures", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases whose renewal call failed (no answer, an error), by policy; they are lost if no later round confirms them."))
	add(err)
	t.leasesLost, err = m.Int64Counter("fairrw.leases.lost", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases that ended other than by Unlock, by mode, policy and cause."))
	add(err)
	t.pending, err = m.Int64UpDownCounter("fairrw.background.pending", metric.WithUnit("{task}"),
		metric.WithDescription("Give-backs and releases that Redis had not confirmed when their caller returned, still being retried by this process."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fairrw: create metric instruments: %w", err)
	}

	p := attrPolicy.String(policy)
	t.byPolicy = newMeasure(p)
	for i, mode := range [2]Mode{Read, Write} {
		md := attrLockMode.String(mode.String())
		t.byMode[i] = newMeasure(md, p)
		for j, o := range outcomes {
			t.byOutcome[i][j] = newMeasure(md, p, attrOutcome.String(o))
		}
		for c := range lossCauses {
			t.byLoss[i][c] = newMeasure(md, p, attrLossCause.String(c.String()))
		}
	}
	return t, nil
}

func modeIndex(m Mode) int {
	if m == Write {
		return 1
	}
	return 0
}

func outcomeIndex(o string) int {
	for i, x := range outcomes {
		if x == o {
			return i
		}
	}
	return len(outcomes) - 1
}

// outcomeOf classifies an acquire's error.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return outcomeGranted
	case errors.Is(err, ErrNotAcquired):
		return outcomeNotAcquired
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeCancelled
	default:
		return outcomeError
	}
}

// acquireTrace follows one acquire call.
type acquireTrace struct {
	t        *telemetry
	name     string
	span     trace.Span
	start    time.Time
	mode     Mode
	attempts int
}

// startAcquire opens the acquire's span (op is "fairrw.Lock" and so on),
// a child of ctx's span; the returned context carries it. The trace is
// returned by value, to stay on the caller's stack.
func (t *telemetry) startAcquire(ctx context.Context, op string, name string, mode Mode) (context.Context, acquireTrace) {
	ctx, span := t.tracer.Start(ctx, op, t.clientSpan...)
	if span.IsRecording() {
		span.SetAttributes(semconv.DBSystemNameRedis, attrLockName.String(name),
			attrLockMode.String(mode.String()), attrPolicy.String(t.policy))
	}
	return ctx, acquireTrace{t: t, name: name, span: span, start: time.Now(), mode: mode}
}

// end closes the acquire's span and records its duration; l is the granted
// lease, or nil with err.
func (a *acquireTrace) end(l *Lease, err error) {
	t := a.t
	wait := time.Since(a.start)
	outcome := outcomeOf(err)
	t.acquireDuration.Record(context.Background(), wait.Seconds(), a.t.byOutcome[modeIndex(a.mode)][outcomeIndex(outcome)].record...)
	if a.span.IsRecording() {
		a.span.SetAttributes(attrOutcome.String(outcome), attrAttempts.Int(a.attempts), attrWait.Float64(wait.Seconds()))
		if l != nil {
			if w := l.wokenBy(); w != "" {
				a.span.SetAttributes(attrWokenBy.String(w))
			}
			a.span.SetAttributes(attrToken.Int64(int64(l.token)))
		}
		if outcome == outcomeCancelled || outcome == outcomeError {
			a.span.RecordError(err)
			a.span.SetStatus(codes.Error, err.Error())
		}
	}
	a.span.End()
	if outcome == outcomeError && t.log.Enabled(context.Background(), slog.LevelWarn) {
		t.log.Warn("fairrw: acquire failed", "lock", a.name, "mode", a.mode.String(), "policy", t.policy, "error", err)
	}
}

// waiting counts a waiter in (delta 1) or out (-1).
func (t *telemetry) waiting(mode Mode, delta int64) {
	t.waiters.Add(context.Background(), delta, t.byMode[modeIndex(mode)].add...)
}

// background counts a task left to the background in (1) or out (-1).
func (t *telemetry) background(delta int64) {
	t.pending.Add(context.Background(), delta, t.byPolicy.add...)
}

// held counts a hold in (1) or out (-1).
func (t *telemetry) held(mode Mode, delta int64) {
	t.holds.Add(context.Background(), delta, t.byMode[modeIndex(mode)].add...)
}

// leaseEnded records the end of l: its hold time, and a loss with its
// cause (a short span linked to the acquire's, and a log line).
func (t *telemetry) leaseEnded(l *Lease, cause lossCause, err error) {
	held := time.Since(l.granted)
	mi := modeIndex(l.mode)
	t.holdDuration.Record(context.Background(), held.Seconds(), t.byMode[mi].record...)
	if cause == lossNone {
		return
	}
	t.leasesLost.Add(context.Background(), 1, t.byLoss[mi][cause].add...)
	_, span := t.tracer.Start(context.Background(), "fairrw.lease.lost",
		trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: l.acquireSpan}))
	if span.IsRecording() {
		span.SetAttributes(semconv.DBSystemNameRedis, attrLockName.String(l.lockName()), attrLockMode.String(l.mode.String()),
			attrPolicy.String(t.policy), attrLossCause.String(cause.String()), attrHeld.Float64(held.Seconds()),
			attrToken.Int64(int64(l.token)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	level := slog.LevelError
	if cause == lossClosed {
		level = slog.LevelInfo // the caller closed the Client: expected
	}
	t.log.Log(context.Background(), level, "fairrw: lease lost", "lock", l.lockName(), "mode", l.mode.String(),
		"policy", t.policy, "cause", cause.String(), "held", held, "error", err)
}

// startUnlock opens the span of an Unlock, a child of ctx's span linked to
// the lease's acquire. The link is added once the span records, so that a
// no-op tracer costs no options built per call.
func (t *telemetry) startUnlock(ctx context.Context, l *Lease) trace.Span {
	_, span := t.tracer.Start(ctx, "fairrw.Unlock", t.clientSpan...)
	if span.IsRecording() {
		span.AddLink(trace.Link{SpanContext: l.acquireSpan})
		span.SetAttributes(semconv.DBSystemNameRedis, attrLockName.String(l.lockName()), attrLockMode.String(l.mode.String()),
			attrPolicy.String(t.policy), attrHeld.Float64(time.Since(l.granted).Seconds()))
	}
	return span
}

// endUnlock closes an Unlock's span.
func (t *telemetry) endUnlock(span trace.Span, l *Lease, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		t.log.Warn("fairrw: unlock failed", "lock", l.lockName(), "mode", l.mode.String(), "policy", t.policy, "error", err)
	}
	span.End()
}

// renewRound records one watchdog round: a root span of its own (the
// round serves many traces), and the renewal counters.
func (t *telemetry) renewRound(start time.Time, leases, batches, failedBatches, failedLeases int, err error) {
	t.renewals.Add(context.Background(), int64(leases-failedLeases), t.byPolicy.add...)
	if failedLeases > 0 {
		t.renewalFailures.Add(context.Background(), int64(failedLeases), t.byPolicy.add...)
	}
	_, span := t.tracer.Start(context.Background(), "fairrw.renew", append(t.rootSpan, trace.WithTimestamp(start))...)
	if span.IsRecording() {
		span.SetAttributes(semconv.DBSystemNameRedis, attrPolicy.String(t.policy), attrRenewLeases.Int(leases-failedLeases),
			attrRenewBatches.Int(batches), attrRenewFailures.Int(failedBatches))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
	if err != nil {
		t.log.Warn("fairrw: renewal round failed", "policy", t.policy, "failed_batches", failedBatches,
			"leases", failedLeases, "error", err)
	}
}
