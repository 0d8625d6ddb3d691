package fairrw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairrw/rwlock/internal/wait"
)

// instrumentationName names fairrw's tracer and meter.
const instrumentationName = "github.com/fairrw/rwlock/fairrw"

// Span and metric attributes: those of the OpenTelemetry semantic
// conventions (db.*, server.*, error.type, exception.*) come from semconv,
// the rest are under the "fairrw." prefix. Durations are in seconds, as
// the conventions measure them, in spans, metrics and logs alike.
const (
	attrLockName      = attribute.Key("fairrw.lock.name")
	attrLockMode      = attribute.Key("fairrw.lock.mode")        // "read" or "write"
	attrPolicy        = attribute.Key("fairrw.policy")           // Policy.String()
	attrDeployment    = attribute.Key("fairrw.deployment")       // WithDeployment, or the Redis addresses
	attrOutcome       = attribute.Key("fairrw.acquire.outcome")  // outcome* below
	attrWaited        = attribute.Key("fairrw.acquire.waited")   // it waited for a release
	attrAttempts      = attribute.Key("fairrw.acquire.attempts") // acquire attempts sent
	attrWait          = attribute.Key("fairrw.acquire.wait")     // seconds from the call to its return
	attrWokenBy       = attribute.Key("fairrw.acquire.woken_by") // Lease.wokenBy, when it waited
	attrToken         = attribute.Key("fairrw.lease.token")      // the fencing token
	attrHeld          = attribute.Key("fairrw.lease.held")       // seconds from grant to end
	attrLossCause     = attribute.Key("fairrw.lease.loss_cause") // lossCause.String()
	attrRenewLeases   = attribute.Key("fairrw.renew.leases")     // leases a round renewed
	attrRenewBatches  = attribute.Key("fairrw.renew.batches")    // script calls of a round
	attrRenewFailures = attribute.Key("fairrw.renew.failed_batches")
	attrClientID      = attribute.Key("fairrw.client.id")                // the Client's id, which starts its owners'
	attrForcedHolders = attribute.Key("fairrw.force_unlock.holders")     // the owners whose hold a ForceUnlock ended
	attrShutLeases    = attribute.Key("fairrw.shutdown.leases")          // leases Shutdown ended
	attrShutReleased  = attribute.Key("fairrw.shutdown.owners_released") // owners whose holds it released
	attrShutLeft      = attribute.Key("fairrw.shutdown.owners_left")     // owners it could not release (they expire)
)

// lossCause says why a lease ended other than by its Unlock.
type lossCause uint8

const (
	lossNone         lossCause = iota // unlocked
	lossDeadline                      // a watchdog lease not confirmed before its local deadline
	lossExpired                       // a WithLease lease ran out
	lossGone                          // Redis no longer had the hold (renewal or unlock found it gone)
	lossUnlockFailed                  // Unlock could not reach a definite outcome
	lossClosed                        // Close ended it
	lossShutdown                      // Shutdown ended it, and released its hold: no loss
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
	case lossShutdown:
		return "shutdown"
	default:
		return "none"
	}
}

// telemetry is a Client's instrumentation: its tracer, instruments and
// logger, for one policy name (the Client's, or its Mutexes'). Every
// attribute set a metric records on a lock's path is built once here, so
// that recording allocates nothing; spans set attributes only when
// recording. The instruments and what the Client knows of Redis's
// reachability (health) are shared by a Client's telemetries.
type telemetry struct {
	tracer trace.Tracer
	// spans says whether tracer's spans could be recorded: the hot paths
	// (Lock, Unlock) start none when they could not.
	spans      spanSource
	log        *slog.Logger
	policy     string
	deployment string
	// addr names the Redis in logs: the addresses the Client was given.
	addr     string
	clientID string
	// show is WithRedactedNames's function (nil: names as they are).
	show func(name string) string
	// roundTrips: Redis round trips have spans of their own (WithRedisSpans).
	roundTrips bool
	// slowAnswer: how long an unanswered call takes to count as an outage.
	slowAnswer time.Duration
	inst       *instruments
	health     *redisHealth
	// server is server.address and server.port of the Redis calls' spans,
	// once the Client knows every call goes to that one server.
	server *redisServer

	internalSpan []trace.SpanStartOption
	redisSpan    []trace.SpanStartOption // a Redis round trip
	// Measurement options by mode index (0 read, 1 write), whether the
	// acquire waited, error kind, and loss cause.
	byMode    [2]measure
	byAcquire [2][2][errKinds]measure
	byLoss    [2][lossCauses]measure
	byPolicy  measure
	// deploymentOnly is the deployment alone (fairrw.redis.unreachable).
	deploymentOnly measure
	// byRenewal are the renewal failures by error kind.
	byRenewal [errKinds]measure
}

