package fairrw_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// The telemetry contract, spelled out here rather than taken from the
// package so that a renamed attribute or metric fails these tests.
const (
	scopeName = "github.com/fairrw/rwlock/fairrw"

	keyDBSystem      = attribute.Key("db.system.name")
	keyDBOperation   = attribute.Key("db.operation.name")
	keyDBProcedure   = attribute.Key("db.stored_procedure.name")
	keyDBBatchSize   = attribute.Key("db.operation.batch.size")
	keyServerAddress = attribute.Key("server.address")
	keyServerPort    = attribute.Key("server.port")
	keyErrorType     = attribute.Key("error.type")
	keyDeployment    = attribute.Key("fairrw.deployment")
	keyWaited        = attribute.Key("fairrw.acquire.waited")
	keyClientID      = attribute.Key("fairrw.client.id")
	keyForced        = attribute.Key("fairrw.force_unlock.holders")
	keyShutLeases    = attribute.Key("fairrw.shutdown.leases")
	keyShutReleased  = attribute.Key("fairrw.shutdown.owners_released")
	keyShutLeft      = attribute.Key("fairrw.shutdown.owners_left")
	keyLockName      = attribute.Key("fairrw.lock.name")
	keyLockMode      = attribute.Key("fairrw.lock.mode")
	keyPolicy        = attribute.Key("fairrw.policy")
	keyOutcome       = attribute.Key("fairrw.acquire.outcome")
	keyAttempts      = attribute.Key("fairrw.acquire.attempts")
	keyWait          = attribute.Key("fairrw.acquire.wait")
	keyWokenBy       = attribute.Key("fairrw.acquire.woken_by")
	keyToken         = attribute.Key("fairrw.lease.token")
	keyHeld          = attribute.Key("fairrw.lease.held")
	keyLossCause     = attribute.Key("fairrw.lease.loss_cause")
	keyRenewLeases   = attribute.Key("fairrw.renew.leases")
	keyRenewBatches  = attribute.Key("fairrw.renew.batches")
	keyRenewFailures = attribute.Key("fairrw.renew.failed_batches")

	mAcquire  = "fairrw.acquire.duration"
	mHold     = "fairrw.hold.duration"
	mHolds    = "fairrw.holds.active"
	mWaiters  = "fairrw.waiters"
	mRenewals = "fairrw.renewals"
	mRenewErr = "fairrw.renewal.failures"
	mLost     = "fairrw.leases.lost"
	mPending  = "fairrw.background.pending"

	mPasses      = "fairrw.cohort.passes"
	mShared      = "fairrw.reads.shared"
	mForced      = "fairrw.force_unlocks"
	mDials       = "fairrw.redis.dials"
	mConns       = "fairrw.redis.connections"
	mReconnects  = "fairrw.redis.reconnects"
	mUnreachable = "fairrw.redis.unreachable"

	// deployment is what the test Clients name their Redis (WithDeployment).
	deployment = "locks-test"
)

var dbRedis = keyDBSystem.String("redis")

// instruments are every metric fairrw exports, with its unit and kind:
// collect fails on any other.
var instruments = map[string]struct {
	unit string
	kind string // "histogram", "counter" or "updown"
}{
	mAcquire:  {"s", "histogram"},
	mHold:     {"s", "histogram"},
	mHolds:    {"{hold}", "updown"},
	mWaiters:  {"{waiter}", "updown"},
	mRenewals: {"{lease}", "counter"},
	mRenewErr: {"{lease}", "counter"},
	mLost:     {"{lease}", "counter"},
	mPending:  {"{task}", "updown"},

	mPasses:      {"{pass}", "counter"},
	mShared:      {"{read}", "counter"},
	mForced:      {"{unlock}", "counter"},
	mDials:       {"{dial}", "counter"},
	mConns:       {"{connection}", "updown"},
	mReconnects:  {"{connection}", "counter"},
	mUnreachable: {"{client}", "updown"},
}

var deployed = keyDeployment.String(deployment)

var allPolicies = locktest.Policies()

// otelEnv is a miniredis with an SDK TracerProvider recording every span, a
// MeterProvider read on demand, and a logger keeping every record.
type otelEnv struct {
	srv    *miniredis.Miniredis
	opt    rueidis.ClientOption
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
	logs   *logRecorder
	app    trace.Tracer // the caller's spans around fairrw's
}

func newOtelEnv(t *testing.T) *otelEnv {
	t.Helper()
	srv, opt := redistest.Miniredis(t)
	e := &otelEnv{srv: srv, opt: opt, spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), logs: &logRecorder{lockEventsOnly: true}}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.spans))
	e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	e.app = e.tp.Tracer("app")
	// Registered before any Client: cleanups run last in first out, so the
	// Clients close (and report their last leases) before the shutdown.
	t.Cleanup(func() {
		ctx := context.Background()
		if err := e.tp.Shutdown(ctx); err != nil {
			t.Errorf("TracerProvider.Shutdown: %v", err)
		}
		if err := e.mp.Shutdown(ctx); err != nil {
			t.Errorf("MeterProvider.Shutdown: %v", err)
		}
	})
	return e
}

// slowAnswerUnderLoad is the telemetry tests' threshold for an unanswered
// call to count as Redis unreachable, in place of the library's 100 ms:
// their Redis is in-process, and a loaded machine (a CPU burner per core,
// a second copy of the suite) can keep it from answering for that long,
// which a Client rightly reports as an outage. None of these tests checks
// that threshold (integration/connect's frozen-Redis test does, on a real
// server); what they check is how waits, deploys, losses and refused
// connections are reported, and none waits this long.
const slowAnswerUnderLoad = 30 * time.Second

// client returns a Client instrumented with e's providers and logger.
func (e *otelEnv) client(t *testing.T, p fairrw.Policy, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	return newTestClient(t, append([]fairrw.Option{fairrw.WithClientOption(e.opt), fairrw.WithPolicy(p), fairrw.WithDeployment(deployment),
		fairrw.WithTracerProvider(e.tp), fairrw.WithMeterProvider(e.mp), fairrw.WithLogger(slog.New(e.logs)),
		hidden.WithSlowAnswer(slowAnswerUnderLoad).(fairrw.Option)}, opts...)...)
}

