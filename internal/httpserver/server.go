package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// DrainTimeout is how long in-flight requests get after the context ends. Cloud Run allows 10 s
// between SIGTERM and SIGKILL.
const DrainTimeout = 8 * time.Second

// Serve serves h on ln until ctx ends, then drains in-flight requests for up to DrainTimeout.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// A backstop only: handlers that read bodies bound their pace with BodyLimits, which
		// moves this deadline as the bytes arrive.
		ReadTimeout: 60 * time.Second,
		IdleTimeout: 120 * time.Second,
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("listening", "event", "server_started", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "event", "server_draining")
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped", "event", "server_stopped")
	return nil
}
