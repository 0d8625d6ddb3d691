package fairrw

import (
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// orGlobalTracer returns tp, or the global TracerProvider.
func orGlobalTracer(tp trace.TracerProvider) trace.TracerProvider {
	if tp != nil {
		return tp
	}
	return otel.GetTracerProvider()
}

// orGlobalMeter returns mp, or the global MeterProvider.
func orGlobalMeter(mp metric.MeterProvider) metric.MeterProvider {
	if mp != nil {
		return mp
	}
	return otel.GetMeterProvider()
}

// orSilent returns l, or a logger that discards everything.
func orSilent(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