// instruments are a Client's metric instruments.
type instruments struct {
	acquireDuration  metric.Float64Histogram
	holdDuration     metric.Float64Histogram
	holds            metric.Int64UpDownCounter
	waiters          metric.Int64UpDownCounter
	renewals         metric.Int64Counter
	renewalFailures  metric.Int64Counter
	leasesLost       metric.Int64Counter
	pending          metric.Int64UpDownCounter
	cohortPasses     metric.Int64Counter
	sharedReads      metric.Int64Counter
	forceUnlocks     metric.Int64Counter
	redisDials       metric.Int64Counter
	redisConnections metric.Int64UpDownCounter
	redisReconnects  metric.Int64Counter
	redisUnreachable metric.Int64UpDownCounter
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

// telemetryConfig is what New tells the telemetry of the Client.
type telemetryConfig struct {
	tracer     trace.TracerProvider
	meter      metric.MeterProvider
	log        *slog.Logger
	policy     string
	deployment string
	addr       string // the Redis addresses, comma-separated
	single     bool   // addr is one server, the one every call goes to
	clientID   string
	show       func(string) string
	roundTrips bool // WithRedisSpans
	slowAnswer time.Duration
}

func newTelemetry(cfg telemetryConfig) (*telemetry, error) {
	inst, err := newInstruments(cfg.meter.Meter(instrumentationName))
	if err != nil {
		return nil, err
	}
	t := &telemetry{
		tracer:       cfg.tracer.Tracer(instrumentationName),
		spans:        spanSourceOf(cfg.tracer),
		log:          cfg.log,
		deployment:   cfg.deployment,
		addr:         cfg.addr,
		clientID:     cfg.clientID,
		show:         cfg.show,
		roundTrips:   cfg.roundTrips,
		slowAnswer:   cfg.slowAnswer,
		inst:         inst,
		internalSpan: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)},
		redisSpan:    []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
	}
	t.health = newRedisHealth(t)
	t.server = &redisServer{base: []attribute.KeyValue{semconv.DBSystemNameRedis, attrDeployment.String(cfg.deployment)}}
	t.deploymentOnly = newMeasure(attrDeployment.String(cfg.deployment))
	if host, port, ok := splitAddress(cfg.addr); ok && cfg.single {
		t.server.one = []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(port)}
	}
	t.server.build(nil)
	return t.forPolicy(cfg.policy), nil
}

// redisServer is what the spans of Redis round trips say of the server.
type redisServer struct {
	base []attribute.KeyValue // db.system.name, fairrw.deployment
	one  []attribute.KeyValue // server.address and server.port of the Client's one address, if it has one
	// calls are every round trip's attributes by procedure, built once:
	// a span then sets them in one call. Replaced once a standalone client
	// serves the one address (servedBy).
	calls atomic.Pointer[map[string][]attribute.KeyValue]
}

// procedures are the scripts whose round trips are spans of their own.
var procedures = []string{"fairrw.acquire", "fairrw.release", "fairrw.give_back", "fairrw.force_unlock", "fairrw.inspect", "fairrw.renew"}

// build makes the round trips' attributes, with server's.
func (s *redisServer) build(server []attribute.KeyValue) {
	calls := make(map[string][]attribute.KeyValue, len(procedures))
	for _, p := range procedures {
		kvs := append(slices.Clone(s.base), server...)
		calls[p] = append(kvs, semconv.DBOperationName("EVALSHA"), semconv.DBStoredProcedureName(p))
	}
	s.calls.Store(&calls)
}

