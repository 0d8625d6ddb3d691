package bench

import (
	"context"
	"fmt"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/fairrw/rwlock/fairrw"
)

// BenchmarkTelemetry measures what fairrw's OpenTelemetry instrumentation
// costs: lock+unlock cycles on uncontended names, on the default transport
// (tracking, no flush delay) and policy (Redisson), with
//
//   - provider=noop: the no-op TracerProvider and MeterProvider, what a
//     service without OpenTelemetry pays;
//   - provider=sdk: the SDK sampling every span (AlwaysSample) into a batch
//     span processor whose exporter drops them, and recording every metric
//     into a MeterProvider with a ManualReader that is never read;
//   - provider=sdk-1pct: the same SDK sampling 1% of the traces
//     (ParentBased(TraceIDRatioBased(0.01)), a common production setting),
//     metrics all recorded;
//   - provider=sdk-no-redis-spans: the SDK sampling every span, with
//     fairrw.WithRedisSpans(false): the acquire's and the Unlock's spans,
//     not their round trips'.
//
// goroutines=1 runs one cycle at a time, so ns/op is the latency of a
// cycle and allocs/op its allocations; goroutines=64 runs 64 goroutines on
// distinct names through one Client, as BenchmarkUncontended does.
// Compare the providers with benchstat -col /provider.
func BenchmarkTelemetry(b *testing.B) {
	e := newEnv(b)
	providers := []struct {
		name string
		opts func(b *testing.B) []fairrw.Option
	}{
		{"noop", noopTelemetry},
		{"sdk-1pct", sampledTelemetry(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01)))},
		{"sdk", sampledTelemetry(sdktrace.AlwaysSample())},
		{"sdk-no-redis-spans", func(b *testing.B) []fairrw.Option {
			return append(sdkTelemetry(b, sdktrace.AlwaysSample()), fairrw.WithRedisSpans(false))
		}},
	}
	for _, pr := range providers {
		b.Run("provider="+pr.name, func(b *testing.B) {
			b.Run("goroutines=1", func(b *testing.B) {
				benchTelemetrySerial(b, e, pr.opts(b))
			})
			b.Run(fmt.Sprintf("goroutines=%d", uncontendedGoroutines), func(b *testing.B) {
				benchTelemetryParallel(b, e, pr.opts(b))
			})
		})
	}
}

func noopTelemetry(*testing.B) []fairrw.Option {
	return []fairrw.Option{
		fairrw.WithTracerProvider(tracenoop.NewTracerProvider()),
		fairrw.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
}

// sampledTelemetry returns SDK providers that sample spans with sampler,
// record every metric and keep nothing, shut down by b's cleanup (after
// the Client closes: cleanups run last in first out).
func sampledTelemetry(sampler sdktrace.Sampler) func(b *testing.B) []fairrw.Option {
	return func(b *testing.B) []fairrw.Option { return sdkTelemetry(b, sampler) }
}

func sdkTelemetry(b *testing.B, sampler sdktrace.Sampler) []fairrw.Option {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sampler),
		sdktrace.WithBatcher(discardExporter{}),
	)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		ctx := context.Background()
		if err := tp.Shutdown(ctx); err != nil {
			b.Errorf("TracerProvider.Shutdown: %v", err)
		}
		if err := mp.Shutdown(ctx); err != nil {
			b.Errorf("MeterProvider.Shutdown: %v", err)
		}
	})
	return []fairrw.Option{fairrw.WithTracerProvider(tp), fairrw.WithMeterProvider(mp)}
}

// discardExporter drops every span it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

func benchTelemetrySerial(b *testing.B, e *env, opts []fairrw.Option) {
	e.checkLeftovers(b)
	c := newClient(b, e.option(0, false), opts...)
	m := c.RWMutex(e.name("telemetry", "serial"))
	warmUp(b, m)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := m.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTelemetryParallel(b *testing.B, e *env, opts []fairrw.Option) {
	e.checkLeftovers(b)
	c := newClient(b, e.option(0, false), opts...)
	ctx := context.Background()
	mus := make([]*fairrw.RWMutex, uncontendedGoroutines)
	cycle := func(g int) error {
		l, err := mus[g].Lock(ctx)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	for g := range mus {
		mus[g] = c.RWMutex(e.name("telemetry", "parallel", g))
		if err := cycle(g); err != nil {
			b.Fatal(err)
		}
	}
	runCycles(b, e, cycle)
}
