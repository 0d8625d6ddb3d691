package fairrw

import (
	"log/slog"
	"reflect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
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

// spanSource is where a Client's spans go, as far as it needs to know to
// skip them when nobody could see them: a span started on a no-op
// TracerProvider (noop's, or the global one while no SDK has been
// installed) records nothing and is exported nowhere, and yet costs each
// Lock and Unlock a few allocations and a context (measured on the
// uncontended cycle: issue 35).
type spanSource struct {
	// global: the Client traces to the global TracerProvider, which an
	// SDK may be installed in at any time (otel.SetTracerProvider): it is
	// asked on every call.
	global bool
	// none: the Client's own TracerProvider is a no-op.
	none bool
}

// spanSourceOf returns the source of the spans of a tracer made by tp.
func spanSourceOf(tp trace.TracerProvider) spanSource {
	if globalDefault(tp) {
		// Its tracers delegate to the SDK installed later, if one is.
		return spanSource{global: true}
	}
	return spanSource{none: noopTracing(tp)}
}

// on reports whether a span started now could be recorded: false only when
// the provider is known to be a no-op.
func (s spanSource) on() bool {
	if s.global {
		return !noopTracing(otel.GetTracerProvider())
	}
	return !s.none
}

// globalPkg is the package of the global TracerProvider before an SDK is
// installed (otel.GetTracerProvider returns the SDK's once one is).
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// noopTracing reports whether tp is a no-op TracerProvider: noop's, the
// trace package's deprecated one, or the global default with no SDK
// installed. An unknown provider is taken to record. (The global default's
// spans can also be captured by eBPF auto-instrumentation,
// go.opentelemetry.io/auto: a Client that should be seen by it takes
// WithTracerProvider.)
func noopTracing(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return true
	}
	t := reflect.TypeOf(tp)
	if t == nil {
		return true
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	return pkg == globalPkg || (pkg == "go.opentelemetry.io/otel/trace" && t.Name() == "noopTracerProvider")
}

// globalDefault reports whether tp is the global TracerProvider with no
// SDK installed (yet).
func globalDefault(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().PkgPath() == globalPkg
}