// servedBy tells the telemetry whether the Client's rueidis client is a
// standalone one: a cluster's calls go to the node of their slot, a
// Sentinel's to the primary of the moment, not to the address given.
func (t *telemetry) servedBy(standalone bool) {
	if standalone && t.server.one != nil {
		t.server.build(t.server.one)
	}
}

// callAttrs are the attributes of a round trip of procedure.
func (t *telemetry) callAttrs(procedure string) []attribute.KeyValue {
	if kvs, ok := (*t.server.calls.Load())[procedure]; ok {
		return kvs
	}
	return append(slices.Clone(t.server.base), semconv.DBOperationName("EVALSHA"), semconv.DBStoredProcedureName(procedure))
}

// forPolicy returns telemetry sharing t's instruments and health, under
// the policy name policy.
func (t *telemetry) forPolicy(policy string) *telemetry {
	n := *t
	n.policy = policy
	p, d := attrPolicy.String(policy), attrDeployment.String(t.deployment)
	n.byPolicy = newMeasure(p, d)
	for k := range errKinds {
		if k != kindNone {
			n.byRenewal[k] = newMeasure(p, d, semconv.ErrorTypeKey.String(k.info().errorType))
		}
	}
	for i, mode := range [2]Mode{Read, Write} {
		md := attrLockMode.String(mode.String())
		n.byMode[i] = newMeasure(md, p, d)
		for w, waited := range [2]bool{false, true} {
			for k := range errKinds {
				kvs := []attribute.KeyValue{md, p, d, attrOutcome.String(k.info().outcome), attrWaited.Bool(waited)}
				if k != kindNone && k != kindNotAcquired { // a refusal is an answer, no error
					kvs = append(kvs, semconv.ErrorTypeKey.String(k.info().errorType))
				}
				n.byAcquire[i][w][k] = newMeasure(kvs...)
			}
		}
		for c := range lossCauses {
			n.byLoss[i][c] = newMeasure(md, p, d, attrLossCause.String(c.String()))
		}
	}
	return &n
}

