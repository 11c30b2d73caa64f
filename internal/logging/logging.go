// Package logging builds wapipe's structured logger: log/slog writing one JSON object a line in the
// shape Cloud Logging reads from Cloud Run's stdout (severity, message, trace and span ids), a
// logger carried in the context with the event's ids already attached, and the keyed hashes that keep
// ids and phone numbers out of the logs (CONTRACT.md, Logs).
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Cloud Logging's special JSON fields, read from structured logs on Cloud Run.
const (
	traceKey        = "logging.googleapis.com/trace"
	spanKey         = "logging.googleapis.com/spanId"
	traceSampledKey = "logging.googleapis.com/trace_sampled"
)

// Levels beyond slog's four, with Cloud Logging's names.
const (
	LevelCritical = slog.Level(12)
)

// Options configure New.
type Options struct {
	// Level is the lowest level written; zero means INFO.
	Level slog.Leveler
	// ProjectID makes trace ids full resource names (projects/P/traces/T), as Cloud Logging wants
	// them to link a log line to its trace.
	ProjectID string
	// Hasher renders ids and phone numbers (EventID, MessageID, Phone, and any wamid in a string)
	// as their keyed refs. When nil they render as Redacted: a logger that was not given the
	// key never writes an id.
	Hasher *Hasher
}

// New returns a JSON logger in Cloud Logging's format writing to w (os.Stdout when nil).
func New(w io.Writer, opts Options) *slog.Logger {
	if w == nil {
		w = os.Stdout
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		AddSource:   false,
		Level:       level,
		ReplaceAttr: replaceAttr,
	})
	return slog.New(&privacyHandler{next: &traceHandler{Handler: h, projectID: opts.ProjectID}, hasher: opts.Hasher})
}

// ParseLevel reads DEBUG, INFO, WARNING/WARN or ERROR (any case); anything else is INFO. It is for
// command-line flags; a service's LOG_LEVEL goes through Level, which refuses a wrong value.
func ParseLevel(s string) slog.Level {
	l, _ := Level(s)
	return l
}

// Level reads DEBUG, INFO, WARNING/WARN or ERROR (any case); empty is INFO. Anything else is an
// error (and INFO).
func Level(s string) (slog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "DEBUG":
		return slog.LevelDebug, nil
	case "", "INFO":
		return slog.LevelInfo, nil
	case "WARN", "WARNING":
		return slog.LevelWarn, nil
	case "ERROR":
		return slog.LevelError, nil
	default:
		return slog.LevelInfo, fmt.Errorf("must be DEBUG, INFO, WARNING or ERROR, got %q", s)
	}
}

func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		return slog.String("severity", severity(a.Value.Any().(slog.Level)))
	case slog.MessageKey:
		a.Key = "message"
	}
	return a
}

func severity(l slog.Level) string {
	switch {
	case l >= LevelCritical:
		return "CRITICAL"
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	default:
		return "DEBUG"
	}
}

// traceHandler adds the current span's trace and span ids to each record.
type traceHandler struct {
	slog.Handler
	projectID string
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tid := sc.TraceID().String()
		if h.projectID != "" {
			tid = "projects/" + h.projectID + "/traces/" + tid
		}
		r.AddAttrs(
			slog.String(traceKey, tid),
			slog.String(spanKey, sc.SpanID().String()),
			slog.Bool(traceSampledKey, sc.IsSampled()),
		)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithAttrs(attrs), projectID: h.projectID}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithGroup(name), projectID: h.projectID}
}

type loggerKey struct{}

// WithLogger returns a context carrying l.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// FromContext returns the context's logger, or slog.Default() when it carries none.
func FromContext(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// With returns a context whose logger has args attached, and that logger.
func With(ctx context.Context, args ...any) (context.Context, *slog.Logger) {
	l := FromContext(ctx).With(args...)
	return WithLogger(ctx, l), l
}

// MaskPhone shows only the last two digits of a phone number: "+*********67".
func MaskPhone(phone string) string {
	if len(phone) <= 2 {
		return strings.Repeat("*", len(phone))
	}
	return strings.Repeat("*", len(phone)-2) + phone[len(phone)-2:]
}
