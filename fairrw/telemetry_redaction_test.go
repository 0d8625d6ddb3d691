package fairrw_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairrw/rwlock/fairrw"
)

// secret is the part of every lock name below that must not leave the
// process through telemetry when names are redacted: a customer's id.
const secret = "customer-4711"

// exerciseNames makes every event that puts a lock name into telemetry,
// on names that all contain secret: a grant and its Unlock, a wait that
// times out, a TryLock refused, an acquire refused for its policy, a
// lease that runs out and its late Unlock, a ForceUnlock, an Unlock that
// finds its hold gone, and a Shutdown.
// It returns the granted Lock's name.
func exerciseNames(t *testing.T, e *otelEnv, c *fairrw.Client, p fairrw.Policy) string {
	t.Helper()
	ctx := context.Background()
	granted := "orders:" + secret
	busy := "orders:" + secret + ":busy"
	mutex := "orders:" + secret + ":mutex"

	l, err := c.RWMutex(granted).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	e.holdElsewhere(t, p, busy)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if _, err := c.RWMutex(busy).Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock: %v, want DeadlineExceeded", err)
	}
	cancel()
	if _, err := c.RWMutex(busy).TryRLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("TryRLock of a held lock: %v, want ErrNotAcquired", err)
	}
	m, err := e.plainClient(t, p).Mutex(mutex).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unlock(context.Background()) })
	if _, err := c.RWMutex(mutex).Lock(ctx); !errors.Is(err, fairrw.ErrPolicyMismatch) {
		t.Fatalf("Lock of a name held as a Mutex: %v, want ErrPolicyMismatch", err)
	}
	short, err := c.RWMutex(granted).Lock(ctx, fairrw.WithLease(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	awaitDone(t, short)
	if err := short.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock of a lease run out: %v, want ErrNotHeld", err)
	}
	if err := c.RWMutex(busy).ForceUnlock(ctx, fairrw.Write); err != nil {
		t.Fatal(err)
	}
	gone, err := c.RWMutex(granted).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.FlushAll()
	if err := gone.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock of a hold gone from Redis: %v, want ErrNotHeld", err)
	}
	if _, err := c.RWMutex(granted).RLock(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	return granted
}

// leaks returns every place a span, a log record or a metric point
// carries s: span names, attributes, events' attributes and status
// descriptions; log messages and attributes; metric attributes.
func leaks(t *testing.T, e *otelEnv, s string) []string {
	t.Helper()
	var out []string
	check := func(where, text string) {
		if strings.Contains(text, s) {
			out = append(out, where+": "+text)
		}
	}
	kvs := func(where string, attrs []attribute.KeyValue) {
		for _, kv := range attrs {
			check(where+" "+string(kv.Key), kv.Value.String())
		}
	}
	for _, span := range e.spans.Ended() {
		where := "span " + span.Name()
		check(where+" name", span.Name())
		kvs(where, span.Attributes())
		for _, ev := range span.Events() {
			check(where+" event", ev.Name)
			kvs(where+" event "+ev.Name, ev.Attributes)
		}
		check(where+" status", span.Status().Description)
		for _, l := range span.Links() {
			kvs(where+" link", l.Attributes)
		}
	}
	for _, r := range e.logs.records() {
		check("log", r.Message)
		for k, v := range recordAttrs(r) {
			check("log "+r.Message+" "+k, v)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			default:
				t.Fatalf("metric %s of an unexpected kind %T", m.Name, m.Data)
			}
			for _, set := range sets {
				kvs("metric "+m.Name, set.ToSlice())
			}
		}
	}
	return out
}

// TestTelemetryRedactedNames: with WithRedactedNames, no lock name leaves
// through telemetry (spans, logs, metrics), and what shows instead is the
// name's hash (HashNames) or nothing (OmitNames).
func TestTelemetryRedactedNames(t *testing.T) {
	t.Parallel()
	key := []byte("telemetry key")
	for _, c := range []struct {
		name string
		show func(string) string
	}{{"hash", fairrw.HashNames(key)}, {"omit", fairrw.OmitNames}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range allPolicies {
				t.Run(p.String(), func(t *testing.T) {
					parallelTimed(t)
					e := newOtelEnv(t)
					client := e.client(t, p, fairrw.WithRedactedNames(c.show))
					granted := exerciseNames(t, e, client, p)
					for _, leak := range leaks(t, e, secret) {
						t.Errorf("the lock name leaks: %s", leak)
					}
					lock := e.ended("fairrw.Lock")[0]
					name, named := spanAttrs(lock)[keyLockName]
					logged := false
					for _, r := range e.logs.records() {
						if v, ok := recordAttrs(r)["lock"]; ok {
							logged = true
							if c.name == "hash" && !strings.HasPrefix(v, "h:") {
								t.Errorf("log %q: lock=%q, want a hash", r.Message, v)
							}
						}
					}
					switch c.name {
					case "hash":
						if want := c.show(granted); !named || name.AsString() != want || !strings.HasPrefix(want, "h:") {
							t.Errorf("fairrw.lock.name %v, want the name's hash %q", name, want)
						}
						if !logged {
							t.Error("no log record names the lock by its hash")
						}
					case "omit":
						if named {
							t.Errorf("fairrw.lock.name %v, want none", name)
						}
						if logged {
							t.Error("a log record has a lock attribute")
						}
					}
				})
			}
		})
	}
}