// plainClient returns a Client on the same Redis with the no-op providers,
// for the other side of a contention: its telemetry goes nowhere.
func (e *otelEnv) plainClient(t *testing.T, p fairrw.Policy) *fairrw.Client {
	t.Helper()
	return newTestClient(t, fairrw.WithClientOption(e.opt), fairrw.WithPolicy(p),
		fairrw.WithTracerProvider(tracenoop.NewTracerProvider()), fairrw.WithMeterProvider(metricnoop.NewMeterProvider()),
		hidden.WithSlowAnswer(slowAnswerUnderLoad).(fairrw.Option))
}

func newTestClient(t *testing.T, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	c, err := fairrw.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// appSpan starts a span of the caller's, as a request handler would.
func (e *otelEnv) appSpan(name string) (context.Context, trace.Span) {
	return e.app.Start(context.Background(), name)
}

// ended returns the ended spans named name, in the order they ended.
func (e *otelEnv) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range e.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// only returns the one ended span named name.
func (e *otelEnv) only(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := e.ended(name)
	if len(spans) != 1 {
		t.Fatalf("%d %q spans ended, want 1 (all: %v)", len(spans), name, e.spanNames())
	}
	return spans[0]
}

// spanNames lists the names of the ended spans, in the order they ended.
func (e *otelEnv) spanNames() []string {
	var names []string
	for _, s := range e.spans.Ended() {
		names = append(names, s.Name())
	}
	return names
}

// collect reads the metrics, and checks that every metric exported is one
// of fairrw's, with its unit, kind and cumulative temporality.
func (e *otelEnv) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scopeName {
			t.Errorf("metrics of scope %q, want only %q", sm.Scope.Name, scopeName)
		}
		for _, m := range sm.Metrics {
			want, ok := instruments[m.Name]
			if !ok {
				t.Errorf("unexpected metric %q", m.Name)
				continue
			}
			if m.Unit != want.unit {
				t.Errorf("%s: unit %q, want %q", m.Name, m.Unit, want.unit)
			}
			kind := "?"
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				kind = "histogram"
				if d.Temporality != metricdata.CumulativeTemporality {
					kind += " " + d.Temporality.String()
				}
			case metricdata.Sum[int64]:
				kind = "updown"
				if d.IsMonotonic {
					kind = "counter"
				}
				if d.Temporality != metricdata.CumulativeTemporality {
					kind += " " + d.Temporality.String()
				}
			}
			if kind != want.kind {
				t.Errorf("%s: a %s (%T), want a %s", m.Name, kind, m.Data, want.kind)
			}
		}
	}
	return rm
}

func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// attrs names an attribute set as the points maps below key it.
func attrs(kvs ...attribute.KeyValue) string {
	s := attribute.NewSet(kvs...)
	return s.Encoded(attribute.DefaultEncoder())
}

// histCounts returns the count of every point of the histogram name, by
// attribute set (empty if it has none).
func histCounts(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	m, ok := findMetric(rm, name)
	if !ok {
		return out
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, want a float64 histogram", name, m.Data)
	}
	for _, p := range h.DataPoints {
		if p.Count > 0 && p.Sum <= 0 {
			t.Errorf("%s{%s}: %d durations summing to %v s", name, attrs(p.Attributes.ToSlice()...), p.Count, p.Sum)
		}
		out[attrs(p.Attributes.ToSlice()...)] = p.Count
	}
	return out
}

// sums returns the value of every point of the counter or up-down counter
// name, by attribute set (empty if it has none).
func sums(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, ok := findMetric(rm, name)
	if !ok {
		return out
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, want an int64 sum", name, m.Data)
	}
	for _, p := range s.DataPoints {
		out[attrs(p.Attributes.ToSlice()...)] = p.Value
	}
	return out
}

func wantPoints[V comparable](t *testing.T, name string, got, want map[string]V) {
	t.Helper()
	if want == nil {
		want = map[string]V{}
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s points:\n got %v\nwant %v", name, got, want)
	}
}

// spanWant is what a span must be, exactly.
type spanWant struct {
	kind   trace.SpanKind
	parent trace.SpanContext   // the zero value: a root span
	links  []trace.SpanContext // the spans it links to, in order
	status codes.Code
	events []string
	// attrs are its attributes with their values; present are those it must
	// also have, whose values the test checks itself. It has no other.
	attrs   []attribute.KeyValue
	present []attribute.Key
}

func assertSpan(t *testing.T, s sdktrace.ReadOnlySpan, w spanWant) {
	t.Helper()
	if s.SpanKind() != w.kind {
		t.Errorf("%s: kind %v, want %v", s.Name(), s.SpanKind(), w.kind)
	}
	if !sameSpan(s.Parent(), w.parent) {
		t.Errorf("%s: parent %v, want %v", s.Name(), s.Parent().SpanID(), w.parent.SpanID())
	}
	if s.Parent().IsValid() && s.Parent().TraceID() != s.SpanContext().TraceID() {
		t.Errorf("%s: in trace %v, its parent in %v", s.Name(), s.SpanContext().TraceID(), s.Parent().TraceID())
	}
	links := s.Links()
	if len(links) != len(w.links) {
		t.Errorf("%s: %d links, want %d", s.Name(), len(links), len(w.links))
	} else {
		for i, l := range links {
			if !w.links[i].IsValid() || !sameSpan(l.SpanContext, w.links[i]) {
				t.Errorf("%s: link %d to %v, want %v", s.Name(), i, l.SpanContext.SpanID(), w.links[i].SpanID())
			}
		}
	}
	if st := s.Status(); st.Code != w.status {
		t.Errorf("%s: status %v %q, want %v", s.Name(), st.Code, st.Description, w.status)
	} else if st.Code == codes.Error && st.Description == "" {
		t.Errorf("%s: error status without a description", s.Name())
	}
	var events []string
	for _, ev := range s.Events() {
		events = append(events, ev.Name)
	}
	if !slices.Equal(events, w.events) {
		t.Errorf("%s: events %q, want %q", s.Name(), events, w.events)
	}
	got := spanAttrs(s)
	for _, kv := range w.attrs {
		if v, ok := got[kv.Key]; !ok {
			t.Errorf("%s: no %s, want %s", s.Name(), kv.Key, kv.Value.String())
		} else if v != kv.Value {
			t.Errorf("%s: %s=%s (%v), want %s (%v)", s.Name(), kv.Key, v.String(), v.Type(), kv.Value.String(), kv.Value.Type())
		}
		delete(got, kv.Key)
	}
	for _, k := range w.present {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: no %s", s.Name(), k)
		}
		delete(got, k)
	}
	for k, v := range got {
		t.Errorf("%s: unexpected attribute %s=%s", s.Name(), k, v.String())
	}
}

