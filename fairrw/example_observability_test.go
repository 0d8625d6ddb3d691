package fairrw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

// traceIDs is a slog.Handler that adds the trace and span ids of the ctx a
// record was logged with: fairrw logs every call's records with its ctx.
type traceIDs struct{ slog.Handler }

func (h traceIDs) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// Example_observability sets a Client up as an SRE would run it: spans and
// metrics to the service's OpenTelemetry SDK, JSON logs joined to the
// traces, the deployment named, and lock names, which carry customer ids
// here, hashed. The ForceUnlock below is a span, a count in
// fairrw.force_unlocks (an alert in docs/operations.md) and one log line.
func Example_observability() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder() // a service would export (OTLP)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	metrics := sdkmetric.NewManualReader() // a service would export or serve them
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(metrics))
	defer mp.Shutdown(ctx)
	var logs bytes.Buffer
	logger := slog.New(traceIDs{slog.NewJSONHandler(&logs, nil)})

	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()),
		fairrw.WithTracerProvider(tp), fairrw.WithMeterProvider(mp), fairrw.WithLogger(logger),
		fairrw.WithDeployment("locks-eu"),
		fairrw.WithRedactedNames(fairrw.HashNames([]byte("a key of the service's"))))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	worker, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption())) // another process
	if err != nil {
		log.Fatal(err)
	}
	defer worker.Close()
	if _, err := worker.RWMutex("orders:customer-42").Lock(ctx); err != nil {
		log.Fatal(err)
	}

	// An operator frees the lock of a stuck worker, under a span of its own.
	ctx, operator := tp.Tracer("ops").Start(ctx, "unstick")
	if err := c.RWMutex("orders:customer-42").ForceUnlock(ctx, fairrw.Write); err != nil {
		log.Fatal(err)
	}
	operator.End()

	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		log.Fatal(err)
	}
	fmt.Println(line["level"], line["msg"], "lock:", line["lock"])
	fmt.Println("in the operator's trace:", line["trace_id"] == operator.SpanContext().TraceID().String())
	var rm metricdata.ResourceMetrics
	if err := metrics.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "fairrw.force_unlocks" {
				p := m.Data.(metricdata.Sum[int64]).DataPoints[0]
				deployment, _ := p.Attributes.Value("fairrw.deployment")
				fmt.Println(m.Name, p.Value, "deployment:", deployment.AsString())
			}
		}
	}
	// Output:
	// WARN fairrw: lock force-unlocked lock: h:02368e830c635805
	// in the operator's trace: true
	// fairrw.force_unlocks 1 deployment: locks-eu
}
