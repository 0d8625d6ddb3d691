package connect

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// lines is a slog.Handler keeping every record's level, message and
// attributes.
type lines struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *lines) Enabled(context.Context, slog.Level) bool { return true }

func (h *lines) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *lines) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *lines) WithGroup(string) slog.Handler { return h }

// count returns how many records of msg were logged.
func (h *lines) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Message == msg {
			n++
		}
	}
	return n
}

// sumOf returns the points of the int64 sum name, by their error.type.
func sumOf(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := p.Attributes.Value("error.type")
				out[v.AsString()] += p.Value
			}
		}
	}
	return out
}

// TestTelemetryRedisFrozen: a Redis that stops answering (SIGSTOP: its
// connections stay open) is an outage, not contention: acquires end with
// ErrUnavailable and error.type=redis_timeout, a renewal round that got no
// answer names the address and the cause, fairrw.redis.unreachable is 1,
// and the whole outage is one Warn line, then one Info line once Redis
// answers again. Round trips to a single server carry server.address and
// server.port.
func TestTelemetryRedisFrozen(t *testing.T) {
	r := redistest.StartProcess(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	logs := &lines{}
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithTracerProvider(tp), fairrw.WithMeterProvider(mp),
		fairrw.WithLogger(slog.New(logs)), fairrw.WithLeaseTime(6*time.Second))
	ctx := itest.TestCtx(t)
	held := itest.MustLock(t, c.RWMutex("frozen:held"), fairrw.Write) // renewed every 2s

	r.Pause(t)
	paused := true
	defer func() {
		if paused {
			r.Resume(t)
		}
	}()
	failedRound := func() sdktrace.ReadOnlySpan {
		for _, s := range spans.Ended() {
			if s.Name() == "fairrw.renew" && s.Status().Description != "" {
				return s
			}
		}
		return nil
	}
	// Acquires until a renewal round has failed too (a round waits a renew
	// interval for its answer).
	locks := 0
	for failedRound() == nil || locks < 3 {
		if locks > 40 {
			t.Fatal("no renewal round failed while Redis was frozen")
		}
		lctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := c.RWMutex("frozen:lock").Lock(lctx)
		cancel()
		locks++
		if !errors.Is(err, fairrw.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock while Redis is frozen: %v, want ErrUnavailable and the ctx's error", err)
		}
	}
	if n := sumOf(t, reader, "fairrw.redis.unreachable")[""]; n != 1 {
		t.Errorf("fairrw.redis.unreachable %d while frozen, want 1", n)
	}
	r.Resume(t)
	paused = false

	for _, s := range spans.Ended() {
		if s.Name() != "fairrw.Lock" {
			continue
		}
		attrs := attribute.NewSet(s.Attributes()...)
		if v, _ := attrs.Value("fairrw.lock.name"); v.AsString() != "frozen:lock" {
			continue // the held lock's, granted before
		}
		if v, _ := attrs.Value("error.type"); v.AsString() != "redis_timeout" {
			t.Errorf("a Lock while frozen: error.type %q, want redis_timeout", v.AsString())
		}
		if v, _ := attrs.Value("fairrw.acquire.outcome"); v.AsString() != "unavailable" {
			t.Errorf("a Lock while frozen: outcome %q, want unavailable", v.AsString())
		}
	}
	round := failedRound()
	roundAttrs := attribute.NewSet(round.Attributes()...)
	if v, _ := roundAttrs.Value("error.type"); v.AsString() != "redis_timeout" {
		t.Errorf("the failed round's error.type %q, want redis_timeout", v.AsString())
	}
	msg := ""
	for _, ev := range round.Events() {
		for _, kv := range ev.Attributes {
			if kv.Key == "exception.message" {
				msg = kv.Value.AsString()
			}
		}
	}
	if !strings.Contains(msg, r.Addr) || !strings.Contains(msg, "no answer") {
		t.Errorf("the failed round says %q: want the address %s and the cause", msg, r.Addr)
	}
	if n := sumOf(t, reader, "fairrw.renewal.failures")["redis_timeout"]; n < 1 {
		t.Errorf("fairrw.renewal.failures{error.type=redis_timeout} %d, want the held lease's", n)
	}

	// Redis answers again: locks are granted, the outage ends.
	l := itest.MustLock(t, c.RWMutex("frozen:lock"), fairrw.Write)
	itest.MustUnlock(t, l)
	deadline := time.Now().Add(10 * time.Second)
	for logs.count("fairrw: Redis reachable again") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := logs.count("fairrw: Redis unreachable"); n != 1 {
		t.Errorf("%d lines say Redis is unreachable for %d failed Locks and the renewals, want 1", n, locks)
	}
	if n := logs.count("fairrw: Redis reachable again"); n != 1 {
		t.Errorf("%d lines say Redis is reachable again, want 1", n)
	}
	if n := logs.count("fairrw: renewal failing"); n != 0 {
		t.Errorf("the outage's renewal failures logged apart %d times, want none: the outage's line says it", n)
	}
	if n := sumOf(t, reader, "fairrw.redis.unreachable")[""]; n != 0 {
		t.Errorf("fairrw.redis.unreachable %d after, want 0", n)
	}

	// A round trip to this one server names it.
	var last sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "EVALSHA" {
			last = s
		}
	}
	attrs := attribute.NewSet(last.Attributes()...)
	host, _ := attrs.Value("server.address")
	port, _ := attrs.Value("server.port")
	if got := host.AsString() + ":" + strconv.FormatInt(port.AsInt64(), 10); got != r.Addr {
		t.Errorf("round trip to %s, want server.address and server.port %s", got, r.Addr)
	}
	if v, _ := attrs.Value("db.system.name"); v.AsString() != "redis" {
		t.Errorf("db.system.name %q, want redis", v.AsString())
	}
	_ = held.Unlock(ctx) // it may have been lost, if Redis stayed frozen past its deadline
}