func sameSpan(a, b trace.SpanContext) bool {
	return a.TraceID() == b.TraceID() && a.SpanID() == b.SpanID()
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// spanFloat and spanInt return the value of a span's attribute, failing
// the test if it has none of that type.
func spanFloat(t *testing.T, s sdktrace.ReadOnlySpan, k attribute.Key) float64 {
	t.Helper()
	v, ok := spanAttrs(s)[k]
	if !ok || v.Type() != attribute.FLOAT64 {
		t.Fatalf("%s: %s=%v, want a float64", s.Name(), k, v.String())
	}
	return v.AsFloat64()
}

func spanInt(t *testing.T, s sdktrace.ReadOnlySpan, k attribute.Key) int64 {
	t.Helper()
	v, ok := spanAttrs(s)[k]
	if !ok || v.Type() != attribute.INT64 {
		t.Fatalf("%s: %s=%v, want an int64", s.Name(), k, v.String())
	}
	return v.AsInt64()
}

// exceptionType returns the exception.type of the span's "exception"
// event.
func exceptionType(s sdktrace.ReadOnlySpan) string {
	for _, ev := range s.Events() {
		for _, kv := range ev.Attributes {
			if ev.Name == "exception" && kv.Key == "exception.type" {
				return kv.Value.AsString()
			}
		}
	}
	return ""
}

// renewAttrs are the attributes every renewal round's span has: a Redis
// round trip's.
func renewAttrs(p fairrw.Policy) []attribute.KeyValue {
	return []attribute.KeyValue{dbRedis, deployed, keyDBOperation.String("EVALSHA"), keyDBProcedure.String("fairrw.renew"), keyPolicy.String(p.String())}
}

// logValue returns the value of a log record's attribute key.
func logValue(t *testing.T, r slog.Record, key string) slog.Value {
	t.Helper()
	var v slog.Value
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
		}
		return !found
	})
	if !found {
		t.Fatalf("log %q has no %s", r.Message, key)
	}
	return v
}

// exceptionMessage returns the exception.message of the span's "exception"
// event (see Span.RecordError).
func exceptionMessage(s sdktrace.ReadOnlySpan) string {
	for _, ev := range s.Events() {
		if ev.Name != "exception" {
			continue
		}
		for _, kv := range ev.Attributes {
			if kv.Key == "exception.message" {
				return kv.Value.AsString()
			}
		}
	}
	return ""
}

// logRecorder is a slog.Handler keeping every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
	// lockEventsOnly drops New's warning that its first connection took
	// longer than it waits (slowNew): a test of lock events on a loaded
	// machine would otherwise count it.
	lockEventsOnly bool
}

// slowNew reports whether msg is New's warning that it returned before its
// first connection was made. On a loaded machine (two copies of the suite
// side by side) a miniredis dial can take longer than New waits; the tests
// of that warning record it with a logRecorder that keeps every record.
func slowNew(msg string) bool {
	return msg == "fairrw: Redis unavailable at New; connecting in the background"
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	if h.lockEventsOnly && slowNew(r.Message) {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// fairrw logs with the record's own attributes only.
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { panic("logRecorder.WithAttrs") }
func (h *logRecorder) WithGroup(string) slog.Handler      { panic("logRecorder.WithGroup") }

func (h *logRecorder) records() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}

// atLeast returns the records of level or above.
func (h *logRecorder) atLeast(level slog.Level) []slog.Record {
	var out []slog.Record
	for _, r := range h.records() {
		if r.Level >= level {
			out = append(out, r)
		}
	}
	return out
}

// assertNone fails the test if anything was logged.
func (h *logRecorder) assertNone(t *testing.T) {
	t.Helper()
	for _, r := range h.records() {
		t.Errorf("unexpected log: %s %q %v", r.Level, r.Message, recordAttrs(r))
	}
}

// assertOne checks that exactly one record was logged, at level with msg,
// with exactly the attribute keys keys, and the values of want among them.
func (h *logRecorder) assertOne(t *testing.T, level slog.Level, msg string, keys []string, want map[string]string) {
	t.Helper()
	recs := h.records()
	if len(recs) != 1 {
		for _, r := range recs {
			t.Logf("log: %s %q %v", r.Level, r.Message, recordAttrs(r))
		}
		t.Fatalf("%d log records, want 1", len(recs))
	}
	r := recs[0]
	if r.Level != level || r.Message != msg {
		t.Errorf("log: %s %q, want %s %q", r.Level, r.Message, level, msg)
	}
	got := recordAttrs(r)
	if gotKeys := slices.Sorted(maps.Keys(got)); !slices.Equal(gotKeys, slices.Sorted(slices.Values(keys))) {
		t.Errorf("log attributes %q, want %q", gotKeys, slices.Sorted(slices.Values(keys)))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("log %s=%q, want %q", k, got[k], v)
		}
	}
}

func recordAttrs(r slog.Record) map[string]string {
	m := make(map[string]string)
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

var lossLogKeys = []string{"lock", "mode", "policy", "cause", "held", "error.type", "error"}

// eventually polls cond until it holds, failing the test after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitDone waits for the lease to end, at most 10s.
func awaitDone(t *testing.T, l *fairrw.Lease) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("lease on %q still held after 10s", hidden.Name(l))
	}
}

