package telemetry_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wapipe/wapipe/internal/telemetry"
)

// kept keeps its spans through the provider's shutdown (the stock exporter clears them).
type kept struct{ *tracetest.InMemoryExporter }

func (kept) Shutdown(context.Context) error { return nil }

// One test, not several in parallel: Setup installs the process-wide tracer provider.
func TestSetup(t *testing.T) {
	ctx := context.Background()
	exp := kept{tracetest.NewInMemoryExporter()}
	shutdown, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "test", SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := otel.Tracer("t").Start(ctx, "work")
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	span.End()
	if tp := carrier["traceparent"]; !strings.Contains(tp, span.SpanContext().TraceID().String()) {
		t.Errorf("traceparent %q does not carry the span's trace", tp)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if spans := exp.GetSpans(); len(spans) != 1 || spans[0].Name != "work" {
		t.Errorf("exported %d spans, want the one ended before shutdown flushed", len(spans))
	}

	// Dev without an exporter, and an exporter name it does not know: tracing still works and
	// start-up never fails.
	for _, o := range []telemetry.Options{{Dev: true}, {Exporter: "jaeger"}, {Exporter: telemetry.ExporterStdout}} {
		o.ServiceName, o.Logger = "test", slog.New(slog.DiscardHandler)
		shutdown, err := telemetry.Setup(ctx, o)
		if err != nil {
			t.Fatalf("Setup(%+v): %v", o, err)
		}
		_, s := otel.Tracer("t").Start(ctx, "x")
		if !s.SpanContext().IsValid() {
			t.Errorf("Setup(%+v): spans have no ids, so logs would carry no trace", o)
		}
		s.End()
		if err := shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
}