// TestTelemetryNamesShownByDefault: without WithRedactedNames the same
// events name the lock, so the redaction test above would see a leak.
func TestTelemetryNamesShownByDefault(t *testing.T) {
	parallelTimed(t)
	e := newOtelEnv(t)
	p := fairrw.WriterPreferring()
	exerciseNames(t, e, e.client(t, p), p)
	if len(leaks(t, e, secret)) == 0 {
		t.Fatal("no lock name in telemetry without redaction: the redaction test checks nothing")
	}
}

// TestTelemetryLogsJoinTraces: every log record of a call is logged with
// a ctx carrying its span, so a handler can add its trace and span ids: a
// failed acquire (the acquire's span), a failed Unlock (the Unlock's), a
// lost lease (its fairrw.lease.lost span), the outage a call noticed (in
// the call's trace).
func TestTelemetryLogsJoinTraces(t *testing.T) {
	parallelTimed(t)
	e := newOtelEnv(t)
	p := fairrw.Redisson()
	logs := &traceLogs{}
	c := e.client(t, p, fairrw.WithLogger(slog.New(logs)))
	ctx, request := e.appSpan("request")
	defer request.End()

	m, err := e.plainClient(t, p).Mutex("joined:mutex").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RWMutex("joined:mutex").Lock(ctx); !errors.Is(err, fairrw.ErrPolicyMismatch) {
		_ = m.Unlock(context.Background())
		t.Fatalf("Lock: %v, want ErrPolicyMismatch", err)
	}
	// Released before the server closes below: an Unlock after it would
	// go on in the background, to whatever server listens there next.
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A lease that runs out while the test looks, long enough that a
	// loaded machine does not answer its grant after it ran out: a grant
	// that came too late is given back, and a give-back that outlasts its
	// 20 ms grace is logged as going on in the background (three such
	// records, with two suites side by side, with a lease of 50 ms).
	l, err := c.RWMutex("joined:lease").Lock(ctx, fairrw.WithLease(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	awaitDone(t, l)
	eventually(t, "the loss reported", func() bool { return len(e.ended("fairrw.lease.lost")) == 1 && len(logs.records()) >= 2 })
	gone, err := c.RWMutex("joined:gone").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Del("joined:gone")
	if err := gone.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock of a hold gone from Redis: %v, want ErrNotHeld", err)
	}
	e.srv.Close()
	octx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := c.RWMutex("joined:outage").Lock(octx); !errors.Is(err, fairrw.ErrUnavailable) {
		t.Fatalf("Lock while Redis refuses: %v, want ErrUnavailable", err)
	}

	span := func(name string, i int) trace.SpanContext {
		spans := e.ended(name)
		if len(spans) <= i {
			t.Fatalf("no %s span %d (all: %v)", name, i, e.spanNames())
		}
		return spans[i].SpanContext()
	}
	want := map[string]trace.SpanContext{
		"fairrw: acquire failed": span("fairrw.Lock", 0),
		"fairrw: unlock failed":  span("fairrw.Unlock", 0),
	}
	lost := e.ended("fairrw.lease.lost") // the lease run out, and the hold found gone at Unlock
	if len(lost) != 2 {
		t.Fatalf("%d fairrw.lease.lost spans, want 2", len(lost))
	}
	seen := map[string]bool{}
	for _, r := range logs.records() {
		if r.level < slog.LevelInfo {
			continue
		}
		seen[r.msg] = true
		if r.msg == "fairrw: lease lost" {
			if !sameSpan(r.span, lost[0].SpanContext()) && !sameSpan(r.span, lost[1].SpanContext()) {
				t.Errorf("%q logged in span %v, want its fairrw.lease.lost span's", r.msg, r.span.SpanID())
			}
			continue
		}
		if r.msg == "fairrw: Redis unreachable" {
			// Noticed by a round trip of the last Lock: in its trace.
			if got, lock := r.span.TraceID(), span("fairrw.Lock", 3).TraceID(); got != lock {
				t.Errorf("%q logged in trace %v, want the Lock's %v", r.msg, got, lock)
			}
			continue
		}
		w, ok := want[r.msg]
		if !ok {
			t.Errorf("unexpected log %s %q %v", r.level, r.msg, r.attrs)
			continue
		}
		if !sameSpan(r.span, w) {
			t.Errorf("%q logged in span %v/%v, want %v/%v", r.msg, r.span.TraceID(), r.span.SpanID(), w.TraceID(), w.SpanID())
		}
	}
	for msg := range want {
		if !seen[msg] {
			t.Errorf("no %q logged", msg)
		}
	}
	if !seen["fairrw: Redis unreachable"] {
		t.Error("the outage was not logged")
	}
}