// acquireAttrs are the attributes every acquire span starts with: an
// internal span, with no database attributes (a lock wait is no Redis
// call).
func acquireAttrs(name string, mode fairrw.Mode, p fairrw.Policy) []attribute.KeyValue {
	return []attribute.KeyValue{keyLockName.String(name), keyLockMode.String(mode.String()), keyPolicy.String(p.String()), deployed}
}

func modePolicy(mode fairrw.Mode, p fairrw.Policy) string {
	return attrs(keyLockMode.String(mode.String()), keyPolicy.String(p.String()), deployed)
}

func policyOnly(p fairrw.Policy) string {
	return attrs(keyPolicy.String(p.String()), deployed)
}

// withOutcome is an acquire's metric point: its outcome, whether it waited
// and, when it failed, its error.type.
func withOutcome(mode fairrw.Mode, p fairrw.Policy, outcome string, waited bool, errorType ...string) string {
	kvs := []attribute.KeyValue{keyLockMode.String(mode.String()), keyPolicy.String(p.String()), deployed,
		keyOutcome.String(outcome), keyWaited.Bool(waited)}
	for _, e := range errorType {
		kvs = append(kvs, keyErrorType.String(e))
	}
	return attrs(kvs...)
}

func withCause(mode fairrw.Mode, p fairrw.Policy, cause string) string {
	return attrs(keyLockMode.String(mode.String()), keyPolicy.String(p.String()), deployed, keyLossCause.String(cause))
}

// assertRedisCall checks a span of a Redis round trip made for the span
// parent: a client span with the database attributes, running the script
// procedure.
func assertRedisCall(t *testing.T, s sdktrace.ReadOnlySpan, parent trace.SpanContext, procedure string) {
	t.Helper()
	if s.Name() != "EVALSHA" {
		t.Errorf("span %q, want EVALSHA", s.Name())
	}
	assertSpan(t, s, spanWant{
		kind:   trace.SpanKindClient,
		parent: parent,
		attrs:  []attribute.KeyValue{dbRedis, deployed, keyDBOperation.String("EVALSHA"), keyDBProcedure.String(procedure)},
	})
}

// calls returns the ended spans of Redis round trips made for the span
// parent, in the order they ended.
func (e *otelEnv) calls(parent trace.SpanContext) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range e.ended("EVALSHA") {
		if sameSpan(s.Parent(), parent) {
			out = append(out, s)
		}
	}
	return out
}

// TestTelemetryLockGranted: an uncontended Lock under the caller's span,
// then its Unlock under another: their two spans, and the metrics while
// held and after.
func TestTelemetryLockGranted(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "orders:42"

		ctx, request := e.appSpan("request")
		l, err := c.RWMutex(name).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lock := e.only(t, "fairrw.Lock")
		assertSpan(t, lock, spanWant{
			kind:   trace.SpanKindInternal,
			parent: request.SpanContext(),
			attrs: append(acquireAttrs(name, fairrw.Write, p),
				keyOutcome.String("granted"), keyAttempts.Int(1), keyToken.Int64(int64(l.Token())), keyWaited.Bool(false)),
			present: []attribute.Key{keyWait}, // and no woken_by: it did not wait
		})
		// Its one attempt is a Redis round trip of its own.
		attempts := e.calls(lock.SpanContext())
		if len(attempts) != 1 {
			t.Fatalf("%d round trips under the Lock, want 1", len(attempts))
		}
		assertRedisCall(t, attempts[0], lock.SpanContext(), "fairrw.acquire")
		if w := spanFloat(t, lock, keyWait); w <= 0 || w > lock.EndTime().Sub(lock.StartTime()).Seconds() {
			t.Errorf("acquire.wait %v s, the span lasted %v", w, lock.EndTime().Sub(lock.StartTime()))
		}

		held := e.collect(t)
		wantPoints(t, mHolds, sums(t, held, mHolds), map[string]int64{modePolicy(fairrw.Write, p): 1})
		wantPoints(t, mHold, histCounts(t, held, mHold), nil)

		uctx, release := e.app.Start(ctx, "release")
		if err := l.Unlock(uctx); err != nil {
			t.Fatal(err)
		}
		release.End()
		request.End()

		unlock := e.only(t, "fairrw.Unlock")
		assertSpan(t, unlock, spanWant{
			kind:    trace.SpanKindInternal,
			parent:  release.SpanContext(),
			links:   []trace.SpanContext{lock.SpanContext()},
			attrs:   acquireAttrs(name, fairrw.Write, p),
			present: []attribute.Key{keyHeld},
		})
		if h := spanFloat(t, unlock, keyHeld); h < 0 {
			t.Errorf("lease.held %v s", h)
		}
		releases := e.calls(unlock.SpanContext())
		if len(releases) != 1 {
			t.Fatalf("%d round trips under the Unlock, want 1", len(releases))
		}
		assertRedisCall(t, releases[0], unlock.SpanContext(), "fairrw.release")
		if got, want := e.spanNames(), []string{"EVALSHA", "fairrw.Lock", "EVALSHA", "fairrw.Unlock", "release", "request"}; !slices.Equal(got, want) {
			t.Errorf("spans %q, want %q", got, want)
		}

		rm := e.collect(t)
		wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{withOutcome(fairrw.Write, p, "granted", false): 1})
		wantPoints(t, mHold, histCounts(t, rm, mHold), map[string]uint64{modePolicy(fairrw.Write, p): 1})
		wantPoints(t, mHolds, sums(t, rm, mHolds), map[string]int64{modePolicy(fairrw.Write, p): 0})
		wantPoints(t, mWaiters, sums(t, rm, mWaiters), nil) // nothing ever waited
		wantPoints(t, mLost, sums(t, rm, mLost), nil)
		wantPoints(t, mRenewals, sums(t, rm, mRenewals), nil) // a 30s lease: no round yet
		e.logs.assertNone(t)
	})
}