func newInstruments(m metric.Meter) (*instruments, error) {
	in := &instruments{}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	in.acquireDuration, err = m.Float64Histogram("fairrw.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an acquire call to its return, by mode, policy, outcome, whether it waited for a release, and error.type."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	in.holdDuration, err = m.Float64Histogram("fairrw.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a grant to the end of its lease (unlocked, lost or shut down), by mode and policy."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	add(err)
	in.holds, err = m.Int64UpDownCounter("fairrw.holds.active", metric.WithUnit("{hold}"),
		metric.WithDescription("Leases held by this process, by mode and policy."))
	add(err)
	in.waiters, err = m.Int64UpDownCounter("fairrw.waiters", metric.WithUnit("{waiter}"),
		metric.WithDescription("Acquire calls of this process waiting for a release, by mode and policy; sum over processes for a lock service's waiters."))
	add(err)
	in.renewals, err = m.Int64Counter("fairrw.renewals", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases the watchdog renewed, by policy."))
	add(err)
	in.renewalFailures, err = m.Int64Counter("fairrw.renewal.failures", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases whose renewal call failed (no answer, an error), by policy and error.type; they are lost if no later round confirms them."))
	add(err)
	in.leasesLost, err = m.Int64Counter("fairrw.leases.lost", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases that ended other than by Unlock or Shutdown, by mode, policy and cause."))
	add(err)
	in.pending, err = m.Int64UpDownCounter("fairrw.background.pending", metric.WithUnit("{task}"),
		metric.WithDescription("Give-backs and releases that Redis had not confirmed when their caller returned, still being retried by this process."))
	add(err)
	in.cohortPasses, err = m.Int64Counter("fairrw.cohort.passes", metric.WithUnit("{pass}"),
		metric.WithDescription("Write holds passed to the next Lock of the Client's cohort without a Redis call, by policy."))
	add(err)
	in.sharedReads, err = m.Int64Counter("fairrw.reads.shared", metric.WithUnit("{read}"),
		metric.WithDescription("Reads granted a share of the Client's read hold without a Redis call, by policy."))
	add(err)
	in.forceUnlocks, err = m.Int64Counter("fairrw.force_unlocks", metric.WithUnit("{unlock}"),
		metric.WithDescription("ForceUnlock calls that freed a lock, ending whoever held it, by mode and policy."))
	add(err)
	in.redisDials, err = m.Int64Counter("fairrw.redis.dials", metric.WithUnit("{dial}"),
		metric.WithDescription("Connections the Client's rueidis client opened to a Redis address, by server.address and error.type (set when the dial failed, or the connection closed before Redis answered on it)."))
	add(err)
	in.redisConnections, err = m.Int64UpDownCounter("fairrw.redis.connections", metric.WithUnit("{connection}"),
		metric.WithDescription("Connections open to a Redis address, by server.address."))
	add(err)
	in.redisReconnects, err = m.Int64Counter("fairrw.redis.reconnects", metric.WithUnit("{connection}"),
		metric.WithDescription("Connections to a Redis address that answered after an earlier connection to it had, by server.address."))
	add(err)
	in.redisUnreachable, err = m.Int64UpDownCounter("fairrw.redis.unreachable", metric.WithUnit("{client}"),
		metric.WithDescription("1 while the Client finds its Redis unreachable (calls or dials failing without an answer, or unanswered for 100 ms), by deployment."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fairrw: create metric instruments: %w", err)
	}
	return in, nil
}

func modeIndex(m Mode) int {
	if m == Write {
		return 1
	}
	return 0
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// splitAddress splits a "host:port" address for server.address and
// server.port.
func splitAddress(addr string) (string, int, bool) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	port, err := strconv.Atoi(p)
	return host, port, err == nil
}

// lockName is the fairrw.lock.name attribute of name, unless redaction
// omits it (ok false).
func (t *telemetry) lockName(name string) (attribute.KeyValue, bool) {
	shown := t.shown(name)
	return attrLockName.String(shown), shown != "" || t.show == nil
}

// shown is name as spans and logs show it (see WithRedactedNames).
func (t *telemetry) shown(name string) string {
	if t.show == nil {
		return name
	}
	return t.show(name)
}

// logName returns the log attributes that name the lock: none when
// redaction omits the name.
func (t *telemetry) logName(name string) []any {
	shown := t.shown(name)
	if shown == "" && t.show != nil {
		return nil
	}
	return []any{"lock", shown}
}

// message is err's text as telemetry shows it: with the lock name as
// redaction shows it. Every error names the lock quoted (%q); one that
// names it otherwise too is shown as its kind's text only.
func (t *telemetry) message(err error, name string) string {
	msg := err.Error()
	if t.show == nil || name == "" {
		return msg
	}
	shown := t.shown(name)
	if shown == "" {
		shown = "<lock>"
	}
	msg = strings.ReplaceAll(msg, strconv.Quote(name), strconv.Quote(shown))
	if strings.Contains(msg, name) {
		return kindOf(err).info().status
	}
	return msg
}

// anonymous is the text of err, which names no lock or several, as
// telemetry shows it: under redaction, a text that may quote a lock name
// (fairrw quotes every name it writes) is shown as its kind's only.
func (t *telemetry) anonymous(err error) string {
	msg := err.Error()
	if t.show != nil && strings.Contains(msg, `"`) {
		return kindOf(err).info().status
	}
	return msg
}

// failed marks span as failed with err, of kind k: error.type, an
// exception event of the kind's type and the error's text, and an error
// status whose description is the kind's (no name, few values).
func (t *telemetry) failed(span trace.Span, err error, k errKind, name string, status bool) {
	info := k.info()
	span.SetAttributes(semconv.ErrorTypeKey.String(info.errorType))
	if !status {
		return
	}
	msg := t.anonymous(err)
	if name != "" {
		msg = t.message(err, name)
	}
	span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(
		semconv.ExceptionType(info.exception), semconv.ExceptionMessage(msg)))
	span.SetStatus(codes.Error, info.status)
}

// logFailure logs a call's failure at Warn, with ctx: msg, then args.
// Refusals by Redis (ErrPermission) are logged once per refusalLogEvery,
// with how many were not.
func (t *telemetry) logFailure(ctx context.Context, k errKind, msg string, args ...any) {
	if !t.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	if k == kindPermission {
		due, suppressed := t.health.refusalDue()
		if !due {
			return
		}
		if suppressed > 0 {
			args = append(args, "refusals_not_logged", suppressed)
		}
	}
	t.log.Log(ctx, slog.LevelWarn, msg, args...)
}

// acquireStats are what an acquire reports of itself to its trace: how
// many attempts it sent, and whether it waited for a release (in Redis,
// or in its Client's cohort or read share).
type acquireStats struct {
	attempts int
	waited   bool
}

// noSpan is the span of a call that starts none (see spanSource): a no-op
// span, which records nothing and whose End does nothing.
var noSpan = trace.SpanFromContext(context.Background())

// acquireTrace follows one acquire call.
type acquireTrace struct {
	t     *telemetry
	ctx   context.Context // the call's, carrying its span: its logs join the trace
	name  string
	span  trace.Span
	start time.Time
	mode  Mode
	stats acquireStats
}

// startAcquire opens the acquire's span (op is "fairrw.Lock" and so on),
// an internal span, a child of ctx's span; the returned context carries
// it. The trace is returned by value, to stay on the caller's stack.
func (t *telemetry) startAcquire(ctx context.Context, op string, name string, mode Mode) (context.Context, acquireTrace) {
	// The call's start, before the span is made, and the span's start too:
	// the wait counts the span's making, which a loaded machine can
	// stretch to milliseconds, and stays within the span.
	start := time.Now()
	if !t.spans.on() {
		return ctx, acquireTrace{t: t, ctx: ctx, name: name, span: noSpan, start: start, mode: mode}
	}
	ctx, span := t.tracer.Start(ctx, op, t.internalSpan[0], trace.WithTimestamp(start))
	if span.IsRecording() {
		if kv, ok := t.lockName(name); ok {
			span.SetAttributes(kv, attrLockMode.String(mode.String()), attrPolicy.String(t.policy), attrDeployment.String(t.deployment))
		} else {
			span.SetAttributes(attrLockMode.String(mode.String()), attrPolicy.String(t.policy), attrDeployment.String(t.deployment))
		}
	}
	return ctx, acquireTrace{t: t, ctx: ctx, name: name, span: span, start: start, mode: mode}
}

// end closes the acquire's span and records its duration; l is the granted
// lease, or nil with err.
func (a *acquireTrace) end(l *Lease, err error) {
	t := a.t
	took := time.Since(a.start)
	k := kindOf(err)
	info := k.info()
	mi := modeIndex(a.mode)
	t.inst.acquireDuration.Record(context.Background(), took.Seconds(), t.byAcquire[mi][boolIndex(a.stats.waited)][k].record...)
	if l != nil && l.woken == wait.Share {
		t.inst.sharedReads.Add(context.Background(), 1, t.byPolicy.add...)
	}
	if a.span.IsRecording() {
		ended := [...]attribute.KeyValue{attrOutcome.String(info.outcome), attrAttempts.Int(a.stats.attempts),
			attrWait.Float64(took.Seconds()), attrWaited.Bool(a.stats.waited), {}, {}}
		n := 4
		if l != nil {
			ended[n], n = attrToken.Int64(int64(l.token)), n+1
			if w := l.wokenBy(); w != "" {
				ended[n], n = attrWokenBy.String(w), n+1
			}
		}
		a.span.SetAttributes(ended[:n]...)
		switch info.outcome {
		case outcomeCancelled, outcomeUnavailable, outcomeError:
			t.failed(a.span, err, k, a.name, true)
		case outcomeClosed:
			t.failed(a.span, err, k, a.name, false) // the caller's doing: no failure
		}
	}
	a.span.End()
	// An unavailable Redis is logged once per outage (redisFailed), a
	// cancelled call not at all.
	if info.outcome == outcomeError {
		t.logFailure(a.ctx, k, "fairrw: acquire failed", append(t.logName(a.name), "mode", a.mode.String(),
			"policy", t.policy, "error.type", info.errorType, "error", t.message(err, a.name))...)
	}
}

// waiting counts a waiter in (delta 1) or out (-1).
func (t *telemetry) waiting(mode Mode, delta int64) {
	t.inst.waiters.Add(context.Background(), delta, t.byMode[modeIndex(mode)].add...)
}

// background counts a task left to the background in (1) or out (-1).
func (t *telemetry) background(delta int64) {
	t.inst.pending.Add(context.Background(), delta, t.byPolicy.add...)
}

// held counts a hold in (1) or out (-1).
func (t *telemetry) held(mode Mode, delta int64) {
	t.inst.holds.Add(context.Background(), delta, t.byMode[modeIndex(mode)].add...)
}

// cohortPassed counts a write hold passed in the Client's cohort.
func (t *telemetry) cohortPassed() {
	t.inst.cohortPasses.Add(context.Background(), 1, t.byPolicy.add...)
}

// leaseEnded records the end of l: its hold time, and a loss with its
// cause (a short span linked to the acquire's, and a log line). A lease
// that Shutdown ended is no loss: Shutdown reports them all at once.
func (t *telemetry) leaseEnded(l *Lease, cause lossCause, err error) {
	held := time.Since(l.granted)
	mi := modeIndex(l.mode)
	t.inst.holdDuration.Record(context.Background(), held.Seconds(), t.byMode[mi].record...)
	if cause == lossNone || cause == lossShutdown {
		return
	}
	t.inst.leasesLost.Add(context.Background(), 1, t.byLoss[mi][cause].add...)
	ctx, span := t.tracer.Start(context.Background(), "fairrw.lease.lost",
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(trace.Link{SpanContext: l.acquireSpan}))
	name := l.lockName()
	k := kindOf(err)
	if span.IsRecording() {
		span.SetAttributes(attrLockMode.String(l.mode.String()), attrPolicy.String(t.policy), attrDeployment.String(t.deployment),
			attrLossCause.String(cause.String()), attrHeld.Float64(held.Seconds()), attrToken.Int64(int64(l.token)),
			semconv.ErrorTypeKey.String(k.info().errorType))
		if kv, ok := t.lockName(name); ok {
			span.SetAttributes(kv)
		}
		span.SetStatus(codes.Error, "fairrw: lease lost: "+cause.String())
	}
	span.End()
	level := slog.LevelError
	if cause == lossClosed {
		level = slog.LevelInfo // the caller closed the Client: expected
	}
	if t.log.Enabled(ctx, level) {
		t.log.Log(ctx, level, "fairrw: lease lost", append(t.logName(name), "mode", l.mode.String(), "policy", t.policy,
			"cause", cause.String(), "held", held.Seconds(), "error.type", k.info().errorType, "error", t.message(err, name))...)
	}
}

// startUnlock opens the span of an Unlock, an internal span, a child of
// ctx's span linked to the lease's acquire; the returned context carries
// it. The link is added once the span records, so that a no-op tracer
// costs no options built per call.
func (t *telemetry) startUnlock(ctx context.Context, l *Lease) (context.Context, trace.Span) {
	if !t.spans.on() || l.spare.Load() {
		return ctx, noSpan
	}
	ctx, span := t.tracer.Start(ctx, "fairrw.Unlock", t.internalSpan...)
	if span.IsRecording() {
		span.AddLink(trace.Link{SpanContext: l.acquireSpan})
		attrs := [...]attribute.KeyValue{attrLockMode.String(l.mode.String()), attrPolicy.String(t.policy), attrDeployment.String(t.deployment),
			attrHeld.Float64(time.Since(l.granted).Seconds()), {}}
		n := 4
		if kv, ok := t.lockName(l.lockName()); ok {
			attrs[n], n = kv, n+1
		}
		span.SetAttributes(attrs[:n]...)
	}
	return ctx, span
}

// endUnlock closes an Unlock's span.
func (t *telemetry) endUnlock(ctx context.Context, span trace.Span, l *Lease, err error) {
	if err != nil && !l.spare.Load() {
		k := kindOf(err)
		name := l.lockName()
		if span.IsRecording() {
			t.failed(span, err, k, name, true)
		}
		t.logFailure(ctx, k, "fairrw: unlock failed", append(t.logName(name), "mode", l.mode.String(), "policy", t.policy,
			"error.type", k.info().errorType, "error", t.message(err, name))...)
	}
	span.End()
}

// forceTrace follows one ForceUnlock.
type forceTrace struct {
	ctx  context.Context
	span trace.Span
	name string
	mode Mode
	// holders are the owners that held the lock in mode just before, when
	// someone observes (watched): who lost their hold.
	holders []string
}

// startForceUnlock opens the span of a ForceUnlock, an internal span, a
// child of ctx's.
func (t *telemetry) startForceUnlock(ctx context.Context, name string, mode Mode) forceTrace {
	ctx, span := t.tracer.Start(ctx, "fairrw.ForceUnlock", t.internalSpan...)
	if span.IsRecording() {
		span.SetAttributes(attrLockMode.String(mode.String()), attrPolicy.String(t.policy),
			attrDeployment.String(t.deployment), attrClientID.String(t.clientID))
		if kv, ok := t.lockName(name); ok {
			span.SetAttributes(kv)
		}
	}
	return forceTrace{ctx: ctx, span: span, name: name, mode: mode}
}

// watched reports whether a ForceUnlock's holders are worth a look
// before: its span records, or its log line would be written.
func (t *telemetry) watched(f *forceTrace) bool {
	return f.span.IsRecording() || t.log.Enabled(f.ctx, slog.LevelWarn)
}

// endForceUnlock closes a ForceUnlock's span, and counts and logs a lock
// it freed: whoever held it has lost it, and learns so at its next renewal.
func (t *telemetry) endForceUnlock(f *forceTrace, err error) {
	k := kindOf(err)
	if f.span.IsRecording() {
		if f.holders != nil {
			f.span.SetAttributes(attrForcedHolders.StringSlice(f.holders))
		}
		if err != nil {
			t.failed(f.span, err, k, f.name, k != kindNotHeld) // not held: an answer
		}
	}
	f.span.End()
	switch {
	case err == nil:
		t.inst.forceUnlocks.Add(context.Background(), 1, t.byMode[modeIndex(f.mode)].add...)
		if t.log.Enabled(f.ctx, slog.LevelWarn) {
			t.log.Log(f.ctx, slog.LevelWarn, "fairrw: lock force-unlocked", append(t.logName(f.name), "mode", f.mode.String(),
				"policy", t.policy, "by", t.clientID, "holders", strings.Join(f.holders, ","))...)
		}
	case k != kindNotHeld:
		t.logFailure(f.ctx, k, "fairrw: force unlock failed", append(t.logName(f.name), "mode", f.mode.String(),
			"policy", t.policy, "by", t.clientID, "error.type", k.info().errorType, "error", t.message(err, f.name))...)
	}
}

// shutdownSummary is what one Shutdown did.
type shutdownSummary struct {
	leases int // leases it ended
	owners int // lock owners whose holds it released or tried to
	left   int // owners not released: their holds expire with their lease
	start  time.Time
}

// startShutdown opens the span of a Shutdown, an internal span, a child
// of ctx's; its releases are children of it.
func (t *telemetry) startShutdown(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, "fairrw.Shutdown", t.internalSpan...)
	if span.IsRecording() {
		span.SetAttributes(attrDeployment.String(t.deployment), attrClientID.String(t.clientID))
	}
	return ctx, span
}

// endShutdown closes the Shutdown's span, and logs it in one line: a
// deploy is no incident, so its leases count as no losses, and only holds
// that Shutdown could not release (they expire with their lease) make it a
// warning.
func (t *telemetry) endShutdown(ctx context.Context, span trace.Span, s shutdownSummary, err error) {
	took := time.Since(s.start).Seconds()
	if span.IsRecording() {
		span.SetAttributes(attrShutLeases.Int(s.leases), attrShutReleased.Int(s.owners-s.left), attrShutLeft.Int(s.left))
		if err != nil {
			t.failed(span, err, kindOf(err), "", true)
		}
	}
	span.End()
	args := []any{"leases", s.leases, "owners_released", s.owners - s.left, "owners_left", s.left, "took", took}
	if err != nil {
		t.log.Log(ctx, slog.LevelWarn, "fairrw: shut down; holds not released expire with their lease",
			append(args, "error.type", kindOf(err).info().errorType, "error", t.anonymous(err))...)
		return
	}
	t.log.Log(ctx, slog.LevelInfo, "fairrw: shut down", args...)
}

// renewRound records one watchdog round: a root span of its own (the round
// serves many traces) and a Redis round trip, and the renewal counters. A
// failing renewal is logged once, when it starts failing, and once when it
// is confirmed again; one for want of Redis is logged as Redis's outage
// (redisFailed).
func (t *telemetry) renewRound(start time.Time, leases, batches, failedBatches, failedLeases int, err error) {
	t.inst.renewals.Add(context.Background(), int64(leases-failedLeases), t.byPolicy.add...)
	k := kindOf(err)
	if failedLeases > 0 {
		t.inst.renewalFailures.Add(context.Background(), int64(failedLeases), t.byRenewal[k].add...)
	}
	ctx, span := t.tracer.Start(context.Background(), "fairrw.renew", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
	if span.IsRecording() {
		span.SetAttributes(t.callAttrs("fairrw.renew")...)
		span.SetAttributes(attrPolicy.String(t.policy), attrRenewLeases.Int(leases-failedLeases),
			attrRenewBatches.Int(batches), attrRenewFailures.Int(failedBatches))
		if batches > 1 {
			span.SetAttributes(semconv.DBOperationBatchSize(batches))
		}
		if err != nil {
			t.failed(span, err, k, "", true)
		}
	}
	span.End()
	switch {
	case err != nil && k.info().outcome == outcomeUnavailable:
		t.redisFailed(ctx, t.addr, err)
	case err != nil:
		if t.health.renewalFailing(k) {
			t.log.Log(ctx, slog.LevelWarn, "fairrw: renewal failing", "addr", t.addr, "policy", t.policy,
				"failed_batches", failedBatches, "leases", failedLeases, "error.type", k.info().errorType, "error", t.anonymous(err))
		}
	default:
		t.redisAnswered()
		if rounds := t.health.renewalConfirmed(); rounds > 0 {
			t.log.Log(ctx, slog.LevelInfo, "fairrw: renewals confirmed again", "addr", t.addr, "policy", t.policy, "failed_rounds", rounds)
		}
	}
}

// redisCall follows one Redis call that bounded runs: when its caller's
// span records and the call names its script (a procedure), a client
// span of the round trip, child of the caller's.
type redisCall struct {
	ctx   context.Context
	span  trace.Span
	start time.Time
}

// A procedure is a call that names the script it runs, for its span's
// db.stored_procedure.name.
type procedure interface {
	procedure() string
}

// startCall starts following a call f under ctx.
func (t *telemetry) startCall(ctx context.Context, f any) redisCall {
	rc := redisCall{ctx: ctx, start: time.Now()}
	if !t.roundTrips {
		return rc
	}
	p, ok := f.(procedure)
	if !ok || !trace.SpanFromContext(ctx).IsRecording() {
		return rc
	}
	rc.ctx, rc.span = t.tracer.Start(ctx, "EVALSHA", t.redisSpan...)
	rc.span.SetAttributes(t.callAttrs(p.procedure())...)
	return rc
}

// endCall ends following a call: its span, and what its outcome tells of
// Redis's reachability. A call whose ctx ended counts as unanswered only
// after t.slowAnswer; closing, nothing counts.
func (t *telemetry) endCall(rc *redisCall, err error, closing bool) {
	if rc.span != nil {
		if err != nil {
			k := kindOf(err)
			if rerr, ok := redisErrCode(err); ok {
				rc.span.SetAttributes(semconv.DBResponseStatusCode(rerr))
			}
			t.failed(rc.span, err, k, "", true)
		}
		rc.span.End()
	}
	switch {
	case err == nil:
		t.redisAnswered()
	case closing:
	case cutShort(rc.ctx):
		if unanswered := time.Since(rc.start); unanswered >= t.slowAnswer {
			t.redisFailed(rc.ctx, t.addr, fmt.Errorf("%w: no answer in %.3fs (%w)", errRedisTimeout, unanswered.Seconds(), err))
		}
	case redisDown(err):
		t.redisFailed(rc.ctx, t.addr, err)
	default:
		t.redisAnswered() // Redis answered, with an error
	}
}

// redisErrCode returns the error code of an error Redis answered: its
// first word (ERR, NOSCRIPT, WRONGTYPE, ...).
func redisErrCode(err error) (string, bool) {
	rerr, ok := redisErrOf(err)
	if !ok {
		return "", false
	}
	code, _, _ := strings.Cut(rerr.Error(), " ")
	return code, true
}