// TestTelemetryLockAfterWait: an RLock that waits for a writer and is
// woken: its span names the wake-up, and fairrw.waiters counts it while it
// waits.
func TestTelemetryLockAfterWait(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "catalog"
		holder, err := e.plainClient(t, p).RWMutex(name).Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}

		ctx, request := e.appSpan("request")
		type result struct {
			l   *fairrw.Lease
			err error
		}
		got := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			l, err := c.RWMutex(name).RLock(ctx)
			got <- result{l, err}
		}()
		eventually(t, "waiting", func() bool {
			return sums(t, e.collect(t), mWaiters)[modePolicy(fairrw.Read, p)] == 1
		})
		if err := holder.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		request.End()

		span := e.only(t, "fairrw.RLock")
		want := spanWant{
			kind:    trace.SpanKindInternal,
			parent:  request.SpanContext(),
			attrs:   append(acquireAttrs(name, fairrw.Read, p), keyOutcome.String("granted"), keyToken.Int64(int64(r.l.Token())), keyWaited.Bool(true)),
			present: []attribute.Key{keyAttempts, keyWait},
		}
		// Usually "pubsub"; "" only if its attempt after subscribing
		// came after the release.
		if w := hidden.WokenBy(r.l); w != "" {
			want.attrs = append(want.attrs, keyWokenBy.String(w))
		}
		assertSpan(t, span, want)
		if n := spanInt(t, span, keyAttempts); n < 2 {
			t.Errorf("acquire.attempts %d, want at least 2", n)
		}
		// Every attempt is a round trip under the RLock.
		if n, calls := spanInt(t, span, keyAttempts), len(e.calls(span.SpanContext())); int64(calls) != n {
			t.Errorf("%d round trips under the RLock, %d attempts", calls, n)
		}

		rm := e.collect(t)
		// It waited: its grant counts apart from the uncontended ones.
		wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{withOutcome(fairrw.Read, p, "granted", true): 1})
		wantPoints(t, mWaiters, sums(t, rm, mWaiters), map[string]int64{modePolicy(fairrw.Read, p): 0})
		wantPoints(t, mHolds, sums(t, rm, mHolds), map[string]int64{modePolicy(fairrw.Read, p): 1})
		if err := r.l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.logs.assertNone(t)
	})
}

// TestTelemetryLockCancelled: a Lock whose ctx times out while another
// owner holds the lock.
func TestTelemetryLockCancelled(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "invoice:7"
		e.holdElsewhere(t, p, name)

		ctx, request := e.appSpan("request")
		// Long enough for the second attempt, made once subscribed: with
		// two suites side by side the subscription of a 500 ms Lock was
		// not made before its ctx ended (one attempt).
		const timeout = 2 * time.Second
		got := make(chan error, 1)
		// deadline is the ctx's: the Lock's wait runs at least from its
		// span's start to it.
		var deadline time.Time
		go func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			deadline, _ = ctx.Deadline()
			_, err := c.RWMutex(name).Lock(ctx)
			got <- err
		}()
		// While it waits (polling ends early if Lock returns first).
		seen := false
		eventually(t, "waiting", func() bool {
			seen = sums(t, e.collect(t), mWaiters)[modePolicy(fairrw.Write, p)] == 1
			return seen || len(got) > 0
		})
		if !seen {
			t.Fatalf("Lock returned before it was seen waiting: %v", <-got)
		}
		if err := <-got; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock: %v, want DeadlineExceeded", err)
		}
		request.End()

		span := e.only(t, "fairrw.Lock")
		assertSpan(t, span, spanWant{
			kind:    trace.SpanKindInternal,
			parent:  request.SpanContext(),
			status:  codes.Error,
			events:  []string{"exception"},
			attrs:   append(acquireAttrs(name, fairrw.Write, p), keyOutcome.String("cancelled"), keyWaited.Bool(true), keyErrorType.String("deadline_exceeded")),
			present: []attribute.Key{keyAttempts, keyWait}, // no woken_by, no token
		})
		// The status says what kind of failure, never which lock.
		if got := span.Status().Description; got != context.DeadlineExceeded.Error() {
			t.Errorf("status %q, want %q", got, context.DeadlineExceeded.Error())
		}
		if n := spanInt(t, span, keyAttempts); n < 2 {
			t.Errorf("acquire.attempts %d, want at least 2 (one before the wait, one after subscribing)", n)
		}
		// From the span's start, which the wait's start precedes: the test's
		// own clock reading before the call may precede both by
		// milliseconds on a loaded machine (497.4 ms of 500 in CI).
		if w, least := spanFloat(t, span, keyWait), deadline.Sub(span.StartTime()); w < least.Seconds() {
			t.Errorf("acquire.wait %v s, want at least the %v from the call's span start to the ctx's deadline", w, least)
		}
		if msg := exceptionMessage(span); !strings.Contains(msg, context.DeadlineExceeded.Error()) {
			t.Errorf("exception.message %q", msg)
		}

		rm := e.collect(t)
		wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{withOutcome(fairrw.Write, p, "cancelled", true, "deadline_exceeded"): 1})
		wantPoints(t, mUnreachable, sums(t, rm, mUnreachable), nil) // a wait timeout is no outage, nor the dial it cut short
		wantPoints(t, mWaiters, sums(t, rm, mWaiters), map[string]int64{modePolicy(fairrw.Write, p): 0})
		wantPoints(t, mHolds, sums(t, rm, mHolds), nil)
		// A cancelled wait is the caller's doing: nothing is logged, unless
		// Redis did not confirm the give-back of the wait's queue entry
		// within the clean-up grace (a loaded machine), which then goes on
		// in the background, logged, until it is done (and logged again).
		for _, r := range e.logs.records() {
			if !backgroundGiveBack(r) {
				t.Errorf("unexpected log: %s %q %v", r.Level, r.Message, recordAttrs(r))
			}
		}
		e.awaitBackgroundDone(t)
	})
}

// backgroundGiveBack reports whether r is one of the two records of a
// give-back left to the background (docs/operations.md: Warn, then Info
// once confirmed): what a cancelled wait logs when Redis did not confirm
// the give-back of its queue entry within the 20 ms clean-up grace, as on
// a loaded machine.
func backgroundGiveBack(r slog.Record) bool {
	background := r.Message == "fairrw: Redis did not confirm in time; going on in the background" || r.Message == "fairrw: confirmed in the background"
	return background && recordAttrs(r)["what"] == "give back"
}

// awaitBackgroundDone waits until no work of e's Clients is left to the
// background (fairrw.background.pending is 0 throughout).
func (e *otelEnv) awaitBackgroundDone(t *testing.T) {
	t.Helper()
	eventually(t, "the background give-back done", func() bool {
		n := int64(0)
		for _, v := range sums(t, e.collect(t), mPending) {
			n += v
		}
		return n == 0
	})
}

// TestTelemetryTryLockNotAcquired: TryLock and TryRLock on a lock another
// owner holds: not an error, not logged.
func TestTelemetryTryLockNotAcquired(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "report"
		e.holdElsewhere(t, p, name)

		ctx, request := e.appSpan("request")
		if _, err := c.RWMutex(name).TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Fatalf("TryLock: %v, want ErrNotAcquired", err)
		}
		if _, err := c.RWMutex(name).TryRLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Fatalf("TryRLock: %v, want ErrNotAcquired", err)
		}
		request.End()

		for op, mode := range map[string]fairrw.Mode{"fairrw.TryLock": fairrw.Write, "fairrw.TryRLock": fairrw.Read} {
			assertSpan(t, e.only(t, op), spanWant{
				kind:    trace.SpanKindInternal,
				parent:  request.SpanContext(),
				attrs:   append(acquireAttrs(name, mode, p), keyOutcome.String("not_acquired"), keyAttempts.Int(1), keyWaited.Bool(false)),
				present: []attribute.Key{keyWait},
			})
		}
		if got, want := e.spanNames(), []string{"EVALSHA", "fairrw.TryLock", "EVALSHA", "fairrw.TryRLock", "request"}; !slices.Equal(got, want) {
			t.Errorf("spans %q, want %q", got, want)
		}

		rm := e.collect(t)
		wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{
			withOutcome(fairrw.Write, p, "not_acquired", false): 1,
			withOutcome(fairrw.Read, p, "not_acquired", false):  1,
		})
		wantPoints(t, mWaiters, sums(t, rm, mWaiters), nil)
		wantPoints(t, mHolds, sums(t, rm, mHolds), nil)
		e.logs.assertNone(t)
	})
}

// TestTelemetryAcquireError: an acquire that fails (an invalid name) is an
// error span, and logged at Warn.
func TestTelemetryAcquireError(t *testing.T) {
	parallelTimed(t)
	e := newOtelEnv(t)
	p := fairrw.WriterPreferring()
	c := e.client(t, p)
	if _, err := c.RWMutex("").RLock(context.Background()); !errors.Is(err, fairrw.ErrInvalidName) {
		t.Fatalf("RLock: %v, want ErrInvalidName", err)
	}
	span := e.only(t, "fairrw.RLock")
	assertSpan(t, span, spanWant{
		kind:    trace.SpanKindInternal, // a root: the caller had no span
		status:  codes.Error,
		events:  []string{"exception"},
		attrs:   append(acquireAttrs("", fairrw.Read, p), keyOutcome.String("error"), keyAttempts.Int(0), keyWaited.Bool(false), keyErrorType.String("invalid_name")),
		present: []attribute.Key{keyWait},
	})
	if got := exceptionType(span); got != "fairrw.ErrInvalidName" {
		t.Errorf("exception.type %q, want the sentinel's, fairrw.ErrInvalidName", got)
	}
	rm := e.collect(t)
	wantPoints(t, mAcquire, histCounts(t, rm, mAcquire), map[string]uint64{withOutcome(fairrw.Read, p, "error", false, "invalid_name"): 1})
	e.logs.assertOne(t, slog.LevelWarn, "fairrw: acquire failed", []string{"lock", "mode", "policy", "error.type", "error"},
		map[string]string{"lock": "", "mode": "read", "policy": p.String(), "error.type": "invalid_name"})
}

// assertLoss checks the loss of the write lease l (taken under the span
// acquire) for cause: its span, its metrics and its log record.
func (e *otelEnv) assertLoss(t *testing.T, l *fairrw.Lease, acquire trace.SpanContext, p fairrw.Policy, cause, errorType string, level slog.Level) {
	t.Helper()
	if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
		t.Errorf("Err: %v, want ErrLeaseLost", l.Err())
	}
	// Done closes before the loss is reported.
	eventually(t, "reported", func() bool {
		return len(e.ended("fairrw.lease.lost")) > 0 && len(e.logs.records()) > 0 &&
			sums(t, e.collect(t), mLost)[withCause(fairrw.Write, p, cause)] > 0
	})
	lost := e.only(t, "fairrw.lease.lost")
	assertSpan(t, lost, spanWant{
		kind:   trace.SpanKindInternal, // a root, linked to the acquire
		links:  []trace.SpanContext{acquire},
		status: codes.Error,
		attrs: append(acquireAttrs(hidden.Name(l), fairrw.Write, p),
			keyLossCause.String(cause), keyToken.Int64(int64(l.Token())), keyErrorType.String(errorType)),
		present: []attribute.Key{keyHeld},
	})
	if h := spanFloat(t, lost, keyHeld); h <= 0 {
		t.Errorf("lease.held %v s", h)
	}
	// The status names the cause, not the lock (the lease's Err does).
	if got, want := lost.Status().Description, "fairrw: lease lost: "+cause; got != want {
		t.Errorf("status %q, want %q", got, want)
	}

	rm := e.collect(t)
	wantPoints(t, mLost, sums(t, rm, mLost), map[string]int64{withCause(fairrw.Write, p, cause): 1})
	wantPoints(t, mHolds, sums(t, rm, mHolds), map[string]int64{modePolicy(fairrw.Write, p): 0})
	wantPoints(t, mHold, histCounts(t, rm, mHold), map[string]uint64{modePolicy(fairrw.Write, p): 1})
	e.logs.assertOne(t, level, "fairrw: lease lost", lossLogKeys, map[string]string{
		"lock": hidden.Name(l), "mode": "write", "policy": p.String(), "cause": cause, "error.type": errorType, "error": l.Err().Error(),
	})
	// held is in seconds, as the span's and the histogram's.
	if v := logValue(t, e.logs.records()[0], "held"); v.Kind() != slog.KindFloat64 || v.Float64() <= 0 || v.Float64() > spanFloat(t, lost, keyHeld) {
		t.Errorf("log held=%v (%v), want seconds, at most the span's %v", v, v.Kind(), spanFloat(t, lost, keyHeld))
	}
}

// TestTelemetryLeaseExpired: a WithLease lease never unlocked runs out.
func TestTelemetryLeaseExpired(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		ctx, request := e.appSpan("request")
		l, err := c.RWMutex("batch").Lock(ctx, fairrw.WithLease(time.Second)) // a grant answered after a shorter lease ran out is given back (a loaded machine)
		if err != nil {
			t.Fatal(err)
		}
		request.End()
		awaitDone(t, l)
		e.assertLoss(t, l, e.only(t, "fairrw.Lock").SpanContext(), p, "expired", "lease_lost", slog.LevelError)
		wantPoints(t, mRenewals, sums(t, e.collect(t), mRenewals), nil) // never renewed
	})
}

// renewedLease is the lease of the tests that watch renewal rounds: a round
// every third of it, each given as long to answer, which under load must
// not fail for want of time (a third of 300ms failed: "Redis did not answer
// in time", on miniredis under -race beside other packages' tests).
const renewedLease = 1500 * time.Millisecond

// TestTelemetryLeaseGone: Redis loses a watchdog lease's hold behind its
// back; the next renewal round finds it gone.
func TestTelemetryLeaseGone(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		// A round every 500ms, each with as long to answer: with 100ms, a
		// loaded machine's miniredis under -race missed it, and the lease
		// ran out (lost as expired, not found gone).
		c := e.client(t, p, fairrw.WithLeaseTime(renewedLease))
		l, err := c.RWMutex("ledger").Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		e.srv.FlushAll()
		awaitDone(t, l)
		e.assertLoss(t, l, e.only(t, "fairrw.Lock").SpanContext(), p, "gone", "lease_lost", slog.LevelError)

		// The round that found it gone ends after the loss; no round
		// follows it, since the Client holds nothing any more.
		lost := e.only(t, "fairrw.lease.lost")
		var last sdktrace.ReadOnlySpan
		eventually(t, "the last round ended", func() bool {
			rounds := e.ended("fairrw.renew")
			if len(rounds) == 0 {
				return false
			}
			last = rounds[len(rounds)-1]
			return !last.EndTime().Before(lost.EndTime())
		})
		assertSpan(t, last, spanWant{
			kind:  trace.SpanKindClient, // one round trip
			attrs: append(renewAttrs(p), keyRenewLeases.Int(0), keyRenewBatches.Int(1), keyRenewFailures.Int(0)),
		})
		// fairrw.renewals counts the leases every round renewed.
		renewed := int64(0)
		for _, s := range e.ended("fairrw.renew") {
			renewed += spanInt(t, s, keyRenewLeases)
		}
		rm := e.collect(t)
		if got := sums(t, rm, mRenewals)[policyOnly(p)]; got != renewed {
			t.Errorf("%s %d, the rounds' spans renewed %d", mRenewals, got, renewed)
		}
		wantPoints(t, mRenewErr, sums(t, rm, mRenewErr), nil)
	})
}

// TestTelemetryLeaseClosed: Close ends a lease still held; that is logged
// at Info, as the caller's doing.
func TestTelemetryLeaseClosed(t *testing.T) {
	parallelTimed(t)
	e := newOtelEnv(t)
	p := fairrw.Redisson()
	c := e.client(t, p)
	l, err := c.RWMutex("session").Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), fairrw.ErrClosed) {
		t.Errorf("Err: %v, want ErrClosed", l.Err())
	}
	e.assertLoss(t, l, e.only(t, "fairrw.Lock").SpanContext(), p, "closed", "closed", slog.LevelInfo)
}

// TestTelemetryRenewal: a watchdog round is a root span of its own, and
// counted.
func TestTelemetryRenewal(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p, fairrw.WithLeaseTime(renewedLease))
		ctx, request := e.appSpan("request")
		l, err := c.RWMutex("job").Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		request.End()
		eventually(t, "renewed", func() bool { return len(e.ended("fairrw.renew")) > 0 })
		rm := e.collect(t) // while held, before any Unlock can race a round
		lock := e.only(t, "fairrw.Lock")
		for _, round := range e.ended("fairrw.renew") {
			assertSpan(t, round, spanWant{
				kind:  trace.SpanKindClient, // one round trip
				attrs: append(renewAttrs(p), keyRenewLeases.Int(1), keyRenewBatches.Int(1), keyRenewFailures.Int(0)),
			})
			if round.SpanContext().TraceID() == lock.SpanContext().TraceID() {
				t.Errorf("the round is in the acquire's trace")
			}
		}
		if n := sums(t, rm, mRenewals)[policyOnly(p)]; n < 1 {
			t.Errorf("%s %d, want at least 1", mRenewals, n)
		}
		wantPoints(t, mRenewErr, sums(t, rm, mRenewErr), nil)
		wantPoints(t, mLost, sums(t, rm, mLost), nil)
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestTelemetryDefaultProviders: without WithTracerProvider and
// WithMeterProvider a Client uses the global providers.
func TestTelemetryDefaultProviders(t *testing.T) {
	// Not parallel: it sets the global providers.
	e := newOtelEnv(t)
	prevTP, prevMP := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(e.tp)
	otel.SetMeterProvider(e.mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
	})
	c := newTestClient(t, fairrw.WithClientOption(e.opt)) // and no WithDeployment: the address names it

	l, err := c.RWMutex("defaults").Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := e.spanNames(), []string{"EVALSHA", "fairrw.Lock", "EVALSHA", "fairrw.Unlock"}; !slices.Equal(got, want) {
		t.Errorf("spans %q, want %q", got, want)
	}
	p := fairrw.WriterPreferring() // the default policy
	addr := keyDeployment.String(e.srv.Addr())
	assertSpan(t, e.only(t, "fairrw.Lock"), spanWant{
		kind: trace.SpanKindInternal,
		attrs: []attribute.KeyValue{keyLockName.String("defaults"), keyLockMode.String("write"), keyPolicy.String(p.String()), addr,
			keyOutcome.String("granted"), keyAttempts.Int(1), keyToken.Int64(int64(l.Token())), keyWaited.Bool(false)},
		present: []attribute.Key{keyWait},
	})
	wantPoints(t, mAcquire, histCounts(t, e.collect(t), mAcquire), map[string]uint64{
		attrs(keyLockMode.String("write"), keyPolicy.String(p.String()), addr, keyOutcome.String("granted"), keyWaited.Bool(false)): 1,
	})
}

func TestTelemetryNilOptions(t *testing.T) {
	addr := fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:1"}})
	for _, opt := range []fairrw.Option{fairrw.WithTracerProvider(nil), fairrw.WithMeterProvider(nil), fairrw.WithLogger(nil),
		fairrw.WithDeployment(""), fairrw.WithRedactedNames(nil), fairrw.WithRedisWrapper(nil)} {
		c, err := fairrw.New(addr, opt)
		if !errors.Is(err, fairrw.ErrInvalidOption) {
			if c != nil {
				_ = c.Close()
			}
			t.Errorf("New: %v, want ErrInvalidOption", err)
		}
	}
}

// perPolicy runs f for every policy as parallel subtests, each with an
// environment of its own.
func perPolicy(t *testing.T, f func(t *testing.T, e *otelEnv, p fairrw.Policy)) {
	t.Parallel()
	for _, p := range allPolicies {
		t.Run(p.String(), func(t *testing.T) {
			parallelTimed(t)
			f(t, newOtelEnv(t), p)
		})
	}
}

// holdElsewhere has an owner of another, untraced Client take the write on
// name until the test ends.
func (e *otelEnv) holdElsewhere(t *testing.T, p fairrw.Policy, name string) {
	t.Helper()
	holder, err := e.plainClient(t, p).RWMutex(name).Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Unlock(context.Background()) })
}

// TestTelemetryFurtherHolds: further holds taken from a Lease have spans of
// their own (fairrw.Lease.Lock, fairrw.Lease.RLock) under the caller's span,
// with the owner's token, and count among the holds while held; an upgrade
// refused is an ended span too.
func TestTelemetryFurtherHolds(t *testing.T) {
	perPolicy(t, func(t *testing.T, e *otelEnv, p fairrw.Policy) {
		c := e.client(t, p)
		const name = "orders:43"
		ctx, request := e.appSpan("request")
		w, err := c.RWMutex(name).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w2, err := w.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Lock(ctx); !errors.Is(err, hidden.ErrUpgrade) {
			t.Fatalf("Lease.Lock on a read: %v, want ErrUpgrade", err)
		}
		for op, mode := range map[string]fairrw.Mode{"fairrw.Lease.Lock": fairrw.Write, "fairrw.Lease.RLock": fairrw.Read} {
			spans := e.ended(op)
			if len(spans) == 0 {
				t.Fatalf("no %s span (all: %v)", op, e.spanNames())
			}
			s := spans[0]
			if !sameSpan(s.Parent(), request.SpanContext()) {
				t.Errorf("%s: parent %v, want the request's", op, s.Parent().SpanID())
			}
			got := spanAttrs(s)
			for _, kv := range append(acquireAttrs(name, mode, p), keyOutcome.String("granted"), keyToken.Int64(int64(w.Token()))) {
				if v, ok := got[kv.Key]; !ok || v != kv.Value {
					t.Errorf("%s: %s=%s, want %s", op, kv.Key, v.String(), kv.Value.String())
				}
			}
		}
		if n := len(e.ended("fairrw.Lease.Lock")); n != 2 {
			t.Errorf("%d fairrw.Lease.Lock spans ended, want 2 (a grant and a refused upgrade)", n)
		}
		held := e.collect(t)
		wantPoints(t, mHolds, sums(t, held, mHolds), map[string]int64{modePolicy(fairrw.Write, p): 2, modePolicy(fairrw.Read, p): 1})
		for _, l := range []*fairrw.Lease{r, w2, w} {
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		request.End()
		wantPoints(t, mHolds, sums(t, e.collect(t), mHolds), map[string]int64{modePolicy(fairrw.Write, p): 0, modePolicy(fairrw.Read, p): 0})
	})
}

// TestTelemetryRedisSpansOff: WithRedisSpans(false) leaves fairrw's own
// spans and drops the round trips' (a rueidis tracing wrapper makes its
// own); a renewal round, one round trip, keeps its span.
func TestTelemetryRedisSpansOff(t *testing.T) {
	parallelTimed(t)
	e := newOtelEnv(t)
	// A lease of 3 s is renewed after 1 s: a loaded machine that stalls
	// the watchdog for 300 ms does not lose it (a 300 ms lease was lost so).
	c := e.client(t, fairrw.WriterPreferring(), fairrw.WithRedisSpans(false), fairrw.WithLeaseTime(3*time.Second))
	ctx, request := e.appSpan("request")
	l, err := c.RWMutex("quiet").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "renewed", func() bool { return len(e.ended("fairrw.renew")) > 0 })
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	request.End()
	for _, name := range e.spanNames() {
		if name == "EVALSHA" {
			t.Fatalf("spans %q: a round trip's span with WithRedisSpans(false)", e.spanNames())
		}
	}
	if len(e.ended("fairrw.Lock")) != 1 || len(e.ended("fairrw.Unlock")) != 1 {
		t.Errorf("spans %q, want the Lock's and the Unlock's", e.spanNames())
	}
}
